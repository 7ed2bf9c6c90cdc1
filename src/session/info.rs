//! Session summaries for listings (upstream's `SessionInfo`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::preview;
use super::scan::Visit;
use super::store::Session;
use crate::clock;
use crate::json::{self, Kind as JsonKind};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    /// The shortest prefix of the id that names this session alone (see
    /// [`super::find::ShortIds`]); set by listings, which know every session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_id: Option<String>,
    pub cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    pub created: String,
    pub modified: String,
    pub message_count: u64,
    pub first_message: String,
    #[serde(skip)]
    pub modified_ms: i64,
}

/// What the listing needs from the entries.
#[derive(Default)]
struct Summary {
    message_count: u64,
    first_message: Option<String>,
    last_activity: Option<f64>,
}

impl Visit for Summary {
    fn entry(&mut self, _i: u32, line: &[u8], members: &[json::Member<'_>]) {
        let get = |k: &str| json::field(line, members, k);
        if get("type") != Some(b"\"message\"") {
            return;
        }
        self.message_count += 1;
        let Some(msg) = get("message") else { return };
        let role = json::get_str(msg, "role");
        let is_chat = matches!(role.as_deref(), Some("user" | "assistant"));
        let content = json::get(msg, "content");
        if !is_chat || content.is_none() {
            return;
        }
        let t = match json::get(msg, "timestamp").and_then(json::number) {
            Some(t) => Some(t),
            None => get("timestamp")
                .and_then(json::RawStr::from_value)
                .and_then(|s| clock::parse_iso(&s.decode()))
                .map(|ms| ms as f64),
        };
        if let Some(t) = t {
            self.last_activity = Some(self.last_activity.map_or(t.max(0.0), |a| a.max(t)));
        }
        if self.first_message.is_none()
            && role.as_deref() == Some("user")
            && let Some(c) = content
        {
            let text = match JsonKind::of(c) {
                Some(JsonKind::String | JsonKind::Array) => {
                    preview::content_text(c, " ", usize::MAX)
                }
                _ => String::new(),
            };
            if !text.is_empty() {
                self.first_message = Some(text);
            }
        }
    }
    fn split(&self) -> Self {
        Summary::default()
    }
    fn merge(&mut self, next: Self, _offset: u32) {
        self.message_count += next.message_count;
        if self.first_message.is_none() {
            self.first_message = next.first_message;
        }
        self.last_activity = match (self.last_activity, next.last_activity) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Summarizes one file; `None` when it is not a session file.
pub fn build(path: &Path) -> Option<SessionInfo> {
    let (s, v) = Session::open_with(path, Summary::default()).ok()?;
    let Summary {
        message_count,
        first_message,
        last_activity,
    } = v;
    let header = s.header.as_ref()?;
    let created_ms = header.timestamp.as_deref().and_then(clock::parse_iso);
    let mtime_ms = || {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64)
    };
    let modified_ms = match last_activity {
        Some(t) if t > 0.0 => t as i64,
        _ => created_ms.unwrap_or_else(mtime_ms),
    };
    Some(SessionInfo {
        path: path.to_owned(),
        id: header.id.clone(),
        short_id: None,
        cwd: header.cwd.clone(),
        name: s.name().map(str::to_owned),
        parent_session: header.parent_session.clone(),
        created: created_ms.map_or_else(
            || header.timestamp.clone().unwrap_or_default(),
            clock::format_iso,
        ),
        modified: clock::format_iso(modified_ms),
        message_count,
        first_message: first_message.unwrap_or_else(|| "(no messages)".into()),
        modified_ms,
    })
}

/// Summaries of the given files, newest first (by last activity).
pub fn list(files: &[PathBuf]) -> Vec<SessionInfo> {
    let mut infos: Vec<SessionInfo> = files.iter().filter_map(|p| build(p)).collect();
    infos.sort_by(|a, b| {
        b.modified_ms
            .cmp(&a.modified_ms)
            .then_with(|| a.path.cmp(&b.path))
    });
    infos
}
