//! `pi usage --json` against the reference 1.6's session totals on files it wrote
//! (`session_totals_equal_reference_1_6`, goldens by scripts/goldens/usage16.mjs), and
//! against `@ccusage/pi` 18.0.11's `--json` on the same directory
//! (recorded by scripts/goldens/usage.py into tests/fixtures/usage/). Tokens must be equal,
//! costs equal up to floating-point summation order. Model names: ours are provider/model,
//! theirs `[pi] model` (breakdowns are compared after merging ours by model). Sessions: a
//! message a fork copied counts in the earliest file for pi, in whichever file the directory
//! lists first for ccusage, so the fork and its parent are compared as a pair.

use serde_json::Value;

use crate::common::{World, fixture, jsonl};

pub(crate) fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

const FIELDS: [&str; 4] = [
    "inputTokens",
    "outputTokens",
    "cacheCreationTokens",
    "cacheReadTokens",
];

fn same_numbers(ours: &Value, theirs: &Value, cost: &str, what: &str) {
    for f in FIELDS {
        assert_eq!(ours[f], theirs[f], "{what}: {f}");
    }
    let (a, b) = (ours[cost].as_f64().unwrap(), theirs[cost].as_f64().unwrap());
    assert!((a - b).abs() < 1e-9, "{what}: {cost} {a} != {b}");
}

fn merged_breakdowns(row: &Value) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for b in row["modelBreakdowns"].as_array().unwrap() {
        let name = b["modelName"].as_str().unwrap();
        let name = format!("[pi] {}", name.split_once('/').map_or(name, |x| x.1));
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, acc)) => {
                for f in FIELDS.iter().chain(&["cost"]) {
                    acc[*f] = (acc[*f].as_f64().unwrap() + b[*f].as_f64().unwrap()).into();
                }
            }
            None => out.push((name, b.clone())),
        }
    }
    out
}

fn compare_rows(ours: &[Value], theirs: &[Value], key: &str, what: &str) {
    assert_eq!(ours.len(), theirs.len(), "{what}: rows");
    for (o, t) in ours.iter().zip(theirs) {
        assert_eq!(o[key], t[key], "{what}: order");
        let what = format!("{what} {}", t[key]);
        same_numbers(o, t, "totalCost", &what);
        let mut mine = merged_breakdowns(o);
        mine.sort_by(|a, b| a.0.cmp(&b.0));
        let mut theirs: Vec<&Value> = t["modelBreakdowns"].as_array().unwrap().iter().collect();
        theirs.sort_by_key(|b| b["modelName"].as_str().unwrap().to_owned());
        assert_eq!(mine.len(), theirs.len(), "{what}: models");
        for ((n, m), b) in mine.iter().zip(theirs) {
            assert_eq!(n, b["modelName"].as_str().unwrap());
            for f in FIELDS {
                assert_eq!(m[f].as_f64(), b[f].as_f64(), "{what} {n}: {f}");
            }
            assert!((m["cost"].as_f64().unwrap() - b["cost"].as_f64().unwrap()).abs() < 1e-9);
        }
    }
}

const PAIR: [&str; 2] = [
    "0193b000-0000-7000-8000-000000000002",
    "0193b000-0000-7000-8000-000000000003",
];

fn compare_sessions(ours: &[Value], theirs: &[Value], what: &str) {
    let single = |rows: &[Value]| -> Vec<Value> {
        rows.iter()
            .filter(|r| !PAIR.contains(&r["sessionId"].as_str().unwrap()))
            .cloned()
            .collect()
    };
    let (o, t) = (single(ours), single(theirs));
    assert_eq!(o.len(), t.len(), "{what}: sessions");
    for t in &t {
        let o = o
            .iter()
            .find(|o| o["sessionId"] == t["sessionId"])
            .expect("session");
        assert_eq!(o["lastActivity"], t["lastActivity"]);
        same_numbers(o, t, "totalCost", &format!("{what} {}", t["sessionId"]));
    }
    let pair_sum = |rows: &[Value]| {
        let mut acc = serde_json::json!({"inputTokens":0.0,"outputTokens":0.0,"cacheCreationTokens":0.0,"cacheReadTokens":0.0,"totalCost":0.0});
        for r in rows
            .iter()
            .filter(|r| PAIR.contains(&r["sessionId"].as_str().unwrap()))
        {
            for f in FIELDS.iter().chain(&["totalCost"]) {
                acc[*f] = (acc[*f].as_f64().unwrap() + r[*f].as_f64().unwrap()).into();
            }
        }
        acc
    };
    let (a, b) = (pair_sum(ours), pair_sum(theirs));
    for f in FIELDS {
        assert_eq!(a[f].as_f64(), b[f].as_f64(), "{what}: fork pair {f}");
    }
}

