//! `pi man --out DIR`: the manual pages in the layout `man` looks for, `DIR/man1/*.1` (one
//! page per command, from the clap tree) and `DIR/man7/*.7` (the extension protocol and RPC
//! mode, from their reference pages in commands/, which are compiled in).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

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
    let help = help_command(&top);
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

/// Escapes text for a roff line.
fn roff_text(line: &str) -> String {
    let s = line.replace('\\', "\\e");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// `pi-session(1)` in bold, as SEE ALSO lists pages.
fn page_ref(name: &str, section: u8) -> String {
    format!("\\fB{}\\fR({section})", name.replace('-', "\\-"))
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
    if let Some(after) = cmd.get_after_long_help() {
        writeln!(out, ".SH \"EXIT STATUS\"")?;
        for line in after.to_string().lines().skip(1) {
            let line = line.trim_start();
            if let Some((code, text)) = line.split_once("  ") {
                writeln!(out, ".TP\n{}\n{}", roff_text(code), roff_text(text.trim()))?;
            }
        }
    }
    let name = page_name(cmd);
    writeln!(out, ".SH \"SEE ALSO\"")?;
    writeln!(out, "{}", see_also(cmd, &name, all).join(",\n"))?;
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// The pages a command's page points to: the groups above it, the commands under it, the
/// protocol pages where it runs extensions, and for `pi` every top-level command.
fn see_also(cmd: &clap::Command, name: &str, all: &[String]) -> Vec<String> {
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
            markdown_page(name, 7, &version, md, &names).into_bytes(),
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

// --- Markdown to roff, for the topic pages -------------------------------------------------

/// Inline Markdown (code spans, bold, emphasis, links) as roff text. Links to other pages
/// become references to their man pages; links within the page keep only their text.
fn inline(text: &str, pages: &[String]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        match c {
            '`' => {
                if let Some(end) = rest[1..].find('`') {
                    out.push_str("\\fB");
                    out.push_str(&escape(&rest[1..1 + end]));
                    out.push_str("\\fR");
                    rest = &rest[end + 2..];
                    continue;
                }
            }
            '*' if rest.starts_with("**") => {
                if let Some(end) = rest[2..].find("**") {
                    out.push_str("\\fB");
                    out.push_str(&inline(&rest[2..2 + end], pages));
                    out.push_str("\\fR");
                    rest = &rest[end + 4..];
                    continue;
                }
            }
            '*' => {
                if let Some(end) = rest[1..].find('*')
                    && end > 0
                    && !rest[1..].starts_with(' ')
                {
                    out.push_str("\\fI");
                    out.push_str(&inline(&rest[1..1 + end], pages));
                    out.push_str("\\fR");
                    rest = &rest[end + 2..];
                    continue;
                }
            }
            '[' => {
                if let Some((label, target, len)) = link(rest) {
                    out.push_str(&inline(label, pages));
                    let page = target
                        .split('#')
                        .next()
                        .unwrap_or("")
                        .strip_suffix(".md")
                        .unwrap_or("");
                    if let Some(section) = section_of(page, pages) {
                        out.push_str(&format!(" ({})", page_ref(page, section)));
                    } else if target.starts_with("http") {
                        out.push_str(&format!(" <{}>", escape(target)));
                    }
                    rest = &rest[len..];
                    continue;
                }
            }
            _ => {}
        }
        out.push_str(&escape(&rest[..c.len_utf8()]));
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `[label](target)` at the start of `s`: the label, the target and the length.
fn link(s: &str) -> Option<(&str, &str, usize)> {
    let close = s.find("](")?;
    let label = &s[1..close];
    if label.contains('[') || label.contains(']') {
        return None;
    }
    let end = s[close + 2..].find(')')?;
    let target = &s[close + 2..close + 2 + end];
    if target.contains(' ') {
        return None;
    }
    Some((label, target, close + 2 + end + 1))
}

/// Escapes characters roff treats specially within a line.
fn escape(s: &str) -> String {
    s.replace('\\', "\\e")
}

/// A line of running text: escaped, and kept from being read as a request.
fn text_line(s: &str) -> String {
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s.to_owned()
    }
}

/// The cells of a table row `| a | b |`.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    // A `|` inside a code span does not split cells.
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_code = false;
    for c in inner.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                cur.push(c);
            }
            '|' if !in_code => out.push(std::mem::take(&mut cur).trim().to_owned()),
            _ => cur.push(c),
        }
    }
    out.push(cur.trim().to_owned());
    out
}

