//! The documentation is tested: every ```console block in commands/*.md and README.md runs
//! (each page in a fresh temporary world, commands through `sh`), the committed man pages
//! and completions must match what `pi generate` writes, and the help points to man pages.
//!
//! Block syntax: `$ cmd` runs a command (`> ` lines continue it); the lines after it are the
//! expected stdout+stderr, where `[..]` matches any text within a line and a line `...`
//! matches any number of lines; `? N` expects exit status N (default 0). `[ROOT]`, `[PROJ]`
//! and `[AGENT]` stand for the world's paths.

use std::path::Path;
use std::process::Command;

use crate::common::{World, bin};

struct Step {
    line: usize,
    command: String,
    expected: Vec<String>,
    status: i32,
}

fn parse(md: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut in_block = false;
    for (n, line) in md.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block && line.trim() == "```console";
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            steps.push(Step {
                line: n + 1,
                command: cmd.to_owned(),
                expected: Vec::new(),
                status: 0,
            });
        } else if let Some(step) = steps.last_mut() {
            if let Some(more) = line.strip_prefix("> ")
                && step.expected.is_empty()
            {
                step.command.push('\n');
                step.command.push_str(more);
                continue;
            }
            if let Some(code) = line.strip_prefix("? ") {
                step.status = code.trim().parse().expect("exit status");
            } else {
                step.expected.push(line.to_owned());
            }
        }
    }
    steps
}

fn line_matches(pattern: &str, actual: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == actual;
    }
    let mut rest = actual;
    for (k, part) in parts.iter().enumerate() {
        if k == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if k == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(pos) = rest.find(part) else {
                return false;
            };
            rest = &rest[pos + part.len()..];
        }
    }
    true
}

fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => {
            (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..]))
        }
        Some((e, rest)) => {
            !actual.is_empty() && line_matches(e, actual[0]) && lines_match(rest, &actual[1..])
        }
    }
}

