//! The session summary cache (`<agent dir>/cache/session-summaries`) and the usage-facts
//! cache (`<agent dir>/cache/usage-facts`): whatever happens to a session file between two
//! uses, what `pi session list` and `pi usage` print with the caches equals what they print
//! with none.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{World, jsonl};

fn header(id: &str) -> String {
    format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-03-01T10:00:00.000Z\",\"cwd\":\"/p\"}}\n"
    )
}

fn user(id: &str, parent: &str, text: &str, ts: &str) -> String {
    format!(
        "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n"
    )
}

fn assistant(id: &str, parent: &str, model: &str, cost: f64, ts: &str) -> String {
    format!(
        "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"ok\"}}],\"provider\":\"anthropic\",\"model\":\"{model}\",\"usage\":{{\"input\":10,\"output\":5,\"cacheRead\":2,\"cacheWrite\":1,\"totalTokens\":18,\"cost\":{{\"total\":{cost}}}}},\"stopReason\":\"stop\"}}}}\n"
    )
}

fn name(id: &str, parent: &str, name: &str) -> String {
    format!(
        "{{\"type\":\"session_info\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2025-03-01T12:00:00.000Z\",\"name\":\"{name}\"}}\n"
    )
}

fn session_text(id: &str, first: &str) -> String {
    let mut s = header(id);
    s += &user("a0000001", "", first, "2025-03-01T10:01:00.000Z");
    s += &assistant(
        "a0000002",
        "a0000001",
        "m1",
        0.25,
        "2025-03-01T10:02:00.000Z",
    );
    s += &user(
        "a0000003",
        "a0000002",
        "second question",
        "2025-03-02T09:00:00.000Z",
    );
    s += &assistant(
        "a0000004",
        "a0000003",
        "m2",
        0.125,
        "2025-03-02T09:01:00.000Z",
    );
    s
}

fn cache_dir(w: &World) -> PathBuf {
    w.agent().join("cache").join("session-summaries")
}

fn list(w: &World) -> String {
    w.ok(&["session", "list", "--all", "--json"])
}

/// The usage reports that read the usage-facts cache, one after another.
fn usage(w: &World) -> String {
    let mut out = String::new();
    for by in ["daily", "session", "model"] {
        out += &w.ok(&["usage", by, "--all", "--json", "--timezone", "UTC"]);
    }
    out + &w.ok(&["usage", "--all", "--format", "jsonl"])
}

fn clear_caches(w: &World) {
    std::fs::remove_dir_all(cache_dir(w)).ok();
    std::fs::remove_dir_all(w.agent().join("cache").join("usage-facts")).ok();
}

/// The listing with the cache as it is, then with none: they must be equal. The cold run
/// leaves a record, which a later pause makes trustworthy (not written in the same clock
/// tick as the file's last change).
fn check(w: &World, what: &str) -> String {
    let warm = (list(w), usage(w));
    clear_caches(w);
    let cold = (list(w), usage(w));
    assert_eq!(warm.0, cold.0, "list after {what}");
    assert_eq!(warm.1, cold.1, "usage after {what}");
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!((list(w), usage(w)), cold, "after {what}, rebuilt");
    cold.0
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// Writes `text` over the file's bytes at `at` (same inode, same size unless past the end).
fn overwrite(path: &Path, at: u64, text: &str) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(text.as_bytes(), at).unwrap();
}

