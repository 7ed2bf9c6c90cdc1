//! `pi prompt system`: the assembled system prompt (test-cases SP, RL4–RL6), context files,
//! SYSTEM.md / APPEND_SYSTEM.md, tools and guidelines, the skills index and the local date.

use predicates::prelude::*;
use serde_json::Value;

use crate::common::*;

const NOW: &str = "2026-01-01T20:30:00.000Z";

/// `pi prompt system ARGS` with a fixed clock in UTC; the text without the final newline.
fn system(w: &World, args: &[&str]) -> String {
    let out = w
        .pi()
        .env("PI_NOW", NOW)
        .env("TZ", "UTC")
        .args([&["prompt", "system"], args].concat())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8(out.stdout).unwrap();
    s.strip_suffix('\n').unwrap().to_owned()
}

fn section(text: &str, title: &str) -> Vec<String> {
    let start = text.find(&format!("\n{title}:\n")).unwrap() + title.len() + 3;
    let body = &text[start..];
    body[..body.find("\n\n").unwrap()]
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn sp1_no_tools() {
    let w = World::new();
    let p = system(&w, &["--no-tools"]);
    assert!(p.contains("Available tools:\n(none)"), "{p}");
    assert!(p.contains("Show file paths clearly"));
    assert_eq!(section(&p, "Guidelines").len(), 2);
    // An empty --tools list is the same.
    assert_eq!(system(&w, &["--tools", ""]), p);
}

/// `defaultTools` in the settings chooses the tools of the prompt, as it does for `pi run`.
#[test]
fn default_tools_setting_chooses_the_tools() {
    let w = World::new();
    w.write(
        "agent/settings.json",
        serde_json::json!({"defaultTools": ["+grep", "-bash"]}).to_string(),
    );
    let p = system(&w, &[]);
    let tools = section(&p, "Available tools");
    let names: Vec<&str> = tools.iter().map(|l| &l[2..l.find(':').unwrap()]).collect();
    assert_eq!(names, ["read", "edit", "write", "grep"]);
    // --tools still names them outright.
    let p = system(&w, &["--tools", "ls"]);
    let tools = section(&p, "Available tools");
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert!(tools[0].starts_with("- ls:"), "{tools:?}");
}

#[test]
fn sp2_default_tools() {
    let w = World::new();
    let p = system(&w, &[]);
    let tools = section(&p, "Available tools");
    let names: Vec<&str> = tools.iter().map(|l| &l[2..l.find(':').unwrap()]).collect();
    assert_eq!(names, ["read", "bash", "edit", "write"]);
    for n in ["- read:", "- bash:", "- edit:", "- write:"] {
        assert!(p.contains(n), "{n}");
    }
    // Exploration rule, read, four edit rules, write, and the two fixed ones.
    let g = section(&p, "Guidelines");
    assert_eq!(g.len(), 9, "{g:?}");
    assert!(g[0].contains("bash") && g[0].contains("rg"), "{g:?}");
    assert!(p.starts_with("You are "));
    assert!(p.ends_with(&format!(
        "\nCurrent date: 2026-01-01\nCurrent working directory: {}",
        w.proj().display()
    )));
}

#[test]
fn sp3_sp4_sp5_sp9_custom_tools() {
    let w = World::new();
    let p = system(
        &w,
        &[
            "--tools",
            "read,dynamic_tool",
            "--tool-snippet",
            "dynamic_tool=Run dynamic\ntest   behavior",
            "--tool-guideline",
            "dynamic_tool=Use dynamic_tool for summaries.",
            "--tool-guideline",
            "dynamic_tool=  Use dynamic_tool for summaries.  ",
            "--tool-guideline",
            "dynamic_tool=   ",
            "--tool-guideline",
            "dynamic_tool=Use dynamic_tool when the user asks for dynamic behavior tests.",
        ],
    );
    assert!(
        p.contains("- dynamic_tool: Run dynamic test behavior"),
        "{p}"
    );
    assert_eq!(p.matches("- Use dynamic_tool for summaries.").count(), 1);
    assert!(p.contains("- Use dynamic_tool when the user asks for dynamic behavior tests."));
    // Custom tools are active by default, after the built-in ones.
    let p = system(&w, &["--tool-snippet", "deploy=Ship it"]);
    let tools = section(&p, "Available tools");
    assert_eq!(tools.last().unwrap(), "- deploy: Ship it");
    // A tool without a snippet is active (its guidelines count) but not listed.
    let p = system(&w, &["--tools", "x", "--tool-guideline", "x=Mind x."]);
    assert!(p.contains("Available tools:\n(none)"));
    assert!(p.contains("- Mind x."));
    // Guidelines of inactive tools are left out.
    let p = system(&w, &["--tools", "read", "--tool-guideline", "x=Mind x."]);
    assert!(!p.contains("Mind x."));
}

#[test]
fn sp7_exploration_guideline() {
    let w = World::new();
    let bash = system(&w, &["--tools", "bash"]);
    let g = section(&bash, "Guidelines");
    assert_eq!(g.len(), 3);
    assert!(g[0].contains("bash") && g[0].contains("ls, rg and find"));
    let grep = system(&w, &["--tools", "bash,grep"]);
    let g2 = section(&grep, "Guidelines");
    assert_ne!(g[0], g2[0]);
    assert!(g2[0].contains("prefer the grep, find and ls tools"));
    let none = system(&w, &["--tools", "read,write"]);
    assert!(!none.contains("bash"));
}

#[test]
fn unknown_tools_are_ignored_with_a_warning() {
    let w = World::new();
    let out = w
        .pi()
        .args(["prompt", "system", "--tools", "read,nope"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown tool 'nope'"));
    let p = String::from_utf8(out.stdout).unwrap();
    assert_eq!(section(&p, "Available tools").len(), 1);
    let out = w
        .pi()
        .args(["prompt", "system", "--tool-snippet", "no-equals-sign"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sp6_custom_prompt_layout() {
    let w = World::new();
    w.write("agent/AGENTS.md", "C");
    let p = system(&w, &["--system-prompt", "X", "--append-system-prompt", "Y"]);
    assert_eq!(
        p,
        format!(
            "X\n\nY\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n## {}\n\nC\n\n\nCurrent date: 2026-01-01\nCurrent working directory: {}",
            w.agent().join("AGENTS.md").display(),
            w.proj().display()
        )
    );
}

#[test]
fn sp8_skills_need_the_read_tool() {
    let w = World::new();
    w.write(
        "agent/skills/alpha/SKILL.md",
        "---\ndescription: Alpha & <co>.\n---\n",
    );
    w.write(
        "agent/skills/manual/SKILL.md",
        "---\ndescription: Manual.\ndisable-model-invocation: true\n---\n",
    );
    let p = system(&w, &[]);
    assert!(p.contains("<available_skills>\n  <skill>\n    <name>alpha</name>\n    <description>Alpha &amp; &lt;co&gt;.</description>"));
    assert!(p.contains("The following skills provide specialized instructions"));
    assert!(p.contains("Use the read tool to load a skill's file"));
    assert!(!p.contains("<name>manual</name>"));
    assert!(!system(&w, &["--tools", "bash,edit"]).contains("<available_skills>"));
    assert!(
        !system(&w, &["--system-prompt", "S", "--tools", "bash"]).contains("<available_skills>")
    );
    assert!(system(&w, &["--system-prompt", "S"]).contains("<available_skills>"));
    assert!(!system(&w, &["--no-skills"]).contains("<available_skills>"));
    // Only hidden skills: no section at all.
    std::fs::remove_dir_all(w.path("agent/skills/alpha")).unwrap();
    let p = system(&w, &[]);
    assert!(!p.contains("<available_skills>") && !p.contains("The following skills"));
}

#[test]
fn rl4_context_files_in_order() {
    let w = World::new();
    std::fs::create_dir_all(w.path("proj/sub")).unwrap();
    w.write("agent/CLAUDE.md", "global");
    w.write("AGENTS.md", "root");
    w.write("proj/AGENTS.md", "project");
    w.write("proj/CLAUDE.md", "not used");
    w.write("proj/sub/CLAUDE.MD", "sub");
    let out = w
        .pi()
        .args(["prompt", "system", "--json", "--cwd", "sub"])
        .output()
        .unwrap();
    let v = &jsonl(&String::from_utf8(out.stdout).unwrap())[0];
    let files: Vec<String> = v["contextFiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    let root = std::fs::canonicalize(w.root()).unwrap();
    assert_eq!(
        files,
        [
            w.agent().join("CLAUDE.md").display().to_string(),
            root.join("AGENTS.md").display().to_string(),
            w.proj().join("AGENTS.md").display().to_string(),
            w.proj().join("sub/CLAUDE.MD").display().to_string(),
        ]
    );
    let text = v["text"].as_str().unwrap();
    let order: Vec<usize> = [
        "\n\nglobal\n\n",
        "\n\nroot\n\n",
        "\n\nproject\n\n",
        "\n\nsub\n\n",
    ]
    .iter()
    .map(|s| text.find(s).unwrap())
    .collect();
    assert!(order.windows(2).all(|p| p[0] < p[1]), "{order:?}");
    assert!(!text.contains("not used"));
    assert!(text.ends_with(&format!(
        "Current working directory: {}",
        w.proj().join("sub").display()
    )));
    // --no-context-files
    let p = system(&w, &["--no-context-files"]);
    assert!(!p.contains("# Project Context"));
}

#[test]
fn rl5_rl6_system_and_append_files() {
    let w = World::new();
    w.write("agent/SYSTEM.md", "Global system.");
    w.write("agent/APPEND_SYSTEM.md", "Global append.");
    let p = system(&w, &[]);
    assert!(
        p.starts_with("Global system.\n\nGlobal append.\nCurrent date:"),
        "{p}"
    );
    w.write("proj/.pi/SYSTEM.md", "You are a helpful assistant.");
    w.write("proj/.pi/APPEND_SYSTEM.md", "Project append.");
    let p = system(&w, &[]);
    assert!(
        p.starts_with("You are a helpful assistant.\n\nProject append.\n"),
        "{p}"
    );
    assert!(!p.contains("Global"));
    // --append-system-prompt replaces APPEND_SYSTEM.md; repeated values are joined by a blank
    // line; a value naming a file stands for its contents.
    w.write("proj/notes.txt", "From a file.");
    let p = system(
        &w,
        &[
            "--append-system-prompt",
            "One.",
            "--append-system-prompt",
            "notes.txt",
        ],
    );
    assert!(
        p.starts_with("You are a helpful assistant.\n\nOne.\n\nFrom a file.\n"),
        "{p}"
    );
    // --system-prompt-file and --system-prompt replace SYSTEM.md.
    w.write("proj/mine.md", "Mine.");
    assert!(
        system(&w, &["--system-prompt-file", "mine.md"]).starts_with("Mine.\n\nProject append.")
    );
    assert!(system(&w, &["--system-prompt", "Literal."]).starts_with("Literal.\n\n"));
    // An empty custom prompt means the default text.
    assert!(system(&w, &["--system-prompt", ""]).starts_with("You are a coding assistant"));
    w.pi()
        .args(["prompt", "system", "--system-prompt-file", "missing.md"])
        .assert()
        // An unreadable file argument is a usage error.
        .code(2)
        .stderr(predicate::str::contains("cannot read missing.md"));
}

#[test]
fn the_date_is_local() {
    let w = World::new();
    let run = |tz: &str| {
        let out = w
            .pi()
            .env("PI_NOW", NOW)
            .env("TZ", tz)
            .args(["prompt", "system", "--system-prompt", "S"])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(run("UTC0").contains("\nCurrent date: 2026-01-01\n"));
    assert!(run("JST-9").contains("\nCurrent date: 2026-01-02\n"));
    assert!(run("HST10").contains("\nCurrent date: 2026-01-01\n"));
    assert!(run("<+14>-14").contains("\nCurrent date: 2026-01-02\n"));
}

#[test]
fn json_output() {
    let w = World::new();
    w.write("proj/AGENTS.md", "rules");
    w.write("agent/skills/alpha/SKILL.md", "---\ndescription: A.\n---\n");
    let out = w.ok(&["prompt", "system", "--json", "--tools", "read,grep"]);
    let v: &Value = &jsonl(&out)[0];
    assert!(v["text"].as_str().unwrap().contains("rules"));
    assert_eq!(v["tools"], serde_json::json!(["read", "grep"]));
    assert_eq!(v["skills"], serde_json::json!(["alpha"]));
    assert_eq!(v["contextFiles"].as_array().unwrap().len(), 1);
}

/// A `SYSTEM.md` that cannot be read is a warning and is ignored (the reference would use
/// its path as the prompt).
#[test]
fn unreadable_system_md_is_a_warning() {
    let w = World::new();
    std::fs::create_dir_all(w.path("proj/.pi/SYSTEM.md")).unwrap();
    let o = w.pi().args(["prompt", "system"]).output().unwrap();
    assert!(o.status.success());
    insta::assert_snapshot!(w.redact(&String::from_utf8_lossy(&o.stderr)), @"pi: warning: cannot read [PROJ]/.pi/SYSTEM.md: Is a directory (os error 21)");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains(".pi/SYSTEM.md"), "{text}");
    // The same as without the file: the default prompt.
    std::fs::remove_dir(w.path("proj/.pi/SYSTEM.md")).unwrap();
    assert_eq!(text, w.ok(&["prompt", "system"]));
}
