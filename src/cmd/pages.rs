//! The command pages of `commands/`, compiled in: the examples every `--help` ends with, and
//! the sections (records read and written, examples) the manual pages carry.

/// Every page: its name (`pi-session-log`) and Markdown.
pub const PAGES: &[(&str, &str)] = &[
    ("pi", include_str!("../../commands/pi.md")),
    ("pi-chat", include_str!("../../commands/pi-chat.md")),
    ("pi-compact", include_str!("../../commands/pi-compact.md")),
    (
        "pi-completions",
        include_str!("../../commands/pi-completions.md"),
    ),
    ("pi-context", include_str!("../../commands/pi-context.md")),
    (
        "pi-context-build",
        include_str!("../../commands/pi-context-build.md"),
    ),
    (
        "pi-context-stats",
        include_str!("../../commands/pi-context-stats.md"),
    ),
    (
        "pi-extensions",
        include_str!("../../commands/pi-extensions.md"),
    ),
    ("pi-help", include_str!("../../commands/pi-help.md")),
    ("pi-man", include_str!("../../commands/pi-man.md")),
    ("pi-models", include_str!("../../commands/pi-models.md")),
    ("pi-prompt", include_str!("../../commands/pi-prompt.md")),
    (
        "pi-prompt-expand",
        include_str!("../../commands/pi-prompt-expand.md"),
    ),
    (
        "pi-prompt-list",
        include_str!("../../commands/pi-prompt-list.md"),
    ),
    (
        "pi-prompt-system",
        include_str!("../../commands/pi-prompt-system.md"),
    ),
    ("pi-run", include_str!("../../commands/pi-run.md")),
    ("pi-run-rpc", include_str!("../../commands/pi-run-rpc.md")),
    ("pi-session", include_str!("../../commands/pi-session.md")),
    (
        "pi-session-append",
        include_str!("../../commands/pi-session-append.md"),
    ),
    (
        "pi-session-branch",
        include_str!("../../commands/pi-session-branch.md"),
    ),
    (
        "pi-session-check",
        include_str!("../../commands/pi-session-check.md"),
    ),
    (
        "pi-session-edit",
        include_str!("../../commands/pi-session-edit.md"),
    ),
    (
        "pi-session-export",
        include_str!("../../commands/pi-session-export.md"),
    ),
    (
        "pi-session-fork",
        include_str!("../../commands/pi-session-fork.md"),
    ),
    (
        "pi-session-gc",
        include_str!("../../commands/pi-session-gc.md"),
    ),
    (
        "pi-session-import",
        include_str!("../../commands/pi-session-import.md"),
    ),
    (
        "pi-session-label",
        include_str!("../../commands/pi-session-label.md"),
    ),
    (
        "pi-session-list",
        include_str!("../../commands/pi-session-list.md"),
    ),
    (
        "pi-session-log",
        include_str!("../../commands/pi-session-log.md"),
    ),
    (
        "pi-session-migrate",
        include_str!("../../commands/pi-session-migrate.md"),
    ),
    (
        "pi-session-name",
        include_str!("../../commands/pi-session-name.md"),
    ),
    (
        "pi-session-new",
        include_str!("../../commands/pi-session-new.md"),
    ),
    (
        "pi-session-resume",
        include_str!("../../commands/pi-session-resume.md"),
    ),
    (
        "pi-session-search",
        include_str!("../../commands/pi-session-search.md"),
    ),
    (
        "pi-session-show",
        include_str!("../../commands/pi-session-show.md"),
    ),
    (
        "pi-session-tree",
        include_str!("../../commands/pi-session-tree.md"),
    ),
    (
        "pi-session-use",
        include_str!("../../commands/pi-session-use.md"),
    ),
    ("pi-trust", include_str!("../../commands/pi-trust.md")),
    ("pi-usage", include_str!("../../commands/pi-usage.md")),
];

/// How many example lines `--help` shows at most.
const SHOWN: usize = 3;

/// The Markdown of the page `name`.
pub fn page(name: &str) -> Option<&'static str> {
    PAGES.iter().find(|(n, _)| *n == name).map(|(_, md)| *md)
}

