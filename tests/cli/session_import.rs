//! `pi session import`: Claude Code and Codex CLI sessions as pi sessions (issue 31).
//!
//! The example fixtures are read from `shared/imports/` (see [`imports`]) at test time, never copied here (their licenses stay
//! with them); the edge cases are hand-made files in `tests/fixtures/import/`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

/// `shared/imports/`: `PI_IMPORT_FIXTURES` when set, else found next to the repository or
/// one of its parents, else the workplace's copy at /work/shared/imports (a clone made
/// elsewhere, such as a fresh one in a temporary directory). Absent, the tests fail and say
/// where they looked: they never skip.
fn imports() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let named = std::env::var_os("PI_IMPORT_FIXTURES").map(PathBuf::from);
    let beside = repo.ancestors().skip(1).map(|d| d.join("shared/imports"));
    let places: Vec<PathBuf> = named
        .into_iter()
        .chain(beside)
        .chain([PathBuf::from("/work/shared/imports")])
        .collect();
    if let Some(p) = places.iter().find(|p| p.join("FORMATS.md").is_file()) {
        return p.clone();
    }
    panic!(
        "the import fixtures (shared/imports/, with FORMATS.md) were not found: looked in {}; \
         they are not part of this repository; set PI_IMPORT_FIXTURES or put the shared/ \
         folder beside the checkout",
        places
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

fn shared(rel: &str) -> String {
    imports().join(rel).to_string_lossy().into_owned()
}

fn own(rel: &str) -> String {
    fixture("import").join(rel).to_string_lossy().into_owned()
}

/// Runs `pi session import ARGS`: (status, records, stderr).
fn import(w: &World, args: &[&str]) -> (i32, Vec<Value>, String) {
    let out = w
        .pi()
        .args(["session", "import", "--json"])
        .args(args)
        .output()
        .unwrap();
    let recs = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        out.status.code().unwrap(),
        recs,
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn entries(path: &str) -> Vec<Value> {
    jsonl(&std::fs::read_to_string(path).unwrap())
}

fn check_clean(w: &World, path: &str) {
    let out = w.pi().args(["session", "check", path]).output().unwrap();
    assert!(
        out.status.success(),
        "{path}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn session_of(r: &Value) -> String {
    r["session"].as_str().unwrap().to_owned()
}

#[test]
fn a_rewind_stays_a_branch_and_a_compaction_continues_from_its_logical_parent() {
    let w = World::new();
    let (code, recs, _) = import(
        &w,
        &[&shared(
            "claude/claude-code-log/dag_compact_after_rewind.jsonl",
        )],
    );
    assert_eq!(code, 0);
    let r = &recs[0];
    assert_eq!(r["format"], "claude");
    assert_eq!(r["status"], "created");
    assert_eq!(r["messages"]["user"], 5);
    assert_eq!(r["messages"]["assistant"], 5);
    assert_eq!(r["branches"], 2);
    assert_eq!(r["compactions"], 1);
    assert_eq!(
        r["usage"]["anthropic/claude-sonnet-4-20250514"]["messages"],
        5
    );
    let path = session_of(r);
    check_clean(&w, &path);
    let es = entries(&path);
    assert_eq!(es[0]["type"], "session");
    assert_eq!(es[0]["cwd"], "/tmp");
    assert_eq!(es[0]["importedFrom"]["format"], "claude");
    // The rewind: "First attempt" and "Second attempt" are children of the same answer.
    let by_text = |t: &str| {
        es.iter()
            .find(|e| e["message"]["content"][0]["text"] == t)
            .unwrap()
            .clone()
    };
    assert_eq!(
        by_text("First attempt")["parentId"],
        by_text("Second attempt")["parentId"]
    );
    // The compaction follows the last message before it, and keeps nothing before it.
    let c = es.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(c["parentId"], by_text("Kept going")["id"]);
    assert_eq!(c["firstKeptEntryId"], c["id"]);
    assert_eq!(c["tokensBefore"], 150000);
    assert!(c["summary"].as_str().unwrap().contains("asked for a plan"));
    // The leaf is the main thread's last message; the context is summary + what follows.
    assert_eq!(
        es.last().unwrap()["message"]["content"][0]["text"],
        "Final answer"
    );
    let ctx = jsonl(&w.ok(&["context", "build", &path]));
    let roles: Vec<&str> = ctx.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["compactionSummary", "user", "assistant"]);
    let found = w.ok(&["session", "search", "Kept going", "--all", "--count"]);
    assert!(
        found.contains(&path) && found.contains("\"count\":1"),
        "{found}"
    );
    for cmd in [
        &["session", "log", &path][..],
        &["session", "tree", &path],
        &["session", "show", &path],
        &["session", "export", &path, "--format", "md"],
    ] {
        w.ok(cmd);
    }
}

#[test]
fn a_main_claude_file_brings_its_subagents_as_sessions_naming_it() {
    let w = World::new();
    let main = shared(
        "claude/claude-code-log/minimal_showcase/55550000-0000-4000-8000-000000000001.jsonl",
    );
    let (code, recs, _) = import(&w, &[&main]);
    assert_eq!(code, 0);
    assert_eq!(recs.len(), 3, "{recs:?}");
    let m = &recs[0];
    assert_eq!(m["kind"], "main");
    assert_eq!(m["subagentSessions"], 2);
    assert_eq!(m["messages"]["toolResult"], 5);
    let main_path = session_of(m);
    assert!(Path::new(&main_path).is_absolute());
    for r in &recs[1..] {
        assert_eq!(r["kind"], "subagent");
        assert!(
            r["source"]
                .as_str()
                .unwrap()
                .contains("/subagents/agent-showcol")
        );
        let p = session_of(r);
        check_clean(&w, &p);
        assert_eq!(entries(&p)[0]["parentSession"], main_path.as_str());
        assert_eq!(r["parentSession"], main_path.as_str());
    }
    check_clean(&w, &main_path);
}

#[test]
fn streamed_lines_become_one_message_and_parallel_results_no_fork() {
    let w = World::new();
    let (code, recs, _) = import(&w, &[&own("claude/streamed.jsonl")]);
    assert_eq!(code, 0);
    let r = &recs[0];
    assert_eq!(r["messages"]["assistant"], 2);
    assert_eq!(r["messages"]["toolResult"], 2);
    assert_eq!(r["messages"]["user"], 1);
    assert_eq!(r["branches"], 1);
    assert_eq!(r["custom"], 2); // the progress line and the title
    // Usage once per message id, from its last line (output 42, not 5 + 20 + 42).
    let u = &r["usage"]["anthropic/claude-sonnet-4-5"];
    assert_eq!(u["input"], 110);
    assert_eq!(u["output"], 49);
    assert_eq!(u["cacheRead"], 2100);
    assert_eq!(u["cacheWrite"], 50);
    let path = session_of(r);
    check_clean(&w, &path);
    let es = entries(&path);
    let a = es
        .iter()
        .find(|e| e["message"]["role"] == "assistant")
        .unwrap();
    let content = &a["message"]["content"];
    assert_eq!(content[0]["type"], "thinking");
    assert_eq!(content[0]["thinkingSignature"], "sig-abc");
    assert_eq!(content[1]["name"], "Bash");
    assert_eq!(content[2]["name"], "Read");
    assert_eq!(a["message"]["stopReason"], "toolUse");
    let results: Vec<&Value> = es
        .iter()
        .filter(|e| e["message"]["role"] == "toolResult")
        .collect();
    assert_eq!(results[0]["parentId"], a["id"]);
    assert_eq!(results[1]["parentId"], results[0]["id"]);
    assert_eq!(results[0]["message"]["toolName"], "Bash");
    assert_eq!(results[0]["message"]["details"]["exitCode"], 0);
    assert_eq!(results[1]["message"]["toolName"], "Read");
    let last = es.last().unwrap();
    assert_eq!(last["parentId"], results[1]["id"]);
    // `pi usage` over the imported session counts the same.
    let usage = jsonl(&w.ok(&["usage", "model", "--all", "--json"]));
    assert_eq!(usage[0]["inputTokens"], 110);
    assert_eq!(usage[0]["outputTokens"], 49);
    assert_eq!(usage[0]["cacheReadTokens"], 2100);
    // Context builds, and the reference's continuation finds the tool calls paired.
    let ctx = jsonl(&w.ok(&["context", "build", &path]));
    let roles: Vec<&str> = ctx.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "toolResult", "assistant"]
    );
}