/// A Markdown page as a man page: `#` is the name line, `##` sections, `###` subsections,
/// paragraphs, lists, code blocks (examples keep their `$ ` lines) and tables (one tagged
/// paragraph per row).
pub fn markdown_page(name: &str, section: u8, version: &str, md: &str, pages: &[String]) -> String {
    let mut out = String::new();
    let mut lines = md.lines().peekable();
    let mut title = String::new();
    out.push_str(&format!(".TH {name} {section} \"\" \"pi {version}\"\n"));
    let mut para: Vec<String> = Vec::new();
    let flush = |para: &mut Vec<String>, out: &mut String| {
        if !para.is_empty() {
            out.push_str(".PP\n");
            for l in para.drain(..) {
                out.push_str(&text_line(&l));
                out.push('\n');
            }
        }
    };
    let mut started = false;
    while let Some(line) = lines.next() {
        let trimmed = line.trim_end();
        if let Some(h) = trimmed.strip_prefix("# ") {
            title = h.to_owned();
            continue;
        }
        if !started {
            // The name line and the start of the description come first.
            out.push_str(".SH NAME\n");
            out.push_str(&format!(
                "{} \\- {}\n.SH DESCRIPTION\n",
                name.replace('-', "\\-"),
                escape(&title)
            ));
            started = true;
        }
        if let Some(h) = trimmed.strip_prefix("## ") {
            flush(&mut para, &mut out);
            out.push_str(&format!(".SH \"{}\"\n", escape(&h.to_uppercase())));
        } else if let Some(h) = trimmed.strip_prefix("### ") {
            flush(&mut para, &mut out);
            out.push_str(&format!(".SS \"{}\"\n", escape(h)));
        } else if trimmed.starts_with("```") {
            flush(&mut para, &mut out);
            let console = trimmed == "```console";
            out.push_str(".PP\n.RS 4\n.nf\n");
            for l in lines.by_ref() {
                if l.trim_start().starts_with("```") {
                    break;
                }
                let l = match l.strip_prefix("? ") {
                    Some(code) if console => format!("[exit status {}]", code.trim()),
                    _ => l.to_owned(),
                };
                out.push_str(&text_line(&escape(&l)));
                out.push('\n');
            }
            out.push_str(".fi\n.RE\n");
        } else if trimmed.starts_with("    ") && para.is_empty() {
            out.push_str(".PP\n.RS 4\n.nf\n");
            out.push_str(&text_line(&escape(&trimmed[4..])));
            out.push('\n');
            while let Some(l) = lines.peek() {
                if !l.starts_with("    ") {
                    break;
                }
                out.push_str(&text_line(&escape(&l[4..])));
                out.push('\n');
                lines.next();
            }
            out.push_str(".fi\n.RE\n");
        } else if trimmed.starts_with('|') {
            flush(&mut para, &mut out);
            table(trimmed, &mut lines, pages, &mut out);
        } else if let Some(item) = trimmed.strip_prefix("- ") {
            flush(&mut para, &mut out);
            let mut text = item.to_owned();
            while let Some(l) = lines.peek() {
                if l.starts_with("  ") && !l.trim().is_empty() {
                    text.push(' ');
                    text.push_str(l.trim());
                    lines.next();
                } else {
                    break;
                }
            }
            out.push_str(".IP \\(bu 2\n");
            out.push_str(&text_line(&inline(&text, pages)));
            out.push('\n');
        } else if trimmed.is_empty() {
            flush(&mut para, &mut out);
        } else {
            para.push(inline(trimmed.trim_start(), pages));
        }
    }
    flush(&mut para, &mut out);
    out
}

/// A Markdown table whose header row is `first`, the rest read from `lines`: one tagged
/// paragraph per row (its first cell), the other cells as `header: cell`.
fn table(
    first: &str,
    lines: &mut std::iter::Peekable<std::str::Lines<'_>>,
    pages: &[String],
    out: &mut String,
) {
    let header = cells(first);
    // The separator row.
    if lines
        .peek()
        .is_some_and(|l| l.trim_start().starts_with("|-"))
    {
        lines.next();
    }
    while let Some(l) = lines.peek() {
        if !l.trim_start().starts_with('|') {
            break;
        }
        let row = cells(l);
        lines.next();
        let mut body = Vec::new();
        for (k, cell) in row.iter().enumerate().skip(1) {
            if cell.is_empty() {
                continue;
            }
            match header.get(k).filter(|h| !h.is_empty()) {
                Some(h) => body.push(format!("{}: {}", inline(h, pages), inline(cell, pages))),
                None => body.push(inline(cell, pages)),
            }
        }
        out.push_str(".TP\n");
        out.push_str(&text_line(&inline(
            row.first().map_or("", String::as_str),
            pages,
        )));
        out.push('\n');
        out.push_str(&text_line(&body.join("; ")));
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_markdown() {
        let pages = vec!["pi-run".to_owned()];
        assert_eq!(
            inline("see [`pi run`](pi-run.md#x) and **this** *too*", &pages),
            "see \\fBpi run\\fR (\\fBpi\\-run\\fR(1)) and \\fBthis\\fR \\fItoo\\fR"
        );
        assert_eq!(
            inline("[below](#trust), `a\\b`", &pages),
            "below, \\fBa\\eb\\fR"
        );
        assert_eq!(
            inline("[its page](pi-run-rpc.md)", &pages),
            "its page (\\fBpi\\-run\\-rpc\\fR(7))"
        );
        assert_eq!(
            inline("`*.md` [..] 2 * 3", &pages),
            "\\fB*.md\\fR [..] 2 * 3"
        );
    }

    #[test]
    fn tables_and_code() {
        let md = "# T\n\nIntro `x`.\n\n## Fields\n\n| field | |\n|---|---|\n| `a` | the a |\n\n```console\n$ pi x\n.dot\n? 2\n```\n";
        let page = markdown_page("pi-t", 7, "1.0", md, &[]);
        assert!(page.contains(".SH NAME\npi\\-t \\- T\n.SH DESCRIPTION\n.PP\nIntro \\fBx\\fR.\n"));
        assert!(page.contains(".SH \"FIELDS\"\n.TP\n\\fBa\\fR\nthe a\n"));
        assert!(page.contains("$ pi x\n\\&.dot\n[exit status 2]\n.fi\n"));
    }
}
