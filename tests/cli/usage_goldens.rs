//! `pi usage --json` against `@ccusage/pi` 18.0.11's `--json` on the same directory
//! (recorded by scripts/goldens/usage.py into tests/fixtures/usage/). Tokens must be equal,
//! costs equal up to floating-point summation order. Model names: ours are provider/model,
//! theirs `[pi] model` (breakdowns are compared after merging ours by model). Sessions: a
//! message a fork copied counts in the earliest file for pi, in whichever file the directory
//! lists first for ccusage, so the fork and its parent are compared as a pair.

use serde_json::Value;

use crate::common::{World, fixture, jsonl};

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
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