#[test]
fn importing_again_writes_nothing_and_growth_is_appended() {
    let w = World::new();
    let src = w.write(
        "src/0a1b2c3d.jsonl",
        std::fs::read(own("claude/streamed.jsonl")).unwrap(),
    );
    let src = src.to_str().unwrap();
    let (_, recs, _) = import(&w, &[src]);
    let path = session_of(&recs[0]);
    let before = std::fs::read(&path).unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (code, recs, _) = import(&w, &[src]);
    assert_eq!(code, 0);
    assert_eq!(recs[0]["status"], "unchanged");
    assert_eq!(recs[0]["entries"], 0);
    assert_eq!(session_of(&recs[0]), path);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    // The source grows by a turn: only that turn is appended.
    let mut grown = std::fs::read(src).unwrap();
    grown.extend(std::fs::read(own("claude/streamed.growth")).unwrap());
    std::fs::write(src, grown).unwrap();
    let (code, recs, _) = import(&w, &[src]);
    assert_eq!(code, 0);
    assert_eq!(recs[0]["status"], "appended");
    assert_eq!(recs[0]["entries"], 2);
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&before));
    check_clean(&w, &path);
    let es = entries(&path);
    let last = es.last().unwrap();
    assert_eq!(last["message"]["content"][0]["text"], "Clean too.");
    let prev = &es[es.len() - 2];
    assert_eq!(last["parentId"], prev["id"]);
    assert_eq!(prev["message"]["content"][0]["text"], "And the linter?");
    // Once more: nothing.
    let (_, recs, _) = import(&w, &[src]);
    assert_eq!(recs[0]["status"], "unchanged");
    assert_eq!(std::fs::read(&path).unwrap(), after);
}

#[test]
fn broken_lines_are_skipped_and_the_tree_is_repaired() {
    let w = World::new();
    let src = own("claude/broken.jsonl");
    let (code, recs, stderr) = import(&w, &[&src]);
    assert_eq!(code, 1, "a skipped line makes the exit status 1");
    assert!(stderr.contains(&format!("{src}:7: skipped")), "{stderr}");
    let r = &recs[0];
    assert_eq!(r["skipped"].as_array().unwrap().len(), 1);
    assert_eq!(r["skipped"][0]["line"], 7);
    let repairs = r["repairs"].as_array().unwrap();
    let has = |kind: &str, line: u64, uuid: &str| {
        repairs
            .iter()
            .any(|x| x["kind"] == kind && x["line"] == line && x["uuid"] == uuid)
    };
    assert!(has("dangling-parent", 3, "missing-uuid"), "{repairs:?}");
    assert!(has("cycle", 5, "c2"), "{repairs:?}");
    assert!(has("duplicate-uuid", 6, "x2"), "{repairs:?}");
    // The unknown line type is kept, counted, and is not a skipped line.
    assert_eq!(r["unknown"], 1);
    let path = session_of(r);
    check_clean(&w, &path);
    let es = entries(&path);
    let unknown = es
        .iter()
        .find(|e| e["type"] == "custom" && e["data"]["kind"] == "frame-link")
        .unwrap();
    assert_eq!(unknown["customType"], "import.claude");
    assert_eq!(unknown["data"]["line"], 8);
    let by_text = |t: &str| {
        es.iter()
            .find(|e| e["message"]["content"][0]["text"] == t)
            .unwrap()
            .clone()
    };
    assert_eq!(by_text("orphan")["parentId"], Value::Null);
    assert_eq!(by_text("cycle b")["parentId"], Value::Null);
    assert_eq!(by_text("cycle a")["parentId"], by_text("cycle b")["id"]);
    assert_eq!(es.last().unwrap()["message"]["content"][0]["text"], "three");
}

