//! The documentation is tested: every ```console block in commands/*.md and README.md runs
//! (each page in a fresh temporary world, commands through `sh`), and the committed man
//! pages and completions must match what `pi generate` writes.
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

#[test]
fn every_command_has_a_page_with_examples() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("commands");
    let mut cmd = pi::cli::command();
    cmd.build();
    let mut stack = vec![cmd];
    while let Some(c) = stack.pop() {
        for sub in c.get_subcommands().filter(|s| !s.is_hide_set()) {
            stack.push(sub.clone());
        }
        let name = c.get_display_name().unwrap_or(c.get_name()).to_owned();
        let page = dir.join(format!("{name}.md"));
        let text =
            std::fs::read_to_string(&page).unwrap_or_else(|_| panic!("missing {}", page.display()));
        if c.get_subcommands().next().is_none() {
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
