//! Rewriting a v1 or v2 session file as v3 (`pi session migrate`), with the lines
//! [`crate::upgrade`] gives, under the writers' lock and with a backup of the original.

use std::io::Write;

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
pub fn rewrite(path: &std::path::Path) -> anyhow::Result<Outcome> {
    use anyhow::Context;
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    lock.lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
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
    std::fs::hard_link(path, &backup)
        .with_context(|| format!("cannot create the backup {}", backup.display()))?;
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
        return Err(e).with_context(|| format!("cannot rewrite {}", path.display()));
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
