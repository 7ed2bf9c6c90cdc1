//! `pi generate` (hidden): the repository's man/ (as `pi man --out man` writes it) and
//! completions/ (as `pi completions SHELL` prints them), checked for drift by the tests.

use crate::error::ExitStatus;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::cmd::completions::{self, Shell};

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Directory that receives man/ and completions/
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub out: PathBuf,
    /// Compare with the files in DIR instead of writing; exit 1 if they differ
    #[arg(long)]
    pub check: bool,
}

/// The directories this command owns, relative to its `--out`.
const DIRS: [&str; 2] = ["man", "completions"];

/// Every generated file: (relative path, contents), sorted.
pub fn files() -> anyhow::Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = crate::cmd::man::pages()?
        .into_iter()
        .map(|(rel, content)| (Path::new("man").join(rel), content))
        .collect();
    for shell in Shell::ALL {
        out.push((
            Path::new("completions").join(shell.file_name()),
            completions::script(shell)?,
        ));
    }
    out.sort();
    Ok(out)
}

/// The files under `dir`, recursively, relative to `base`.
fn listing(base: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir(base.join(dir)) else {
        return v;
    };
    for e in rd.filter_map(Result::ok) {
        let rel = dir.join(e.file_name());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            v.extend(listing(base, &rel));
        } else {
            v.push(rel);
        }
    }
    v.sort();
    v
}

pub fn run(args: GenerateArgs) -> anyhow::Result<ExitStatus> {
    let files = files()?;
    let existing: Vec<PathBuf> = DIRS
        .iter()
        .flat_map(|d| listing(&args.out, Path::new(d)))
        .collect();
    if args.check {
        let mut stale = Vec::new();
        for (rel, content) in &files {
            let p = args.out.join(rel);
            if std::fs::read(&p).ok().as_deref() != Some(content.as_slice()) {
                stale.push(rel.display().to_string());
            }
        }
        for rel in &existing {
            if !files.iter().any(|(r, _)| r == rel) {
                stale.push(format!("{} (no longer generated)", rel.display()));
            }
        }
        if stale.is_empty() {
            return Ok(ExitStatus::Success);
        }
        for s in &stale {
            eprintln!("out of date: {s}");
        }
        return Err(crate::error::failed(
            "man pages or completions are out of date; run `cargo run -- generate`",
        ));
    }
    for rel in &existing {
        let p = args.out.join(rel);
        std::fs::remove_file(&p).with_context(|| format!("cannot remove {}", p.display()))?;
    }
    for (rel, content) in &files {
        let p = args.out.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        std::fs::write(&p, content).with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(ExitStatus::Success)
}