#[test]
fn a_file_in_neither_format_is_an_error_for_that_file_only() {
    let w = World::new();
    let dir = shared("claude/claude-code-log/workflow_basic");
    let (code, recs, stderr) = import(&w, &[&dir]);
    assert_eq!(code, 1);
    let errors: Vec<&Value> = recs.iter().filter(|r| r["status"] == "error").collect();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]["source"]
            .as_str()
            .unwrap()
            .ends_with("journal.jsonl")
    );
    assert!(stderr.contains("journal.jsonl is neither a Claude Code nor a Codex CLI session file"));
    // The main session and its three workflow agents are imported.
    let created: Vec<&Value> = recs.iter().filter(|r| r["status"] == "created").collect();
    assert_eq!(created.len(), 4);
}

#[test]
fn codex_turns_reasoning_tool_calls_and_usage_deltas() {
    let w = World::new();
    let (code, recs, _) = import(&w, &[&own("codex")]);
    assert_eq!(code, 0);
    let r = &recs[0];
    assert_eq!(r["format"], "codex");
    assert_eq!(
        r["messages"]["user"], 2,
        "the event copy of a prompt is not a second prompt"
    );
    assert_eq!(r["messages"]["assistant"], 3);
    assert_eq!(r["messages"]["toolResult"], 1);
    assert_eq!(r["modelChanges"], 1);
    // The repeated token_count is not counted again; input excludes cached.
    let a = &r["usage"]["openai/gpt-5.2"];
    assert_eq!(a["input"], 1300);
    assert_eq!(a["cacheRead"], 1200);
    assert_eq!(a["output"], 80);
    let b = &r["usage"]["openai/gpt-5.4"];
    assert_eq!(b["input"], 200);
    assert_eq!(b["output"], 20);
    assert!(
        b["cost"].as_f64().unwrap() > 0.0,
        "priced from the catalogue"
    );
    let path = session_of(r);
    check_clean(&w, &path);
    let es = entries(&path);
    let first = es
        .iter()
        .find(|e| e["message"]["role"] == "assistant")
        .unwrap();
    let think = &first["message"]["content"][0];
    assert_eq!(think["thinking"], "Run the tests first.");
    let sig: Value = serde_json::from_str(think["thinkingSignature"].as_str().unwrap()).unwrap();
    assert_eq!(sig["encrypted_content"], "gAAAAenc1");
    assert_eq!(
        first["message"]["content"][1]["arguments"]["cmd"],
        "make test"
    );
    let mc = es.iter().find(|e| e["type"] == "model_change").unwrap();
    assert_eq!(mc["modelId"], "gpt-5.4");
    let usage = jsonl(&w.ok(&["usage", "model", "--all", "--json"]));
    let total = usage.last().unwrap();
    assert_eq!(total["totals"]["inputTokens"], 1500);
    assert_eq!(total["totals"]["outputTokens"], 100);
}

#[test]
fn codex_function_custom_and_mcp_calls_and_an_unknown_line() {
    let w = World::new();
    let (code, recs, _) = import(&w, &[&shared("codex/claude-code-log/sessions/2026/01/02")]);
    assert_eq!(code, 0);
    let r = &recs[0];
    assert_eq!(r["unknown"], 1);
    assert_eq!(r["messages"]["toolResult"], 3);
    let path = session_of(r);
    check_clean(&w, &path);
    let es = entries(&path);
    let calls: Vec<(String, String)> = es
        .iter()
        .filter(|e| e["message"]["role"] == "assistant")
        .flat_map(|e| e["message"]["content"].as_array().unwrap().clone())
        .filter(|c| c["type"] == "toolCall")
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let names: Vec<&str> = calls.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(
        names,
        ["exec_command", "apply_patch", "mcp__synthetic__lookup"]
    );
    let results: Vec<&Value> = es
        .iter()
        .filter(|e| e["message"]["role"] == "toolResult")
        .collect();
    for (res, (id, name)) in results.iter().zip(&calls) {
        assert_eq!(res["message"]["toolCallId"], id.as_str());
        assert_eq!(res["message"]["toolName"], name.as_str());
    }
    assert_eq!(results[1]["message"]["content"][0]["text"], "Done!");
    let unknown = es
        .iter()
        .find(|e| e["data"]["kind"] == "future_synthetic_record")
        .unwrap();
    assert_eq!(unknown["customType"], "import.codex");
    // The agent_message event is the same text as the response item: imported once.
    let done = es
        .iter()
        .filter(|e| {
            e["message"]["content"][0]["text"] == "The synthetic files are alpha.txt and beta.txt."
        })
        .count();
    assert_eq!(done, 1);
}

#[test]
fn a_codex_subagent_names_its_parent_and_its_replay_is_not_written_again() {
    let w = World::new();
    let (code, recs, _) = import(&w, &[&shared("codex/claude-code-log/sessions/2026/01/03")]);
    assert_eq!(code, 0);
    assert_eq!(recs.len(), 2);
    let parent = &recs[0];
    let child = &recs[1];
    assert_eq!(child["kind"], "subagent");
    assert_eq!(child["parentSession"], parent["session"]);
    let es = entries(&session_of(child));
    assert_eq!(es[0]["parentSession"], parent["session"]);
    // The replayed prompt and spawn call of the parent are not in the child.
    let texts: Vec<String> = es
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(
        texts,
        ["Inspect fixtures.", "The fixtures are fully synthetic."]
    );
    assert_eq!(parent["subagentSessions"], 1);
}