#[test]
fn the_cache_never_changes_the_answer() {
    let w = World::new();
    let dir = w.agent().join("sessions").join("--p--");
    std::fs::create_dir_all(&dir).unwrap();
    let a = dir.join("a.jsonl");
    let b = dir.join("b.jsonl");
    std::fs::write(&a, session_text("sess-a", "hello there")).unwrap();
    std::fs::write(&b, session_text("sess-b", "other one")).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let first = check(&w, "the first listing");
    let rows = jsonl(&first);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["messageCount"], 4);
    assert_eq!(rows[0]["cost"], 0.375);
    let log = cache_dir(&w).join("records.jsonl");
    assert!(std::fs::read_to_string(&log).unwrap().lines().count() >= 2);
    let facts = w.agent().join("cache").join("usage-facts");
    assert!(facts.read_dir().unwrap().count() >= 2);
    let cost = |w: &World| -> f64 {
        let out = w.ok(&["usage", "daily", "--all", "--json"]);
        jsonl(&out).last().unwrap()["totals"]["totalCost"]
            .as_f64()
            .unwrap()
    };
    // b's messages have a's times and tokens: copies, counted once.
    assert_eq!(cost(&w), 0.375);

    // An append by another program, then one through pi.
    append(&a, &name("a0000005", "a0000004", "Named"));
    let out = check(&w, "an append");
    assert!(out.contains("\"name\":\"Named\""), "{out}");
    w.ok_in(
        &["session", "append", a.to_str().unwrap()],
        &format!("{}\n", crate::common::user("appended by pi")),
    );
    let out = check(&w, "an append by pi");
    assert!(jsonl(&out).iter().any(|r| r["messageCount"] == 5), "{out}");

    // A same-size edit in the middle (the first message), then at the end.
    let text = std::fs::read_to_string(&a).unwrap();
    let at = text.find("hello there").unwrap() as u64;
    overwrite(&a, at, "HELLO THERE");
    let out = check(&w, "a same-size edit");
    assert!(out.contains("HELLO THERE"), "{out}");
    let len = std::fs::metadata(&a).unwrap().len();
    let text = std::fs::read_to_string(&a).unwrap();
    let at = text.rfind("appended by pi").unwrap() as u64;
    overwrite(&a, at, "APPENDED BY PI");
    assert_eq!(std::fs::metadata(&a).unwrap().len(), len);
    check(&w, "a same-size edit of the last line");

    // A same-size edit of the numbers a report adds up.
    let text = std::fs::read_to_string(&a).unwrap();
    let at = text.find("\"total\":0.25").unwrap() as u64;
    overwrite(&a, at, "\"total\":0.75");
    check(&w, "a same-size edit of a cost");
    assert_eq!(cost(&w), 0.875);

    // A truncation to fewer lines, and into the middle of a line.
    let text = std::fs::read_to_string(&a).unwrap();
    let cut = text.match_indices('\n').nth(2).unwrap().0 + 1;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&a)
        .unwrap()
        .set_len(cut as u64)
        .unwrap();
    let out = check(&w, "a truncation");
    assert!(jsonl(&out).iter().any(|r| r["messageCount"] == 2), "{out}");
    append(
        &a,
        &user("a0000003", "a0000002", "torn", "2025-03-03T00:00:00.000Z")[..40],
    );
    check(&w, "an incomplete last line");
    append(
        &a,
        &user("a0000003", "a0000002", "torn", "2025-03-03T00:00:00.000Z")[40..],
    );
    let out = check(&w, "the last line completed");
    assert!(jsonl(&out).iter().any(|r| r["messageCount"] == 3), "{out}");

    // A rename: the record follows the inode, the listing the new path.
    let renamed = dir.join("renamed.jsonl");
    std::fs::rename(&a, &renamed).unwrap();
    let out = check(&w, "a rename");
    assert!(
        out.contains("renamed.jsonl") && !out.contains("/a.jsonl"),
        "{out}"
    );

    // Replaced in place by another session (same inode), first longer, then same size.
    let other = session_text("sess-c", "replaced!!!");
    std::fs::write(
        &renamed,
        format!("{other}{}", name("c0000009", "a0000004", "C")),
    )
    .unwrap();
    let out = check(&w, "a replacement");
    assert!(
        out.contains("sess-c") && out.contains("\"name\":\"C\""),
        "{out}"
    );
    let same = session_text("sess-d", "replaced!!!");
    let same = format!("{same}{}", name("c0000009", "a0000004", "D"));
    assert_eq!(
        same.len() as u64,
        std::fs::metadata(&renamed).unwrap().len()
    );
    std::fs::write(&renamed, &same).unwrap();
    let out = check(&w, "a same-size replacement");
    assert!(
        out.contains("sess-d") && out.contains("\"name\":\"D\""),
        "{out}"
    );

    // A record cut short at the start of the log, the next one appended on its line.
    let log = cache_dir(&w).join("records.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(&log, format!("{}{text}", &first[..first.len() / 2])).unwrap();
    check(&w, "a record cut short");

    // A record that is not a record.
    for e in cache_dir(&w).read_dir().unwrap() {
        std::fs::write(e.unwrap().path(), "{\"magic\":").unwrap();
    }
    for e in facts.read_dir().unwrap() {
        let p = e.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 7]).unwrap();
    }
    check(&w, "a damaged cache");
}

#[test]
fn list_filters_by_date_and_shows_size_and_cost() {
    let w = World::new();
    let dir = w.agent().join("sessions").join("--p--");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.jsonl"), session_text("sess-a", "in march")).unwrap();
    let mut late = header("sess-b");
    late += &user("b0000001", "", "in april", "2025-04-10T10:01:00.000Z");
    std::fs::write(dir.join("b.jsonl"), &late).unwrap();
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["session", "list", "--all", "--json"];
        all.extend_from_slice(args);
        jsonl(&w.ok(&all))
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&[]), ["sess-b", "sess-a"]);
    assert_eq!(ids(&["--since", "2025-04-01"]), ["sess-b"]);
    assert_eq!(ids(&["--until", "2025-03-31"]), ["sess-a"]);
    assert_eq!(
        ids(&["--since", "2025-03-02T09:01:00Z", "--until", "20250302"]),
        ["sess-a"]
    );
    assert!(ids(&["--until", "2025-03-02T09:00:59Z", "--since", "2025-03-01"]).is_empty());
    let rows = jsonl(&w.ok(&["session", "list", "--all", "--json"]));
    assert_eq!(
        rows[1]["bytes"],
        std::fs::metadata(dir.join("a.jsonl")).unwrap().len()
    );
    assert_eq!(rows[1]["cost"], 0.375);
    assert_eq!(rows[0]["cost"], 0.0);
    let bad = w
        .pi()
        .args(["session", "list", "--since", "yesterday"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("YYYY-MM-DD"));
}
