//! `pi generate` (hidden): man pages and shell completions, written into the repository and
//! checked for drift by the test suite.

use crate::error::ExitStatus;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use clap_complete::Shell;

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Directory that receives man/ and completions/
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub out: PathBuf,
    /// Compare with the files in DIR instead of writing; exit 1 if they differ
    #[arg(long)]
    pub check: bool,
}

/// Escapes text for a roff line.
fn roff_text(line: &str) -> String {
    let s = line.replace('\\', "\\e");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

fn man_page(cmd: &clap::Command) -> anyhow::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    if let Some(after) = cmd.get_after_long_help() {
        writeln!(out, ".SH \"EXIT STATUS\"")?;
        for line in after.to_string().lines().skip(1) {
            let line = line.trim_start();
            if let Some((code, text)) = line.split_once("  ") {
                writeln!(out, ".TP\n{}\n{}", roff_text(code), roff_text(text.trim()))?;
            }
        }
    }
    let name = cmd.get_display_name().unwrap_or(cmd.get_name());
    writeln!(out, ".SH \"SEE ALSO\"")?;
    writeln!(
        out,
        "{}",
        roff_text(&format!(
            "The command reference commands/{name}.md, with the records the command reads and writes and examples."
        ))
    )?;
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// Every generated file: (relative path, contents).
pub fn files() -> anyhow::Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut cmd = crate::cli::command();
    cmd.build();
    let mut out = Vec::new();
    let mut stack = vec![cmd.clone()];
    while let Some(c) = stack.pop() {
        for sub in c.get_subcommands().filter(|s| !s.is_hide_set()) {
            stack.push(sub.clone());
        }
        let name = c.get_display_name().unwrap_or(c.get_name()).to_owned();
        out.push((
            PathBuf::from("man").join(format!("{name}.1")),
            man_page(&c)?,
        ));
    }
    for (shell, file) in [
        (Shell::Bash, "pi.bash"),
        (Shell::Zsh, "_pi"),
        (Shell::Fish, "pi.fish"),
    ] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut cmd.clone(), "pi", &mut buf);
        out.push((PathBuf::from("completions").join(file), buf));
    }
    out.sort();
    Ok(out)
}

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

pub fn run(args: GenerateArgs) -> anyhow::Result<ExitStatus> {
    let files = files()?;
    if args.check {
        let mut stale = Vec::new();
        for (rel, content) in &files {
            let p = args.out.join(rel);
            if std::fs::read(&p).ok().as_deref() != Some(content.as_slice()) {
                stale.push(rel.display().to_string());
            }
        }
        for dir in ["man", "completions"] {
            for p in listing(&args.out.join(dir)) {
                let rel = Path::new(dir).join(p.file_name().unwrap_or_default());
                if !files.iter().any(|(r, _)| *r == rel) {
                    stale.push(format!("{} (no longer generated)", rel.display()));
                }
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
    for dir in ["man", "completions"] {
        let d = args.out.join(dir);
        for p in listing(&d) {
            std::fs::remove_file(&p).with_context(|| format!("cannot remove {}", p.display()))?;
        }
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    for (rel, content) in &files {
        let p = args.out.join(rel);
        std::fs::write(&p, content).with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(ExitStatus::Success)
}