#[test]
fn with_no_path_the_agents_own_stores_are_read() {
    let w = World::new();
    let claude = w.path("claude-config");
    let codex = w.path("codex-home");
    std::fs::create_dir_all(claude.join("projects/-work-demo")).unwrap();
    std::fs::create_dir_all(codex.join("sessions/2026/03/03")).unwrap();
    std::fs::copy(
        own("claude/streamed.jsonl"),
        claude.join("projects/-work-demo/0a1b2c3d.jsonl"),
    )
    .unwrap();
    std::fs::copy(
        own("codex/rollout-2026-03-03T08-00-00-019c0000-0000-7000-8000-00000000c0de.jsonl"),
        codex.join("sessions/2026/03/03/rollout.jsonl"),
    )
    .unwrap();
    // A ~/.claude that CLAUDE_CONFIG_DIR replaces as a whole.
    w.write(
        "home/.claude/projects/x/other.jsonl",
        std::fs::read(own("claude/broken.jsonl")).unwrap(),
    );
    let out = w
        .pi()
        .args(["session", "import", "--json"])
        .env("CLAUDE_CONFIG_DIR", &claude)
        .env("CODEX_HOME", &codex)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let recs = jsonl(&String::from_utf8(out.stdout).unwrap());
    let sources: Vec<&str> = recs.iter().map(|r| r["source"].as_str().unwrap()).collect();
    assert_eq!(sources.len(), 2, "{sources:?}");
    assert!(sources[0].ends_with("projects/-work-demo/0a1b2c3d.jsonl"));
    assert!(sources[1].ends_with("sessions/2026/03/03/rollout.jsonl"));
    // Without the variables, ~/.claude and ~/.codex.
    let (code, recs, _) = import(&w, &[]);
    assert_eq!(code, 1); // broken.jsonl has a bad line
    assert_eq!(recs.len(), 1);
    assert!(
        recs[0]["source"]
            .as_str()
            .unwrap()
            .ends_with(".claude/projects/x/other.jsonl")
    );
}

