//! Compatibility with the reference implementation, both ways: goldens recorded by
//! scripts/goldens/session.mjs (the reference's view of upstream-written, generated and
//! pi-written files) compared with pi's view of the same files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

fn sessions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions")
}

/// Runs `f` on a thread with a large stack (the goldens nest a thousand levels deep).
fn big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

fn parse_deep(text: &str) -> Value {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).unwrap()
}

/// Tree nodes flattened in pre-order: (id, depth, label, labelTimestamp).
fn flatten(roots: &[Value]) -> Vec<(String, usize, Option<String>, Option<String>)> {
    let mut out = Vec::new();
    let mut stack: Vec<(&Value, usize)> = roots.iter().rev().map(|n| (n, 0)).collect();
    while let Some((n, d)) = stack.pop() {
        let s = |k: &str| n.get(k).and_then(Value::as_str).map(str::to_owned);
        out.push((s("id").unwrap(), d, s("label"), s("labelTimestamp")));
        for c in n["children"].as_array().unwrap().iter().rev() {
            stack.push((c, d + 1));
        }
    }
    out
}

fn fnv64(b: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in b {
        h ^= u64::from(c);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Replaces `"<8 hex>"` tokens that are entry ids by `"#<position>"`.
fn normalize_ids(line: &str, pos: &HashMap<String, usize>) -> String {
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"'
            && i + 9 < b.len()
            && b[i + 9] == b'"'
            && b[i + 1..i + 9]
                .iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
            && let Some(p) = pos.get(&line[i + 1..i + 9])
        {
            out.push_str(&format!("\"#{p}\""));
            i += 10;
            continue;
        }
        let ch = line[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn check_golden(name: &str) {
    let golden_path = sessions_dir().join(format!("{name}.golden.json"));
    // Flatten the deep tree on the big stack and keep only the flat form.
    let (g, golden_flat) = big_stack(move || {
        let mut g = parse_deep(&std::fs::read_to_string(golden_path).unwrap());
        let tree = g.as_object_mut().unwrap().remove("tree").unwrap();
        let flat = flatten(tree.as_array().unwrap());
        (g, flat)
    });
    let w = World::new();
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join(g["input"].as_str().unwrap());
    // A private session directory holding a copy, so `list` sees just this file.
    let dir = w.path("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(input.file_name().unwrap());
    std::fs::copy(&input, &file).unwrap();
    let f = file.to_str().unwrap();
    let golden_ids: Vec<String> = g["entryIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let ours: Vec<String> = w
        .ok(&["session", "log", "--all", f, "--filter", ".id", "-r"])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(ours.len(), golden_ids.len(), "{name}: entry count");
    let migrated = g.get("rewrittenLineHashes").is_some();
    // Position maps (for v1 files the reference's ids are random; compare positions).
    let gpos: HashMap<String, usize> = golden_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), i))
        .collect();
    let opos: HashMap<String, usize> = ours
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), i))
        .collect();
    if !migrated {
        assert_eq!(ours, golden_ids, "{name}: entry ids");
    }
    let as_pos = |ids: Vec<String>, map: &HashMap<String, usize>| -> Vec<usize> {
        ids.iter().map(|id| map[id]).collect()
    };
    // The active path.
    let branch: Vec<String> = w
        .ok(&["session", "log", f, "--filter", ".id", "-r"])
        .lines()
        .map(str::to_owned)
        .collect();
    let gbranch: Vec<String> = g["branch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        as_pos(branch, &opos),
        as_pos(gbranch, &gpos),
        "{name}: branch"
    );
    // The tree: same shape, same order, same labels.
    let tree_out = w.ok(&["session", "tree", "--json", "--nested", f]);
    let ours_flat = big_stack(move || {
        let roots: Vec<Value> = tree_out.lines().map(parse_deep).collect();
        flatten(&roots)
    });
    assert_eq!(ours_flat.len(), golden_flat.len(), "{name}: tree size");
    for (o, gn) in ours_flat.iter().zip(&golden_flat) {
        assert_eq!(opos[&o.0], gpos[&gn.0], "{name}: tree order");
        assert_eq!(
            (o.1, &o.2, &o.3),
            (gn.1, &gn.2, &gn.3),
            "{name}: node {}",
            o.0
        );
    }
    // The listing.
    let list = jsonl(&w.ok(&[
        "--session-dir",
        dir.to_str().unwrap(),
        "session",
        "list",
        "--json",
    ]));
    assert_eq!(list.len(), 1, "{name}: list");
    let info = &list[0];
    let gi = &g["info"];
    for k in [
        "id",
        "cwd",
        "created",
        "modified",
        "messageCount",
        "firstMessage",
    ] {
        assert_eq!(info[k], gi[k], "{name}: info.{k}");
    }
    assert_eq!(
        info.get("name").cloned().unwrap_or(Value::Null),
        gi["name"],
        "{name}: info.name"
    );
    // Small sessions: the reference's context is exactly pi's, message for message (the
    // compaction summary first when there is one, as pi context build gives it).
    if let Some(expected) = g["context"].get("json").and_then(Value::as_array) {
        let built = w.ok(&["context", "build", f]);
        let ours: Vec<String> = built.lines().map(str::to_owned).collect();
        let expected: Vec<&str> = expected.iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(ours, expected, "{name}: context messages");
    }
    // A v1 file: `pi session migrate` writes what the reference rewrites it to.
    if let Some(hashes) = g.get("rewrittenLineHashes") {
        let out = jsonl(&w.ok(&["session", "migrate", f]));
        assert_eq!(out[0]["migrated"], true);
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let hashes = hashes.as_array().unwrap();
        assert_eq!(lines.len(), hashes.len(), "{name}: migrated line count");
        for (n, (line, h)) in lines.iter().zip(hashes).enumerate() {
            assert_eq!(
                fnv64(normalize_ids(line, &opos).as_bytes()),
                h.as_str().unwrap(),
                "{name}: migrated line {} differs: {}",
                n + 1,
                &line[..line.len().min(300)]
            );
        }
        // And the migrated file reads the same as before.
        let again: Vec<String> = w
            .ok(&["session", "log", "--all", f, "--filter", ".id", "-r"])
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(again, ours);
    }
}