#[test]
fn numbers_equal_ccusage_pi() {
    let goldens: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("usage/goldens.json")).unwrap())
            .unwrap();
    let w = World::new();
    copy_dir(&fixture("usage/sessions"), &w.agent().join("sessions"));
    for run in goldens["runs"].as_array().unwrap() {
        let args: Vec<&str> = run["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let what = args.join(" ");
        let out = w
            .pi()
            .env("TZ", "UTC")
            .arg("usage")
            .args(&args)
            .args(["--all", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut rows = jsonl(&String::from_utf8(out.stdout).unwrap());
        let totals = rows.pop().unwrap();
        let theirs = &run["output"];
        same_numbers(
            &totals["totals"],
            &theirs["totals"],
            "totalCost",
            &format!("{what}: totals"),
        );
        match args[0] {
            "daily" => compare_rows(&rows, theirs["daily"].as_array().unwrap(), "date", &what),
            "monthly" => compare_rows(&rows, theirs["monthly"].as_array().unwrap(), "month", &what),
            _ => compare_sessions(&rows, theirs["sessions"].as_array().unwrap(), &what),
        }
    }
}

/// The numbers of a `pi usage` record (or breakdown) as `[input, output, cacheRead,
/// cacheWrite, total]`.
fn counts(v: &Value) -> [f64; 5] {
    [
        "inputTokens",
        "outputTokens",
        "cacheReadTokens",
        "cacheCreationTokens",
        "totalTokens",
    ]
    .map(|k| v[k].as_f64().unwrap())
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-9, "{what}: {a} != {b}");
}

/// `pi usage session` against the reference 1.6's session totals (getSessionStats) and cost
/// breakdown (getUsageCostBreakdown) on files 1.6 wrote with every entry type that carries
/// usage (recorded by scripts/goldens/usage16.mjs into tests/fixtures/usage/v16/). The
/// assistant messages' share (`sourceBreakdowns`) is what ccusage would count.
#[test]
fn session_totals_equal_reference_1_6() {
    let goldens: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("usage/v16/goldens.json")).unwrap())
            .unwrap();
    let w = World::new();
    copy_dir(&fixture("usage/v16/sessions"), &w.agent().join("sessions"));
    let out = w
        .pi()
        .env("TZ", "UTC")
        .args(["usage", "session", "--all", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut rows = jsonl(&String::from_utf8(out.stdout).unwrap());
    let totals = rows.pop().unwrap();
    let sessions = goldens["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), sessions.len());
    let mut sum = [0.0; 5];
    for g in sessions {
        let id = g["stats"]["sessionId"].as_str().unwrap();
        let row = rows.iter().find(|r| r["sessionId"] == id).expect(id);
        let t = &g["stats"]["tokens"];
        let theirs =
            ["input", "output", "cacheRead", "cacheWrite", "total"].map(|k| t[k].as_f64().unwrap());
        assert_eq!(counts(row), theirs, "{id}: tokens");
        close(
            row["totalCost"].as_f64().unwrap(),
            g["stats"]["cost"].as_f64().unwrap(),
            &format!("{id}: cost"),
        );
        for (s, x) in sum.iter_mut().zip(theirs) {
            *s += x;
        }
        // 1.6's rows by provider/model (responseModel first), tool results and summaries
        // together; it leaves out rows with no tokens and no cost.
        let ours: Vec<&Value> = row["modelBreakdowns"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["totalTokens"] != 0 || b["cost"] != 0)
            .collect();
        let theirs = g["breakdown"].as_array().unwrap();
        assert_eq!(ours.len(), theirs.len(), "{id}: models");
        for b in theirs {
            let key = b["key"].as_str().unwrap();
            let m = ours
                .iter()
                .find(|m| m["modelName"] == key)
                .unwrap_or_else(|| panic!("{id}: no row {key}"));
            assert_eq!(
                m["totalTokens"].as_f64(),
                b["tokens"].as_f64(),
                "{id} {key}"
            );
            close(
                m["cost"].as_f64().unwrap(),
                b["cost"].as_f64().unwrap(),
                key,
            );
        }
        // Where the tokens went: the sources add up to the row, and the assistant messages'
        // share is 1.6's sum over assistant messages alone.
        let sources = row["sourceBreakdowns"].as_array().unwrap();
        let mut added = [0.0; 5];
        for s in sources {
            for (a, x) in added.iter_mut().zip(counts(s)) {
                *a += x;
            }
        }
        assert_eq!(added, counts(row), "{id}: sources add up");
        let a = &g["assistantOnly"];
        let assistant = sources.iter().find(|s| s["source"] == "assistant").unwrap();
        assert_eq!(
            counts(assistant)[..4],
            ["input", "output", "cacheRead", "cacheWrite"].map(|k| a[k].as_f64().unwrap()),
            "{id}: assistant share"
        );
        close(
            assistant["cost"].as_f64().unwrap(),
            a["cost"].as_f64().unwrap(),
            &format!("{id}: assistant cost"),
        );
    }
    assert_eq!(counts(&totals["totals"]), sum, "totals");
    // `pi session list` gives each session 1.6's session cost too.
    let out = w
        .pi()
        .args(["session", "list", "--all", "--json"])
        .output()
        .unwrap();
    let listed = jsonl(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(listed.len(), sessions.len());
    for g in sessions {
        let id = &g["stats"]["sessionId"];
        let l = listed.iter().find(|l| l["id"] == *id).unwrap();
        close(
            l["cost"].as_f64().unwrap(),
            g["stats"]["cost"].as_f64().unwrap(),
            &format!("{id}: session list cost"),
        );
    }
    // Every usage-carrying entry type of 1.6's session format is in the goldens.
    let kinds: Vec<(&str, Option<&str>)> = totals["totals"]["sourceBreakdowns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["source"].as_str().unwrap(), s["kind"].as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("assistant", None),
            ("toolResult", None),
            ("usage", Some("cache_warm")),
            ("usage", Some("title_generation")),
            ("compaction", None),
            ("branch_summary", None),
        ]
    );
}
