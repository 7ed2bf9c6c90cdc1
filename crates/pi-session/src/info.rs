//! Session summaries for listings (upstream's `SessionInfo`), made from the cached
//! [`super::summary`] of each file.

use std::path::PathBuf;

use serde::Serialize;

use super::summary::{Cache, Summary};
use pi_base::clock;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    /// The shortest prefix of the id that names this session alone (see
    /// [`super::find::ShortIds`]); set by listings, which know every session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_id: Option<String>,
    /// Whether this is the current session of the directory listed (the one a command
    /// given no session would use); set by listings, absent when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub current: bool,
    pub cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    pub created: String,
    pub modified: String,
    pub message_count: u64,
    pub first_message: String,
    /// The file's size.
    pub bytes: u64,
    /// The cost of every assistant message (all branches), in the units of `usage.cost`.
    pub cost: f64,
    #[serde(skip)]
    pub modified_ms: i64,
}

impl SessionInfo {
    pub fn of(s: &Summary) -> SessionInfo {
        let created_ms = s.created_ms();
        let modified_ms = s.modified_ms();
        SessionInfo {
            path: s.path.clone(),
            id: s.header.id.clone(),
            short_id: None,
            current: false,
            cwd: s.header.cwd.clone(),
            name: s.name().map(str::to_owned),
            parent_session: s.header.parent_session.clone(),
            created: created_ms.map_or_else(
                || s.header.timestamp.clone().unwrap_or_default(),
                clock::format_iso,
            ),
            modified: clock::format_iso(modified_ms),
            message_count: s.counts.messages,
            first_message: s
                .counts
                .first_message
                .clone()
                .unwrap_or_else(|| "(no messages)".into()),
            bytes: s.bytes,
            cost: s.cost(),
            modified_ms,
        }
    }
}

/// Summaries of the given files (those that are sessions), newest first (by last
/// activity).
pub fn list(files: &[PathBuf], cache: &Cache) -> Vec<SessionInfo> {
    let mut infos: Vec<SessionInfo> = cache.summaries(files).iter().map(SessionInfo::of).collect();
    infos.sort_by(|a, b| {
        b.modified_ms
            .cmp(&a.modified_ms)
            .then_with(|| a.path.cmp(&b.path))
    });
    infos
}