/// The `## TITLE` section of `md`, heading included, up to the next `## ` heading.
pub fn section<'a>(md: &'a str, title: &str) -> Option<&'a str> {
    let head = format!("## {title}\n");
    let start = if md.starts_with(&head) {
        0
    } else {
        md.find(&format!("\n{head}"))? + 1
    };
    let rest = &md[start + head.len()..];
    let end = rest
        .find("\n## ")
        .map_or(md.len(), |i| start + head.len() + i + 1);
    Some(&md[start..end])
}

/// The command lines of the page's examples that run the command itself (`pi session log
/// …` on the page of `pi session log`, also inside `$(…)` or a pipeline), first to last,
/// then other lines that start with `pi`, at most [`SHOWN`]. Lines continued on the next
/// (`\`) are left out.
pub fn examples(name: &str) -> Vec<&'static str> {
    let Some(md) = page(name) else {
        return Vec::new();
    };
    let Some(ex) = section(md, "Examples") else {
        return Vec::new();
    };
    let own = format!("{} ", name.replace('-', " "));
    let lines: Vec<&str> = ex
        .lines()
        .filter_map(|l| l.strip_prefix("$ "))
        .filter(|l| l.contains("pi ") && !l.ends_with('\\'))
        .collect();
    let mut out: Vec<&str> = Vec::new();
    let runs_own = |l: &str| {
        let l = format!("{l} ");
        l.starts_with(&own) || l.contains(&format!(" {own}")) || l.contains(&format!("({own}"))
    };
    let (mine, others): (Vec<&str>, Vec<&str>) = lines
        .into_iter()
        .filter(|l| l.starts_with("pi ") || runs_own(l))
        .partition(|l| runs_own(l));
    for l in mine.into_iter().chain(others) {
        if out.len() == SHOWN {
            break;
        }
        if !out.contains(&l) {
            out.push(l);
        }
    }
    out
}

/// The text `--help` ends with for the page `name`: its examples, and where to read more.
fn examples_text(name: &str) -> Option<String> {
    let ex = examples(name);
    if ex.is_empty() {
        return None;
    }
    let mut text = String::from("Examples:\n");
    for l in ex {
        text.push_str("  $ ");
        text.push_str(l);
        text.push('\n');
    }
    text.push_str(&format!("  (more in `man {name}`)"));
    Some(text)
}

/// `cmd` (whose page is `name`) and its commands, each ending its help with its examples.
pub fn decorate(mut cmd: clap::Command, name: &str) -> clap::Command {
    if let Some(ex) = examples_text(name) {
        let long = match cmd.get_after_long_help() {
            Some(after) => format!("{after}\n\n{ex}"),
            None => ex.clone(),
        };
        cmd = cmd.after_help(ex).after_long_help(long);
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for sub in subs {
        let page = format!("{name}-{sub}");
        cmd = cmd.mut_subcommand(&sub, |s| decorate(s, &page));
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_is_compiled_in() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("commands");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let n = e.unwrap().file_name().into_string().unwrap();
                n.strip_suffix(".md").map(str::to_owned)
            })
            .collect();
        on_disk.sort();
        let listed: Vec<&str> = PAGES.iter().map(|(n, _)| *n).collect();
        assert_eq!(on_disk, listed);
    }

    #[test]
    fn sections_and_examples() {
        let md = "# t\n\n## Input\n\nin\n\n## Examples\n\n```console\n$ pi x\n```\n";
        assert_eq!(section(md, "Input"), Some("## Input\n\nin\n\n"));
        assert!(section(md, "Examples").unwrap().contains("$ pi x"));
        assert_eq!(section(md, "Output"), None);
        let ex = examples("pi-session-tree");
        assert!(ex.len() >= 2, "{ex:?}");
        assert!(
            ex.iter().all(|l| l.starts_with("pi session tree")),
            "{ex:?}"
        );
        let ex = examples("pi-session-fork");
        assert!(
            ex[..2].iter().all(|l| l.contains("pi session fork")),
            "{ex:?}"
        );
        assert!(ex[2].starts_with("pi session log"), "{ex:?}");
    }
}