#[test]
fn output_to_stdout_dry_run_and_the_human_table() {
    let w = World::new();
    let src = own("claude/streamed.jsonl");
    let out = w.ok(&["session", "import", &src, "-o", "-"]);
    let es = jsonl(&out);
    assert_eq!(es[0]["type"], "session");
    assert_eq!(es.len(), 8);
    let (code, recs, _) = import(&w, &["--dry-run", &src]);
    assert_eq!(code, 0);
    assert_eq!(recs[0]["status"], "dry-run");
    assert!(!Path::new(&session_of(&recs[0])).exists());
    assert!(!w.agent().join("sessions").exists());
    let file = w.path("one.jsonl");
    w.ok(&["session", "import", &src, "-o", file.to_str().unwrap()]);
    check_clean(&w, file.to_str().unwrap());
    let human = w.ok(&["session", "import", &src, "--format", "human"]);
    assert!(human.contains("created"), "{human}");
    assert!(human.contains("1 user    2 assistant    2 tool"), "{human}");
    assert!(human.contains("1 source, 0 not imported"), "{human}");
    // -o takes one source.
    let out = w
        .pi()
        .args([
            "session",
            "import",
            &src,
            &own("claude/broken.jsonl"),
            "-o",
            "-",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = w
        .pi()
        .args(["session", "import", "no-such-file.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn every_example_fixture_imports_checks_clean_and_imports_again_unchanged() {
    let w = World::new();
    let root = imports();
    let (code, recs, _) = import(
        &w,
        &[
            root.join("claude").to_str().unwrap(),
            root.join("codex").to_str().unwrap(),
        ],
    );
    // journal.jsonl is not a transcript, and two files have malformed lines.
    assert_eq!(code, 1);
    let errors: Vec<&str> = recs
        .iter()
        .filter(|r| r["status"] == "error")
        .map(|r| r["source"].as_str().unwrap())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].ends_with("journal.jsonl"));
    assert_eq!(recs.len(), 113);
    for r in recs.iter().filter(|r| r["status"] != "error") {
        check_clean(&w, &session_of(r));
        for s in r["sidechains"].as_array().into_iter().flatten() {
            check_clean(&w, &session_of(s));
        }
    }
    let (_, again, _) = import(
        &w,
        &[
            root.join("claude").to_str().unwrap(),
            root.join("codex").to_str().unwrap(),
        ],
    );
    let changed: Vec<&Value> = again
        .iter()
        .filter(|r| r["status"] != "unchanged" && r["status"] != "error")
        .collect();
    assert!(changed.is_empty(), "{changed:?}");
}

fn fnv64(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// tests/fixtures/import16/context.golden.json (scripts/goldens/import16.mjs): for every
/// imported source, the reference 1.6 opened pi's session, found the same leaf and built the
/// same context as `pi context build`, in agent and llm form; also for a source imported,
/// grown and imported again (a message completed after the import caught it mid-stream).
#[test]
fn the_reference_opens_every_imported_session_and_builds_the_same_context() {
    let g: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("import16/context.golden.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(g["reference"], "1.6.0");
    let sources = g["sources"].as_object().unwrap();
    assert!(sources.len() >= 110, "{}", sources.len());
    let w = World::new();
    let mut failures = Vec::new();
    for (k, (name, want)) in sources.iter().enumerate() {
        // 1.6 read every entry pi wrote.
        assert_eq!(want["entries"], want["lines"], "{name}");
        let (root, rel) = name.split_once('/').unwrap();
        // `FILE+GROWTH`: FILE imported, then grown by GROWTH and imported again.
        let (rel, growth) = match rel.split_once('+') {
            Some((f, g)) => (f, Some(g)),
            None => (rel, None),
        };
        let mut src = match root {
            "own" => fixture("import").join(rel),
            _ => imports().join(rel),
        };
        if growth.is_some() {
            src = w.write(&format!("grown{k}.jsonl"), std::fs::read(&src).unwrap());
        }
        let out = w.path(&format!("s{k}.jsonl"));
        let o = out.to_str().unwrap();
        let st = w
            .pi()
            .args(["session", "import", src.to_str().unwrap(), "-o", o])
            .output()
            .unwrap();
        assert!(st.status.code().unwrap() <= 1, "{name}");
        if let Some(g) = growth {
            let mut grown = std::fs::read(&src).unwrap();
            grown.extend(std::fs::read(fixture("import").join(g)).unwrap());
            std::fs::write(&src, grown).unwrap();
            let st = w
                .pi()
                .args(["session", "import", src.to_str().unwrap(), "-o", o])
                .output()
                .unwrap();
            assert_eq!(st.status.code(), Some(0), "{name}");
        }
        let text = std::fs::read_to_string(&out).unwrap();
        let es = jsonl(&text);
        if es.len() - 1 != want["lines"].as_u64().unwrap() as usize {
            failures.push(format!("{name}: {} entries", es.len() - 1));
            continue;
        }
        let leaf = es.last().and_then(|e| e["id"].as_str()).map(str::to_owned);
        if es.len() > 1 && leaf.as_deref() != want["leaf"].as_str() {
            failures.push(format!("{name}: leaf {leaf:?}"));
        }
        for form in ["agent", "llm"] {
            let ctx = w.ok(&["context", "build", o, "--format", form]);
            let lines: Vec<&str> = ctx.lines().collect();
            if lines.len() as u64 != want[form]["n"].as_u64().unwrap()
                || fnv64(&lines.join("\n")) != want[form]["hash"].as_str().unwrap()
            {
                failures.push(format!("{name}: {form} context differs"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// tests/fixtures/import16/ccusage.golden.json (scripts/goldens/ccusage20.mjs): the tokens
/// ccusage 20 reads from each source file alone. pi's import counts the same, except where
/// ccusage cannot read lines (written with `": "`, with microsecond timestamps or none: it
/// reads fewer, often none) or, without a `requestId` (Bedrock, gateways), counts every
/// streamed line of a message: there pi counts each message once and ccusage more.
#[test]
fn usage_equals_ccusage_20_where_it_reads_the_file() {
    let g: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("import16/ccusage.golden.json")).unwrap(),
    )
    .unwrap();
    assert!(g["ccusage"].as_str().unwrap().starts_with("20."));
    let w = World::new();
    let fields = ["input", "output", "cacheRead", "cacheWrite"];
    let (mut same, mut unreadable, mut undeduped, mut replayed) = (0, 0, 0, 0);
    for (k, (name, cc)) in g["sources"].as_object().unwrap().iter().enumerate() {
        let (root, rel) = name.split_once('/').unwrap();
        let src = match root {
            "own" => fixture("import").join(rel),
            _ => imports().join(rel),
        };
        let out = w.path(&format!("u{k}.jsonl"));
        let (_, recs, _) = import(&w, &[src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        let mut pi = [0u64; 4];
        for r in &recs {
            let parts = std::iter::once(r).chain(r["sidechains"].as_array().into_iter().flatten());
            for p in parts {
                for u in p["usage"].as_object().into_iter().flat_map(|m| m.values()) {
                    for (i, f) in fields.iter().enumerate() {
                        pi[i] += u[f].as_u64().unwrap();
                    }
                }
            }
        }
        let cc: Vec<u64> = fields.iter().map(|f| cc[f].as_u64().unwrap()).collect();
        if pi[..] == cc[..] {
            same += 1;
            continue;
        }
        let text = std::fs::read_to_string(&src).unwrap();
        let spaced = text.contains("\": ");
        let micros = regex_micros(&text);
        let no_ts = !text.contains("\"timestamp\"");
        let no_request_id = text.contains("\"assistant\"") && !text.contains("\"requestId\"");
        if (spaced || micros || no_ts) && pi.iter().zip(&cc).all(|(p, c)| p >= c) {
            unreadable += 1;
        } else if no_request_id && pi.iter().zip(&cc).all(|(p, c)| p <= c) && pi != cc[..] {
            undeduped += 1;
        } else if recs[0]["kind"] == "fork" && pi.iter().zip(&cc).all(|(p, c)| p <= c) {
            // A fork replaying its parent: ccusage counts the replay again, pi does not.
            replayed += 1;
        } else {
            panic!("{name}: pi {pi:?}, ccusage {cc:?}");
        }
    }
    assert!(same >= 80, "{same} agree");
    assert_eq!(replayed, 1, "the branch-history fork");
    assert!(
        unreadable >= 20 && undeduped >= 2,
        "{unreadable} {undeduped}"
    );
}

/// Whether a file has timestamps with microseconds (`.123456Z`).
fn regex_micros(text: &str) -> bool {
    text.split("\"timestamp\"").skip(1).any(|rest| {
        rest.split('"')
            .nth(1)
            .and_then(|ts| ts.strip_suffix('Z'))
            .and_then(|ts| ts.rsplit_once('.'))
            .is_some_and(|(_, frac)| frac.len() > 3)
    })
}

/// `pi run -c` continues an imported session: the imported turns go to the model with the
/// new prompt, tool calls paired with their results.
#[test]
fn pi_run_continues_an_imported_session() {
    use crate::common::model_server::{ModelServer, Reply};
    let server = ModelServer::start();
    let w = crate::run_support::world(&server);
    let proj = w.proj();
    let text = std::fs::read_to_string(own("claude/streamed.jsonl"))
        .unwrap()
        .replace("/work/demo", proj.to_str().unwrap());
    let src = w.write("src/0a1b2c3d.jsonl", text);
    let (code, recs, _) = import(&w, &[src.to_str().unwrap()]);
    assert_eq!(code, 0);
    let path = session_of(&recs[0]);
    server.push(Reply::anthropic_text(&["Next step done."]));
    let o = crate::run_support::run(
        &w,
        &["-c", "--model", "mockant/claude-mock", "-p", "What next?"],
    );
    crate::run_support::status(&o, 0);
    let sent = server.requests()[0].json();
    let msgs = sent["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    let calls: Vec<&str> = msgs[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    let results: Vec<&str> = msgs[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["toolu_1", "toolu_2"]);
    assert_eq!(results, calls);
    // The answer is appended to the imported session, after its leaf.
    let es = entries(&path);
    assert_eq!(
        es.last().unwrap()["message"]["content"][0]["text"],
        "Next step done."
    );
    check_clean(&w, &path);
}

/// A resumed Claude Code session's file begins with copies of the earlier session's lines
/// (same uuids, times and usage): it becomes a session of its own, and `pi usage` counts
/// the copied messages once (the entries' ids, times and usage are the same in both).
#[test]
fn a_resumed_sessions_copied_turns_are_counted_once_by_pi_usage() {
    let w = World::new();
    let first = std::fs::read(own("claude/streamed.jsonl")).unwrap();
    let mut resumed = first.clone();
    resumed.extend(std::fs::read(own("claude/streamed.growth")).unwrap());
    w.write("src/first.jsonl", &first);
    w.write("src/resumed.jsonl", &resumed);
    let (code, recs, _) = import(&w, &[w.path("src").to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(recs.len(), 2);
    assert_ne!(recs[0]["session"], recs[1]["session"]);
    let usage = jsonl(&w.ok(&["usage", "model", "--all", "--json"]));
    let t = &usage.last().unwrap()["totals"];
    // streamed.jsonl's two messages once, and the resumed session's new one.
    assert_eq!(t["inputTokens"], 110 + 20);
    assert_eq!(t["outputTokens"], 49 + 9);
    assert_eq!(t["cacheReadTokens"], 2100 + 1200);
}

/// Lines of the right types with missing, mistyped or self-referring fields: imported
/// without a panic, into sessions that pass `pi session check`.
#[test]
fn odd_lines_never_panic_and_still_give_valid_sessions() {
    let w = World::new();
    let claude = [
        r#"{"type":"user","uuid":"o1","sessionId":"s","cwd":"/w"}"#,
        r#"{"type":"user","uuid":"o2","parentUuid":"o1","isCompactSummary":true,"sessionId":"s"}"#,
        r#"{"type":"system","subtype":"compact_boundary","uuid":"o3","parentUuid":null,"logicalParentUuid":"o3","sessionId":"s"}"#,
        r#"{"type":"user","uuid":"o3s","parentUuid":"o3","isCompactSummary":true,"sessionId":"s"}"#,
        r#"{"type":"assistant","uuid":"o4","parentUuid":"o3","sessionId":"s","message":{"id":"m","content":"plain","usage":{"output_tokens":"x"}}}"#,
        r#"{"type":"assistant","uuid":"o5","parentUuid":"o4","sessionId":"s","message":{"id":"m","content":[{"type":"tool_use"},{"type":"image"},42],"stop_reason":7}}"#,
        r#"{"type":"user","uuid":"o6","parentUuid":"o6","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result"},{"type":"text"}]}}"#,
        r#"[1,2,3]"#,
        r#""a string""#,
        r#"{"type":"user","uuid":"o7","parentUuid":"o5","sessionId":"s","timestamp":"not a time","message":{"content":null}}"#,
        r#"{"type":"assistant","uuid":"o8","parentUuid":"o7","sessionId":"s","message":{"content":[{"type":"thinking"},{"type":"redacted_thinking"}],"usage":null}}"#,
    ];
    let codex = [
        r#"{"type":"session_meta","payload":null}"#,
        r#"{"type":"response_item","payload":{"type":"function_call_output"}}"#,
        r#"{"type":"response_item","payload":{"type":"message","role":"user","content":"str"}}"#,
        r#"{"type":"response_item","payload":{"type":"function_call","arguments":"{not json"}}"#,
        r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":-5,"output_tokens":1e30}}}}"#,
        r#"{"type":"compacted","payload":{}}"#,
        r#"{"timestamp":12,"type":"turn_context","payload":{"model":7}}"#,
        r#"{"type":"response_item","payload":{"type":"reasoning","summary":"x"}}"#,
        r#"{"type":"event_msg","payload":{"type":"agent_message","message":["x"]}}"#,
    ];
    w.write("odd/claude.jsonl", claude.join("\n"));
    w.write("odd/codex.jsonl", codex.join("\n"));
    let (code, recs, stderr) = import(&w, &[w.path("odd").to_str().unwrap()]);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, 1, "two lines are not objects: {stderr}");
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_ne!(r["status"], "error", "{r}");
        let p = session_of(r);
        check_clean(&w, &p);
        w.ok(&["context", "build", &p]);
        w.ok(&["session", "tree", &p]);
    }
}

/// Images keep their data and type; the context carries them.
#[test]
fn images_are_kept() {
    let w = World::new();
    let out = w.ok(&[
        "session",
        "import",
        &shared("claude/claude-code-log/debug_image_message.jsonl"),
        "-o",
        "-",
    ]);
    let es = jsonl(&out);
    let images: Vec<&Value> = es
        .iter()
        .filter_map(|e| e["message"]["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "image")
        .collect();
    assert_eq!(images.len(), 2);
    for i in images {
        assert_eq!(i["mimeType"], "image/png");
        assert!(i["data"].as_str().unwrap().len() > 300_000);
    }
}

/// A Codex fork written without a `session_meta` (ccusage's branch-history fixture) repeats
/// its parent's first lines: it becomes a fork naming the parent's session, and the repeated
/// lines are neither written again nor counted again (input 900 + 400, not 900 + 1300).
#[test]
fn a_codex_fork_without_session_meta_is_not_counted_twice() {
    let w = World::new();
    let (code, recs, err) = import(&w, &[&shared("codex/ccusage/sessions/branch-history")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(recs.len(), 2, "{recs:?}");
    assert_eq!(recs[0]["kind"], "main");
    assert_eq!(recs[1]["kind"], "fork");
    assert_eq!(recs[1]["parentSession"], recs[0]["session"]);
    // Only the fork's own line is written: no copy of the parent's token count.
    let fork = std::fs::read_to_string(recs[1]["session"].as_str().unwrap()).unwrap();
    assert!(!fork.contains("\"input\":900"), "{fork}");
    let usage = jsonl(&w.ok(&["usage", "session", "--all", "--json"]));
    let totals = usage.iter().find(|r| r.get("totals").is_some()).unwrap();
    assert_eq!(totals["totals"]["inputTokens"], 1300, "{totals}");
    assert_eq!(totals["totals"]["cacheReadTokens"], 300, "{totals}");
    // The fork keeps the model its replayed turn context set.
    assert!(
        recs[1]["usage"]["openai/gpt-5.2"].is_object(),
        "{}",
        recs[1]
    );
}

/// Entries of an imported session, found by the text (or thinking) of their first block.
fn by_text<'a>(es: &'a [Value], text: &str) -> &'a Value {
    es.iter()
        .find(|e| {
            let b = &e["message"]["content"][0];
            b["text"] == text || b["thinking"] == text
        })
        .unwrap_or_else(|| panic!("no entry with {text:?}"))
}

/// Recording artifacts are folded, not made branches: local commands hung off one caveat
/// line, the id-less lines of one response hung off its prompt, and a prompt replayed with a
/// new uuid at the same time; a real rewind (another prompt, later) stays a branch.
#[test]
fn recording_artifacts_are_folded_and_a_real_rewind_stays_a_branch() {
    let w = World::new();
    let (code, recs, _) = import(&w, &[&own("claude/artifacts.jsonl")]);
    assert_eq!(code, 0);
    let r = &recs[0];
    assert_eq!(r["branches"], 2, "{r}");
    assert_eq!(r["messages"]["assistant"], 3);
    assert_eq!(r["messages"]["user"], 7);
    let replays: Vec<&Value> = r["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "replay")
        .collect();
    assert_eq!(replays.len(), 1, "{r}");
    assert_eq!(replays[0]["line"], 11);
    assert_eq!(replays[0]["uuid"], "u2r");
    let path = session_of(r);
    check_clean(&w, &path);
    let es = entries(&path);
    // One message from the two id-less lines.
    let plan = by_text(&es, "Checklist first.");
    assert_eq!(plan["message"]["content"][1]["text"], "Here is the plan.");
    // The later local command continues from the line before it.
    assert_eq!(
        by_text(&es, "<command-name>/cost</command-name>")["parentId"],
        by_text(&es, "Tagged v1.")["id"]
    );
    // "Tag it" once; the rewind is its sibling.
    let tags = es
        .iter()
        .filter(|e| e["message"]["content"][0]["text"] == "Tag it")
        .count();
    assert_eq!(tags, 1);
    assert_eq!(
        by_text(&es, "Tag it")["parentId"],
        by_text(&es, "Actually, write the notes first")["parentId"]
    );
}

/// The real Claude files whose raw graph has fake forks (local commands hung off the caveat
/// line, id-less streamed lines, a partial compaction) import with the branches they really
/// have; the one real rewind stays.
#[test]
fn real_claude_files_import_with_exactly_their_branches() {
    let w = World::new();
    let real = "claude/claude-code-log/real_projects";
    for (rel, branches) in [
        (
            &*format!(
                "{real}/-Users-dain-workspace-claude-code-log-sample/0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl"
            ),
            1,
        ),
        (
            &format!(
                "{real}/-Users-dain-workspace-claude-code-log-sample/71c9afe9-d9cc-4583-86b3-e62ba682b83a.jsonl"
            ),
            1,
        ),
        (
            &format!(
                "{real}/-Users-dain-workspace-claude-code-log-sample/12a546d1-83a7-49a6-abba-5400db340b43.jsonl"
            ),
            1,
        ),
        (
            &format!("{real}/-experiments-ideas/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"),
            2,
        ),
        ("claude/kato/claude-session.jsonl", 1),
        (
            "claude/claude-code-log/dag_compact_after_rewind_preserved.jsonl",
            2,
        ),
        ("claude/claude-code-log/dag_compact_after_rewind.jsonl", 2),
    ] {
        let (code, recs, err) = import(&w, &["--dry-run", &shared(rel)]);
        assert_eq!(code, 0, "{rel}: {err}");
        assert_eq!(recs[0]["branches"], branches, "{rel}");
    }
}

/// A partial compaction (`preservedSegment`): the preserved messages stay before the
/// compaction in their own order, the compaction keeps them (`firstKeptEntryId` = the first),
/// what follows continues after it, and the context is the summary, the preserved messages
/// and the rest. No cycle is left to break.
#[test]
fn a_partial_compaction_keeps_its_preserved_messages() {
    let w = World::new();
    let (code, recs, _) = import(
        &w,
        &[&shared(
            "claude/claude-code-log/dag_compact_after_rewind_preserved.jsonl",
        )],
    );
    assert_eq!(code, 0);
    let r = &recs[0];
    assert_eq!(r["compactions"], 1);
    assert!(
        r["repairs"].as_array().unwrap().is_empty(),
        "{}",
        r["repairs"]
    );
    let path = session_of(r);
    check_clean(&w, &path);
    let es = entries(&path);
    let c = es.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(c["firstKeptEntryId"], by_text(&es, "Second answer")["id"]);
    assert_eq!(c["parentId"], by_text(&es, "Kept going")["id"]);
    assert_eq!(
        by_text(&es, "Kept going")["parentId"],
        by_text(&es, "Keep going")["id"]
    );
    assert_eq!(by_text(&es, "After compaction")["parentId"], c["id"]);
    let ctx = jsonl(&w.ok(&["context", "build", &path]));
    let seen: Vec<String> = ctx
        .iter()
        .map(|m| match m["role"].as_str().unwrap() {
            "compactionSummary" => "summary".to_owned(),
            _ => m["content"][0]["text"].as_str().unwrap().to_owned(),
        })
        .collect();
    assert_eq!(
        seen,
        [
            "summary",
            "Second answer",
            "Keep going",
            "Kept going",
            "After compaction",
            "Final answer"
        ]
    );
    // Known only by `preservedSegment` (head, anchor, tail), with a tool call inside: the
    // segment runs from its head to the tail through the messages written before the boundary.
    let (code, recs, _) = import(&w, &[&own("claude/partial-compaction.jsonl")]);
    assert_eq!(code, 0);
    let r = &recs[0];
    assert_eq!(r["branches"], 1, "{r}");
    assert!(r["repairs"].as_array().unwrap().is_empty(), "{r}");
    let path = session_of(r);
    check_clean(&w, &path);
    let es = entries(&path);
    let c = es.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(
        c["firstKeptEntryId"],
        by_text(&es, "Try the parser tests")["id"]
    );
    assert_eq!(c["tokensBefore"], 9000);
    let result = es
        .iter()
        .find(|e| e["message"]["role"] == "toolResult")
        .unwrap();
    assert_eq!(
        by_text(&es, "The parser test fails.")["parentId"],
        result["id"]
    );
    let ctx = jsonl(&w.ok(&["context", "build", &path]));
    let roles: Vec<&str> = ctx.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "compactionSummary",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ]
    );
}

/// A message imported while Claude Code was still writing it (its later content blocks not
/// yet in the file) is completed when the file has grown: the new blocks are appended as a
/// completion after it, with the usage they add, and the turn continues from there. Nothing
/// written is changed, and the usage equals a fresh import's.
#[test]
fn a_message_still_streaming_is_completed_when_the_file_grows() {
    let w = World::new();
    let src = w.write(
        "src/0a1b2c3d.jsonl",
        std::fs::read(own("claude/streaming.jsonl")).unwrap(),
    );
    let src = src.to_str().unwrap();
    let (code, recs, _) = import(&w, &[src]);
    assert_eq!(code, 0);
    let path = session_of(&recs[0]);
    let before = std::fs::read(&path).unwrap();
    let mut grown = std::fs::read(src).unwrap();
    grown.extend(std::fs::read(own("claude/streaming.growth")).unwrap());
    std::fs::write(src, &grown).unwrap();
    let (code, recs, _) = import(&w, &["--dry-run", src]);
    assert_eq!(code, 0);
    assert_eq!(recs[0]["entries"], 3);
    let (code, recs, _) = import(&w, &[src]);
    assert_eq!(code, 0);
    assert_eq!(recs[0]["status"], "appended");
    assert_eq!(recs[0]["entries"], 3);
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&before), "nothing written is changed");
    check_clean(&w, &path);
    let es = entries(&path);
    let partial = by_text(&es, "Read the log.");
    let completion = es
        .iter()
        .find(|e| e["message"]["content"][0]["type"] == "toolCall")
        .unwrap();
    assert_eq!(completion["parentId"], partial["id"]);
    assert_eq!(completion["message"]["stopReason"], "toolUse");
    assert_eq!(completion["message"]["usage"]["output"], 30 - 11);
    assert_eq!(completion["message"]["usage"]["input"], 0);
    let result = es
        .iter()
        .find(|e| e["message"]["role"] == "toolResult")
        .unwrap();
    assert_eq!(result["parentId"], completion["id"]);
    assert_eq!(result["message"]["toolName"], "Read");
    let ctx = jsonl(&w.ok(&["context", "build", &path]));
    let roles: Vec<&str> = ctx.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "assistant", "toolResult", "assistant"]
    );
    // Usage counted as a fresh import of the grown file counts it.
    let usage = jsonl(&w.ok(&["usage", "model", "--all", "--json"]));
    let t = &usage.last().unwrap()["totals"];
    assert_eq!(t["inputTokens"], 20);
    assert_eq!(t["outputTokens"], 30 + 7);
    assert_eq!(t["cacheReadTokens"], 200);
    let fresh = World::new();
    let f = fresh.write("src/0a1b2c3d.jsonl", &grown);
    import(&fresh, &[f.to_str().unwrap()]);
    let usage = jsonl(&fresh.ok(&["usage", "model", "--all", "--json"]));
    assert_eq!(&usage.last().unwrap()["totals"], t);
    // Once more: nothing.
    let (_, recs, _) = import(&w, &[src]);
    assert_eq!(recs[0]["status"], "unchanged");
    assert_eq!(std::fs::read(&path).unwrap(), after);
}

/// `-o FILE` on a file with a sidechain writes the sidechain next to FILE, naming FILE as
/// its parent, and the record lists it; `-o -` cannot hold two sessions and refuses, saying
/// what would be lost. A main file's subagent files are not imported with -o, and the
/// record says so.
#[test]
fn output_file_keeps_the_sidechain_beside_it_and_stdout_refuses() {
    let w = World::new();
    let src = shared("claude/claude-code-log/sidechain.jsonl");
    let file = w.path("one.jsonl");
    let (code, recs, _) = import(&w, &[&src, "-o", file.to_str().unwrap()]);
    assert_eq!(code, 0);
    let side = w.path("one.sidechain.jsonl");
    let r = &recs[0];
    assert_eq!(r["sidechains"][0]["kind"], "sidechain");
    assert_eq!(r["sidechains"][0]["session"], side.to_str().unwrap());
    assert_eq!(r["sidechains"][0]["status"], "created");
    assert_eq!(r["subagentSessions"], 1);
    check_clean(&w, side.to_str().unwrap());
    assert_eq!(
        entries(side.to_str().unwrap())[0]["parentSession"],
        file.to_str().unwrap()
    );
    assert!(
        r["sidechains"][0]["messages"]["assistant"]
            .as_u64()
            .unwrap()
            > 0
    );
    let out = w
        .pi()
        .args(["session", "import", &src, "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a sidechain of") && err.contains("without -o"),
        "{err}"
    );
    let main = shared(
        "claude/claude-code-log/minimal_showcase/55550000-0000-4000-8000-000000000001.jsonl",
    );
    let (code, recs, err) = import(&w, &[&main, "-o", w.path("m.jsonl").to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["notImported"].as_array().unwrap().len(), 2);
    assert!(err.contains("2 subagent file(s) are not imported"), "{err}");
}
