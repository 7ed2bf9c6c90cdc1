//! `pi man --out DIR`: the manual pages in the layout `man` looks for, `DIR/man1/*.1` (one
//! page per command, from the clap tree) and `DIR/man7/*.7` (the extension protocol and RPC
//! mode, from their reference pages in commands/, which are compiled in).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use roff::{Inline, Roff, bold, roman};

use crate::error::ExitStatus;

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write the pages under DIR, as man expects them: DIR/man1/pi.1, DIR/man1/pi-session.1,
    /// …, DIR/man7/pi-extensions.7
    ///
    /// Existing pages of the same names are replaced; nothing else in DIR is touched. With
    /// DIR on MANPATH (or DIR = ~/.local/share/man, which man finds by itself when
    /// ~/.local/bin is on PATH), `man pi-session-log` shows the page.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// The topic pages (section 7): page name and Markdown source.
const TOPICS: [(&str, &str); 2] = [
    (
        "pi-extensions",
        include_str!("../../commands/pi-extensions.md"),
    ),
    ("pi-run-rpc", include_str!("../../commands/pi-run-rpc.md")),
];

/// The section of the page `name`, if pi has such a page (`pi-run` → 1, `pi-extensions` → 7).
fn section_of(name: &str, commands: &[String]) -> Option<u8> {
    if TOPICS.iter().any(|(t, _)| *t == name) {
        Some(7)
    } else if commands.iter().any(|c| c == name) {
        Some(1)
    } else {
        None
    }
}

/// The clap tree as documented: clap's help subcommands (one per command group, each with a
/// copy of the tree) are left out, and a `help` command described for its page stands in
/// for the top one.
pub fn documented() -> clap::Command {
    let top = crate::cmd::command().disable_help_subcommand(true);
    let help = crate::cmd::pages::decorate(help_command(&top), "pi-help");
    let mut cmd = top.subcommand(help);
    cmd.build();
    cmd
}

/// The page of `pi help`: what clap's built-in help command does, described.
fn help_command(top: &clap::Command) -> clap::Command {
    let groups: Vec<&str> = top
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.has_subcommands())
        .map(|s| s.get_name())
        .collect();
    clap::Command::new("help")
        .disable_help_flag(true)
        .disable_version_flag(true)
        .about("Print the help of pi or of a command")
        .long_about(format!(
            "Print the help of pi or of a command.\n\n\
             `pi help session log` prints what `pi session log --help` prints, and so does \
             `pi session help log`: every command group ({}) has a help command too. \
             `pi help NAME` for an extension (a program pi-NAME on PATH) runs `pi-NAME --help`. \
             A name that is neither gives an error that suggests the nearest command.\n\n\
             `pi` alone prints the short help when its output is a terminal (exit status 0), \
             and an error otherwise (exit status 2).",
            groups.join(", ")
        ))
        .arg(
            clap::Arg::new("command")
                .value_name("COMMAND")
                .num_args(0..)
                .help("The command, with its group: `session log`, `prompt expand`"),
        )
        .after_long_help(crate::cmd::EXIT_STATUS)
}

/// Every command with a page, parents first: `pi`, `pi-session`, `pi-session-new`, ….
pub fn commands() -> Vec<clap::Command> {
    let mut out = Vec::new();
    let mut stack = vec![documented()];
    while let Some(c) = stack.pop() {
        let mut subs: Vec<clap::Command> = c
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .cloned()
            .collect();
        subs.reverse();
        stack.extend(subs);
        out.push(c);
    }
    out
}

/// The page name of a command: `pi-session-log`.
pub fn page_name(cmd: &clap::Command) -> String {
    cmd.get_display_name().unwrap_or(cmd.get_name()).to_owned()
}

/// `pi-session(1)`, as pages name other pages: the name in bold, then the section.
fn page_ref(name: &str, section: u8) -> Vec<Inline> {
    vec![bold(name), roman(format!("({section})"))]
}

fn man_page(cmd: &clap::Command, all: &[String]) -> anyhow::Result<Vec<u8>> {
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
    let name = page_name(cmd);
    // What the command reads and writes, and its examples, from its page.
    if let Some(md) = crate::cmd::pages::page(&name) {
        let parts: Vec<&str> = ["Input", "Output", "Examples"]
            .into_iter()
            .filter_map(|t| crate::cmd::pages::section(md, t))
            .collect();
        let section_of = |page: &str| section_of(page, all);
        out.extend_from_slice(
            crate::render::roff::sections(&name, &parts.concat(), &section_of).as_bytes(),
        );
    }
    let mut roff = Roff::new();
    if let Some(after) = cmd.get_after_long_help() {
        roff.control("SH", ["EXIT STATUS"]);
        let after = after.to_string();
        let status = after.split("\n\nExamples:").next().unwrap_or_default();
        for line in status.lines().skip(1) {
            if let Some((code, text)) = line.trim_start().split_once("  ") {
                roff.control("TP", [])
                    .text([roman(code)])
                    .text([roman(text.trim())]);
            }
        }
    }
    roff.control("SH", ["SEE ALSO"]);
    let refs = see_also(cmd, &name, all);
    let last = refs.len().saturating_sub(1);
    for (i, mut r) in refs.into_iter().enumerate() {
        if i < last {
            r.push(roman(","));
        }
        roff.text(r);
    }
    out.extend_from_slice(roff.to_roff().as_bytes());
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// The pages a command's page points to: the groups above it, the commands under it, the
/// protocol pages where it runs extensions, and for `pi` every top-level command.
fn see_also(cmd: &clap::Command, name: &str, all: &[String]) -> Vec<Vec<Inline>> {
    let mut refs = Vec::new();
    // The groups above: pi-session-log → pi, pi-session.
    let parts: Vec<&str> = name.split('-').collect();
    for n in 1..parts.len() {
        let parent = parts[..n].join("-");
        if all.contains(&parent) {
            refs.push(page_ref(&parent, 1));
        }
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        refs.push(page_ref(&page_name(sub), 1));
    }
    let runs_extensions = cmd.get_arguments().any(|a| a.get_id() == "hook");
    if name == "pi" || runs_extensions {
        refs.push(page_ref("pi-extensions", 7));
    }
    if name == "pi" || name == "pi-run" {
        refs.push(page_ref("pi-run-rpc", 7));
    }
    refs
}

/// Every page: (path relative to the man directory, contents), sorted by path.
pub fn pages() -> anyhow::Result<Vec<(PathBuf, Vec<u8>)>> {
    let commands = commands();
    let names: Vec<String> = commands.iter().map(page_name).collect();
    let mut out = Vec::new();
    for c in &commands {
        out.push((
            PathBuf::from("man1").join(format!("{}.1", page_name(c))),
            man_page(c, &names)?,
        ));
    }
    let version = crate::cmd::command()
        .get_version()
        .unwrap_or_default()
        .to_owned();
    for (name, md) in TOPICS {
        out.push((
            PathBuf::from("man7").join(format!("{name}.7")),
            crate::render::roff::page(name, 7, &version, md, &|page| section_of(page, &names))
                .into_bytes(),
        ));
    }
    out.sort();
    Ok(out)
}

pub fn run(args: ManArgs) -> anyhow::Result<ExitStatus> {
    write_pages(&args.out)?;
    Ok(ExitStatus::Success)
}

/// Writes every page under `dir` (creating `man1/` and `man7/`).
pub fn write_pages(dir: &Path) -> anyhow::Result<()> {
    for (rel, content) in pages()? {
        let p = dir.join(&rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        std::fs::write(&p, content).with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}