/// Runs every example of a Markdown page; returns a description of each failure.
pub fn run_page(page: &Path) -> Vec<String> {
    let md = std::fs::read_to_string(page).expect("read page");
    let world = World::new();
    let bin_dir = bin().parent().expect("bin dir").to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let root = std::fs::canonicalize(world.root()).expect("canonical root");
    // One shell runs the whole page, so variables set by one example are seen by the next;
    // each step's output and status go to their own files.
    let steps = parse(&md);
    let logs = world.path("doc-steps");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let mut script = String::new();
    for (n, step) in steps.iter().enumerate() {
        script.push_str(&format!(
            "{{\n{}\n}} > '{dir}/{n}.out' 2>&1 < /dev/null\necho $? > '{dir}/{n}.status'\n",
            step.command,
            dir = logs.display()
        ));
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(world.proj())
        .env_clear()
        .env("PATH", &path)
        .env("HOME", world.path("home"))
        .env("PI_CODING_AGENT_DIR", world.agent())
        .env("PI_NOW", "2026-01-02T03:04:05.678Z")
        .env("PI_SEED", "7")
        .output()
        .expect("run sh");
    let mut failures = Vec::new();
    if !out.status.success() {
        failures.push(format!(
            "{}: the page's script failed: {}",
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    for (n, step) in steps.iter().enumerate() {
        let raw = std::fs::read(logs.join(format!("{n}.out"))).unwrap_or_default();
        let status: i32 = std::fs::read_to_string(logs.join(format!("{n}.status")))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(-1);
        let text = String::from_utf8_lossy(&raw)
            .replace(&world.agent().display().to_string(), "[AGENT]")
            .replace(&world.proj().display().to_string(), "[PROJ]")
            .replace(&root.display().to_string(), "[ROOT]")
            .replace(&world.root().display().to_string(), "[ROOT]");
        let actual: Vec<&str> = text.lines().collect();
        if status != step.status || !lines_match(&step.expected, &actual) {
            failures.push(format!(
                "{}:{}: $ {}\n--- expected (status {}):\n{}\n--- actual (status {status}):\n{}",
                page.display(),
                step.line,
                step.command,
                step.status,
                step.expected.join("\n"),
                text
            ));
        }
    }
    failures
}

#[test]
fn command_pages_examples_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("commands");
    let mut pages: Vec<_> = std::fs::read_dir(&dir)
        .expect("commands/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    pages.sort();
    let mut failures = Vec::new();
    let mut examples = 0;
    for page in &pages {
        examples += parse(&std::fs::read_to_string(page).expect("read")).len();
        failures.extend(run_page(page));
    }
    assert!(examples > 0, "no examples found");
    assert!(
        failures.is_empty(),
        "{} failing examples:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The manual pages `pi generate` writes, as committed (`generated_files_are_up_to_date`
/// checks that they are current): their names (`pi-session-log`) and contents.
fn man_pages() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut pages = Vec::new();
    for section in ["man1", "man7"] {
        for entry in std::fs::read_dir(root.join(section)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            pages.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
    pages.sort();
    pages
}

/// The commands with a manual page in section 1, each with whether it is a group of
/// commands (`pi session`) rather than a leaf (`pi session log`).
fn commands() -> Vec<(String, bool)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("man/man1");
    let names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            p.file_stem().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    let mut out: Vec<(String, bool)> = names
        .iter()
        .map(|n| {
            let group = names.iter().any(|o| o.starts_with(&format!("{n}-")));
            (n.clone(), group)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_command_has_a_page_with_examples() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("commands");
    let commands = commands();
    assert!(commands.len() > 30, "{commands:?}");
    for (name, group) in commands {
        let page = dir.join(format!("{name}.md"));
        let text =
            std::fs::read_to_string(&page).unwrap_or_else(|_| panic!("missing {}", page.display()));
        if !group {
            assert!(
                !parse(&text).is_empty(),
                "{} has no examples",
                page.display()
            );
            for section in ["## Exit status", "## Examples"] {
                assert!(text.contains(section), "{} lacks {section}", page.display());
            }
        }
    }
}

#[test]
fn generated_files_are_up_to_date() {
    let out = Command::new(bin())
        .args(["generate", "--check", "--out", env!("CARGO_MANIFEST_DIR")])
        .output()
        .expect("run pi generate");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every `man NAME` that pi's help, its pages and the default system prompt mention names a
/// page pi installs, and no help text sends the reader to the repository's files.
#[test]
fn help_points_to_installed_pages() {
    let pages: Vec<String> = man_pages().into_iter().map(|(name, _)| name).collect();
    for needed in [
        "pi",
        "pi-session",
        "pi-session-log",
        "pi-extensions",
        "pi-run-rpc",
    ] {
        assert!(pages.iter().any(|p| p == needed), "no page {needed}");
    }
    let mut texts: Vec<(String, String)> = Vec::new();
    let w = World::new();
    for (name, _) in commands() {
        let mut args: Vec<&str> = name.split('-').skip(1).collect();
        // `pi help` takes `--help` for a command name; its own help is `pi help help`.
        args.push(if args == ["help"] { "help" } else { "--help" });
        texts.push((name.clone(), w.ok(&args)));
    }
    texts.extend(man_pages());
    texts.push(("the system prompt".into(), w.ok(&["prompt", "system"])));
    let mut mentioned = 0;
    for (name, text) in &texts {
        assert!(
            !text.contains("commands/"),
            "{name} points to the repository: {text}"
        );
        for (i, _) in text.match_indices("man pi") {
            let page: String = text[i + 4..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                .collect();
            let page = page.trim_end_matches('-');
            mentioned += 1;
            assert!(
                pages.iter().any(|p| p == page),
                "{name} mentions `man {page}`, which is not installed"
            );
        }
    }
    assert!(mentioned > 3, "{mentioned}");
}

/// The committed man/ is laid out for MANPATH (`man1/`, `man7/`), and `pi man --out`
/// writes the same layout: `man` finds the pages there.
#[test]
fn man_finds_the_pages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(root.join("man/man1/pi-session-log.1").is_file());
    assert!(root.join("man/man1/pi-session.1").is_file());
    assert!(root.join("man/man7/pi-extensions.7").is_file());
    let w = World::new();
    let out = w.path("share/man");
    w.ok(&["man", "--out", out.to_str().unwrap()]);
    let written = std::fs::read(out.join("man1/pi-session-log.1")).unwrap();
    assert_eq!(
        written,
        std::fs::read(root.join("man/man1/pi-session-log.1")).unwrap()
    );
    if Command::new("man").arg("--version").output().is_err() {
        eprintln!("no `man` on this machine: the MANPATH lookup is not tested");
        return;
    }
    for dir in [root.join("man"), out] {
        for (page, file) in [
            ("pi-session-log", "man1/pi-session-log.1"),
            ("pi", "man1/pi.1"),
            ("pi-extensions", "man7/pi-extensions.7"),
        ] {
            let found = Command::new("man")
                .args(["-w", page])
                .env("MANPATH", &dir)
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&found.stdout).trim(),
                dir.join(file).display().to_string(),
                "{}",
                String::from_utf8_lossy(&found.stderr)
            );
        }
    }
}

#[test]
fn matcher_wildcards() {
    assert!(line_matches("a[..]c", "abbbc"));
    assert!(!line_matches("a[..]c", "abbbd"));
    assert!(lines_match(
        &["x".into(), "...".into(), "z".into()],
        &["x", "1", "2", "z"]
    ));
    assert!(!lines_match(&["x".into()], &["x", "y"]));
}
