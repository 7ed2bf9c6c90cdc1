//! Rewriting a v1 or v2 session file as v3 (`pi session migrate`), with the lines
//! [`crate::upgrade`] gives, under the writers' lock and with a backup of the original.

use std::io::Write;

use pi_base::fs::FileError;

use crate::store::OpenError;

/// Why a file could not be migrated.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// It could not be read as a session.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// It could not be locked, backed up or written.
    #[error(transparent)]
    File(#[from] FileError),
}

/// What `rewrite` did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub path: std::path::PathBuf,
    pub migrated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<std::path::PathBuf>,
    pub from_version: u32,
    pub to_version: u32,
    pub entries: usize,
    /// Lines that could not be read, left out of the new file (they stay in the backup).
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_lines: usize,
    /// Unreadable lines met (for the user, not the record).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `<path>.v<version>.bak`, or with `.1`, `.2`, … when that exists.
pub(crate) fn backup_path(path: &std::path::Path, version: u32) -> std::path::PathBuf {
    let base = format!("{}.v{version}.bak", path.to_string_lossy());
    let mut candidate = std::path::PathBuf::from(&base);
    let mut n = 1;
    while candidate.exists() {
        candidate = std::path::PathBuf::from(format!("{base}.{n}"));
        n += 1;
    }
    candidate
}

/// Rewrites a version 1 or 2 session file as version 3, under the writers' lock: the
/// original is kept as a backup (a hard link), the new file is written to a temporary
/// file, synced and renamed into place. A version 3 file is left alone.
pub fn rewrite(path: &std::path::Path) -> Result<Outcome, MigrateError> {
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(FileError::of("open", path))?;
    pi_base::fs::lock(&lock).map_err(FileError::of("lock", path))?;
    let s = super::Session::open(path)?;
    let warnings = s.skipped_warnings();
    let from = s.version();
    if from >= super::VERSION {
        return Ok(Outcome {
            warnings,
            path: path.to_owned(),
            migrated: false,
            backup: None,
            from_version: from,
            to_version: from,
            entries: s.entries.len(),
            dropped_lines: 0,
        });
    }
    let header = s.header_line().unwrap_or_default();
    let order: Vec<u32> = (0..s.entries.len() as u32).collect();
    let dropped = s
        .problems
        .iter()
        .filter(|p| {
            use super::store::ProblemKind::*;
            matches!(p.kind, Torn | Invalid | NotEntry | ExtraHeader)
        })
        .count();
    let backup = backup_path(path, from);
    std::fs::hard_link(path, &backup).map_err(FileError::of("create the backup", &backup))?;
    let written = pi_base::fs::write_with(path, true, |w| {
        w.write_all(&header)?;
        w.write_all(b"\n")?;
        s.for_each_line(&order, |_, line| {
            w.write_all(line)?;
            w.write_all(b"\n")
        })
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&backup);
        return Err(FileError::of("rewrite", path)(e).into());
    }
    drop(lock);
    Ok(Outcome {
        warnings,
        path: path.to_owned(),
        migrated: true,
        backup: Some(backup),
        from_version: from,
        to_version: super::VERSION,
        entries: s.entries.len(),
        dropped_lines: dropped,
    })
}
