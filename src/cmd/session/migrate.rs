//! `pi session migrate`

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use crate::cmd::Ctx;
use crate::session::{VERSION, append};

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The session file, id or id prefix
    pub session: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    path: PathBuf,
    migrated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    backup: Option<PathBuf>,
    from_version: u32,
    to_version: u32,
    entries: usize,
    #[serde(skip_serializing_if = "is_zero")]
    dropped_lines: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn backup_path(path: &Path, version: u32) -> PathBuf {
    let base = format!("{}.v{version}.bak", path.to_string_lossy());
    let mut candidate = PathBuf::from(&base);
    let mut n = 1;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{base}.{n}"));
        n += 1;
    }
    candidate
}

pub fn run(args: MigrateArgs, ctx: &mut Ctx) -> anyhow::Result<u8> {
    let path = ctx.session_path(Some(&args.session))?;
    // Hold the writers' lock while the file is replaced.
    let lock = OpenOptions::new()
        .read(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    lock.lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
    let s = ctx.open(&path)?;
    let from = s.version();
    if from >= VERSION {
        ctx.out.json(&Outcome {
            path,
            migrated: false,
            backup: None,
            from_version: from,
            to_version: from,
            entries: s.entries.len(),
            dropped_lines: 0,
        })?;
        return Ok(0);
    }
    let header = s.header_line().unwrap_or_default();
    let order: Vec<u32> = (0..s.entries.len() as u32).collect();
    let dropped = s.problems.iter().filter(|p| {
        use crate::session::store::ProblemKind::*;
        matches!(p.kind, Torn | Invalid | NotEntry | ExtraHeader)
    });
    let dropped = dropped.count();
    let backup = backup_path(&path, from);
    std::fs::hard_link(&path, &backup)
        .with_context(|| format!("cannot create the backup {}", backup.display()))?;
    let written = append::write_new_file(&path, true, |w| {
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
    if dropped > 0 {
        crate::error::warn(&format!(
            "{dropped} unreadable line(s) were left out of the new file; they are in the backup"
        ));
    }
    ctx.out.json(&Outcome {
        path,
        migrated: true,
        backup: Some(backup),
        from_version: from,
        to_version: VERSION,
        entries: s.entries.len(),
        dropped_lines: dropped,
    })?;
    Ok(0)
}
