//! `pi prompt system`: the assembled system prompt (test-cases SP, RL4–RL6) as the reference
//! 1.6 lays it out in sections, context files, SYSTEM.md / APPEND_SYSTEM.md, tools and rules,
//! and the skills index.

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

/// The `- ` lines of the section `<name>` … `</name>` (the tools listed, or the rules).
fn section(text: &str, name: &str) -> Vec<String> {
    let open = format!("<{name}>\n");
    let start = text.find(&open).unwrap() + open.len();
    let body = &text[start..];
    body[..body.find(&format!("\n</{name}>")).unwrap()]
        .lines()
        .filter(|l| l.starts_with("- "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn sp1_no_tools() {
    let w = World::new();
    let p = system(&w, &["--no-tools"]);
    assert!(p.contains("<tools>\n(none)\n"), "{p}");
    assert!(p.contains("Show file paths clearly"));
    assert_eq!(section(&p, "rules").len(), 2);
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
    let tools = section(&p, "tools");
    let names: Vec<&str> = tools.iter().map(|l| &l[2..l.find(':').unwrap()]).collect();
    assert_eq!(names, ["read", "edit", "write", "grep"]);
    // --tools still names them outright.
    let p = system(&w, &["--tools", "ls"]);
    let tools = section(&p, "tools");
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert!(tools[0].starts_with("- ls:"), "{tools:?}");
}

#[test]
fn sp2_default_tools() {
    let w = World::new();
    let p = system(&w, &[]);
    let tools = section(&p, "tools");
    let names: Vec<&str> = tools.iter().map(|l| &l[2..l.find(':').unwrap()]).collect();
    assert_eq!(names, ["read", "bash", "edit", "write"]);
    for n in ["- read:", "- bash:", "- edit:", "- write:"] {
        assert!(p.contains(n), "{n}");
    }
    // The bash rule, read, four edit rules, write, and the two fixed ones.
    let g = section(&p, "rules");
    assert_eq!(g.len(), 9, "{g:?}");
    assert!(g[0].contains("bash") && g[0].contains("rg"), "{g:?}");
    assert!(p.starts_with("You are "));
    assert!(p.ends_with(&format!("\n\n<cwd>\n{}\n</cwd>", w.proj().display())));
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
    let tools = section(&p, "tools");
    assert_eq!(tools.last().unwrap(), "- deploy: Ship it");
    // A tool without a snippet is active (its guidelines count) but not listed.
    let p = system(&w, &["--tools", "x", "--tool-guideline", "x=Mind x."]);
    assert!(p.contains("<tools>\n(none)\n"));
    assert!(p.contains("- Mind x."));
    // Guidelines of inactive tools are left out.
    let p = system(&w, &["--tools", "read", "--tool-guideline", "x=Mind x."]);
    assert!(!p.contains("Mind x."));
}

/// bash is the way to explore files only while none of grep, find and ls is active (1.6
/// dropped 0.73's rule preferring those tools).
#[test]
fn sp7_bash_rule() {
    let w = World::new();
    let bash = system(&w, &["--tools", "bash"]);
    let g = section(&bash, "rules");
    assert_eq!(g.len(), 3);
    assert!(g[0].contains("bash") && g[0].contains("ls, rg and find"));
    let grep = system(&w, &["--tools", "bash,grep"]);
    assert_eq!(section(&grep, "rules").len(), 2);
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
    assert_eq!(section(&p, "tools").len(), 1);
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
            "X\n\n<addendum>\nY\n</addendum>\n\n<project_context>\nInstructions for this project, from its context files:\n\n<project_instructions path=\"{}\">\nC\n</project_instructions>\n</project_context>\n\n<cwd>\n{}\n</cwd>",
            w.agent().join("AGENTS.md").display(),
            w.proj().display()
        )
    );
}

#[test]
fn sp8_skills_need_a_tool_to_load_them() {
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
    // bash can load them too (1.6); without read or bash there is no index.
    let p = system(&w, &["--tools", "bash,edit"]);
    assert!(p.contains("<available_skills>"));
    assert!(p.contains("Use bash to load a skill's file"));
    assert!(!system(&w, &["--tools", "edit,write"]).contains("<available_skills>"));
    assert!(!system(&w, &["--system-prompt", "S", "--tools", "ls"]).contains("<available_skills>"));
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
        "\nglobal\n</project_instructions>",
        "\nroot\n</project_instructions>",
        "\nproject\n</project_instructions>",
        "\nsub\n</project_instructions>",
    ]
    .iter()
    .map(|s| text.find(s).unwrap())
    .collect();
    assert!(order.windows(2).all(|p| p[0] < p[1]), "{order:?}");
    assert!(!text.contains("not used"));
    assert!(text.ends_with(&format!(
        "<cwd>\n{}\n</cwd>",
        w.proj().join("sub").display()
    )));
    // --no-context-files
    let p = system(&w, &["--no-context-files"]);
    assert!(!p.contains("<project_context>"));
}

#[test]
fn rl5_rl6_system_and_append_files() {
    let w = World::new();
    w.write("agent/SYSTEM.md", "Global system.");
    w.write("agent/APPEND_SYSTEM.md", "Global append.");
    let p = system(&w, &[]);
    assert!(
        p.starts_with("Global system.\n\n<addendum>\nGlobal append.\n</addendum>\n\n<cwd>"),
        "{p}"
    );
    w.write("proj/.pi/SYSTEM.md", "You are a helpful assistant.");
    w.write("proj/.pi/APPEND_SYSTEM.md", "Project append.");
    let p = system(&w, &[]);
    assert!(
        p.starts_with("You are a helpful assistant.\n\n<addendum>\nProject append.\n"),
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
        p.starts_with("You are a helpful assistant.\n\n<addendum>\nOne.\n\nFrom a file.\n"),
        "{p}"
    );
    // --system-prompt-file and --system-prompt replace SYSTEM.md.
    w.write("proj/mine.md", "Mine.");
    assert!(
        system(&w, &["--system-prompt-file", "mine.md"])
            .starts_with("Mine.\n\n<addendum>\nProject append.")
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

/// The prompt holds no date (1.6 dropped it): the same on every day, so a session records it
/// once.
#[test]
fn the_prompt_holds_no_date() {
    let w = World::new();
    let run = |now: &str, tz: &str| {
        let out = w
            .pi()
            .env("PI_NOW", now)
            .env("TZ", tz)
            .args(["prompt", "system"])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let today = run(NOW, "UTC0");
    assert_eq!(run("2026-03-04T05:06:07.000Z", "JST-9"), today);
    assert!(!today.contains("2026"), "{today}");
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