#[test]
fn upstream_v1_fixture_matches_reference() {
    check_golden("before-compaction");
}

#[test]
fn generated_sessions_match_reference() {
    for s in 1..=3 {
        check_golden(&format!("gen-200-s{s}"));
    }
}

#[test]
fn pi_written_session_opens_in_reference() {
    check_golden("pi-written");
}

#[test]
fn session_continued_by_reference_reads_back() {
    check_golden("pi-written.continued");
    let w = World::new();
    let f = sessions_dir().join("pi-written.continued.jsonl");
    let out = w
        .pi()
        .args(["session", "check", f.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let last = w.ok(&["session", "log", f.to_str().unwrap(), "-n", "1"]);
    assert!(last.contains("reference reply"), "{last}");
}

/// The scenario still writes exactly the file the reference was checked against.
#[test]
fn scenario_writes_the_recorded_file() {
    let w = World::new();
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let out = std::process::Command::new("sh")
        .arg(sessions_dir().join("scenario.sh"))
        .current_dir(w.proj())
        .env_clear()
        .env(
            "PATH",
            format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap()),
        )
        .env("HOME", w.path("home"))
        .env("PI_CODING_AGENT_DIR", w.agent())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let written = std::fs::read_to_string(path)
        .unwrap()
        .replace(w.proj().to_str().unwrap(), "[PROJ]");
    let recorded = std::fs::read_to_string(sessions_dir().join("pi-written.jsonl")).unwrap();
    assert_eq!(written, recorded);
}
