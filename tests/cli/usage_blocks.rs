//! `pi usage blocks`: 5-hour billing windows on a session whose entries were written at
//! chosen times, the clock fixed at `2026-01-02T03:04:05.678Z` (`PI_NOW`).

use serde_json::{Value, json};

use crate::common::sessions::write;
use crate::common::{World, jsonl};

/// An assistant message at `ts` with `input`/`output` tokens and `cost` dollars.
fn answer(id: &str, ts: &str, model: &str, input: u64, output: u64, cost: f64) -> Value {
    json!({"type":"message","id":id,"parentId":null,"timestamp":ts,
           "message":{"role":"assistant","content":[],"api":"a","provider":"anthropic",
                      "model":model,"stopReason":"stop","timestamp":0,
                      "usage":{"input":input,"output":output,"cacheRead":0,"cacheWrite":0,
                               "totalTokens":input + output,"cost":{"total":cost}}}})
}

/// Three blocks in the project's session:
/// - 2026-01-01 08:00–13:00: four messages (08:10 … 12:30), two models;
/// - 13:00–18:00: the message of 13:20 (over 5 hours after 08:00) and cache warming at 14:00;
/// - a gap from 19:00 (5 hours after 14:00) to 01:45;
/// - 2026-01-02 01:00–06:00, active at 03:04: 01:45 and 02:45, 3,000 tokens, $0.90.
fn world() -> World {
    let w = World::new();
    let warm = json!({"type":"usage","id":"w1","parentId":null,
        "timestamp":"2026-01-01T14:00:00.000Z","kind":"cache_warm","provider":"anthropic",
        "model":"claude-sonnet-4-5","usage":{"input":0,"output":0,"cacheRead":500,
        "cacheWrite":0,"totalTokens":500,"cost":{"total":0.05}}});
    let entries = [
        answer(
            "a1",
            "2026-01-01T08:10:00.000Z",
            "claude-sonnet-4-5",
            1000,
            100,
            0.1,
        ),
        answer(
            "a2",
            "2026-01-01T09:40:00.000Z",
            "claude-haiku-4-5",
            2000,
            200,
            0.2,
        ),
        answer(
            "a3",
            "2026-01-01T11:55:00.000Z",
            "claude-sonnet-4-5",
            3000,
            300,
            0.3,
        ),
        answer(
            "a4",
            "2026-01-01T12:30:00.000Z",
            "claude-sonnet-4-5",
            400,
            0,
            0.04,
        ),
        answer(
            "a5",
            "2026-01-01T13:20:00.000Z",
            "claude-sonnet-4-5",
            700,
            100,
            0.08,
        ),
        warm,
        answer(
            "a6",
            "2026-01-02T01:45:00.000Z",
            "claude-sonnet-4-5",
            900,
            100,
            0.3,
        ),
        answer(
            "a7",
            "2026-01-02T02:45:00.000Z",
            "claude-sonnet-4-5",
            1800,
            200,
            0.6,
        ),
    ];
    write(
        &w,
        &w.proj(),
        "0193b000-0000-7000-8000-000000000001",
        "2026-01-01T08:00:00.000Z",
        None,
        &entries,
        "2026-01-02T02:45:00.000Z",
    );
    w
}

fn blocks(w: &World, args: &[&str]) -> Vec<Value> {
    let out = w
        .pi()
        .env("TZ", "UTC")
        .args(["usage", "blocks", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    jsonl(&String::from_utf8(out.stdout).unwrap())
}

fn table(w: &World, columns: &str, args: &[&str]) -> String {
    let out = w
        .pi()
        .env("TZ", "UTC")
        .env("COLUMNS", columns)
        .args(["usage", "blocks", "--format", "human", "--color", "never"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Block boundaries, gap rows, the active block, its burn rate and projection.
#[test]
fn blocks_gaps_and_the_active_block() {
    let w = world();
    let rows = blocks(&w, &[]);
    let starts: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["startTime"].as_str())
        .collect();
    assert_eq!(
        starts,
        [
            "2026-01-01T08:00:00.000Z",
            "2026-01-01T13:00:00.000Z",
            "2026-01-01T19:00:00.000Z",
            "2026-01-02T01:00:00.000Z"
        ]
    );
    let first = &rows[0];
    assert_eq!(first["id"], "2026-01-01T08:00:00.000Z");
    assert_eq!(first["endTime"], "2026-01-01T13:00:00.000Z");
    assert_eq!(first["actualEndTime"], "2026-01-01T12:30:00.000Z");
    assert_eq!(first["entries"], 4);
    assert_eq!(first["inputTokens"], 6400);
    assert_eq!(first["outputTokens"], 600);
    assert_eq!(first["totalTokens"], 7000);
    assert_eq!(
        first["models"],
        json!(["anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5"])
    );
    assert_eq!(first["isActive"], false);
    assert_eq!(first["burnRate"], Value::Null);
    assert_eq!(first["projection"], Value::Null);
    // 13:20 is more than 5 hours after 08:00: a new block, no gap (35 minutes after 12:30).
    let second = &rows[1];
    assert_eq!(second["entries"], 2, "the cache warming counts");
    assert_eq!(second["totalTokens"], 1300);
    assert_eq!(second["sourceBreakdowns"][1]["kind"], "cache_warm");
    // 11 h 45 min without usage: a gap from 5 hours after 14:00 to the next entry.
    let gap = &rows[2];
    assert_eq!(gap["id"], "gap-2026-01-01T19:00:00.000Z");
    assert_eq!(gap["isGap"], true);
    assert_eq!(gap["endTime"], "2026-01-02T01:45:00.000Z");
    assert_eq!(gap["actualEndTime"], Value::Null);
    assert_eq!(gap["entries"], 0);
    assert_eq!(gap["totalTokens"], 0);
    let active = &rows[3];
    assert_eq!(active["isActive"], true);
    assert_eq!(active["endTime"], "2026-01-02T06:00:00.000Z");
    assert_eq!(active["totalTokens"], 3000);
    // 3,000 tokens and $0.90 over the hour from 01:45 to 02:45.
    let rate = &active["burnRate"];
    assert_eq!(rate["tokensPerMinute"], 50);
    assert_eq!(rate["tokensPerMinuteForIndicator"], 50);
    // 0.3 + 0.6 in binary floating point, as JavaScript adds them.
    assert_eq!(rate["costPerHour"], 0.8999999999999999);
    // 175.9 minutes from 03:04:05.678 to 06:00, 176 whole: 3,000 + 50 × 176, $0.90 + $0.015 × 176.
    assert_eq!(
        active["projection"],
        json!({"totalTokens": 11800, "totalCost": 3.54, "remainingMinutes": 176})
    );
    let totals = &rows[4]["totals"];
    assert_eq!(totals["totalTokens"], 7000 + 1300 + 3000);
}

/// `--active`, `--recent` and `--token-limit` (a number, or `max`: the largest past block).
#[test]
fn active_recent_and_token_limits() {
    let w = world();
    let active = blocks(&w, &["--active", "--token-limit", "10000"]);
    assert_eq!(active.len(), 2, "the active block and the totals");
    assert_eq!(active[0]["startTime"], "2026-01-02T01:00:00.000Z");
    assert_eq!(
        active[0]["tokenLimitStatus"],
        json!({"limit": 10000, "projectedUsage": 11800, "percentUsed": 118, "status": "exceeds"})
    );
    let max = blocks(&w, &["--active", "--token-limit", "max"]);
    assert_eq!(max[0]["tokenLimitStatus"]["limit"], 7000);
    assert_eq!(max[0]["tokenLimitStatus"]["status"], "exceeds");
    let ok = blocks(&w, &["--active", "--token-limit", "20000"]);
    assert_eq!(ok[0]["tokenLimitStatus"]["status"], "ok");
    let warn = blocks(&w, &["--active", "--token-limit", "14000"]);
    assert_eq!(warn[0]["tokenLimitStatus"]["status"], "warning");
    // Every block starts within 3 days of the clock; the blocks of older files don't.
    write(
        &w,
        &w.proj(),
        "0193a000-0000-7000-8000-000000000009",
        "2025-12-20T08:00:00.000Z",
        None,
        &[answer(
            "o1",
            "2025-12-20T10:00:00.000Z",
            "claude-sonnet-4-5",
            5,
            5,
            0.0,
        )],
        "2025-12-20T10:00:00.000Z",
    );
    assert_eq!(blocks(&w, &[]).len(), 7, "an old block and a gap more");
    assert_eq!(blocks(&w, &["--recent"]).len(), 5);
    assert_eq!(blocks(&w, &["--since", "2026-01-02"]).len(), 2);
    let bad = w
        .pi()
        .args(["usage", "daily", "--active"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let bad = w
        .pi()
        .args(["usage", "blocks", "--token-limit", "lots"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// `--format jsonl`: the fact table, each fact with the start of its block.
#[test]
fn fact_table_names_the_block() {
    let w = world();
    let out = w
        .pi()
        .args(["usage", "blocks", "--format", "jsonl"])
        .output()
        .unwrap();
    let facts = jsonl(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(facts.len(), 8);
    let of = |id: &str| {
        facts
            .iter()
            .find(|f| f["entryId"] == id)
            .map(|f| f["block"].clone())
    };
    assert_eq!(of("a4"), Some(json!("2026-01-01T08:00:00.000Z")));
    assert_eq!(of("w1"), Some(json!("2026-01-01T13:00:00.000Z")));
    assert_eq!(of("a7"), Some(json!("2026-01-02T01:00:00.000Z")));
    assert_eq!(facts[7]["source"], "assistant");
    let active = w
        .pi()
        .args(["usage", "blocks", "--format", "jsonl", "--active"])
        .output()
        .unwrap();
    assert_eq!(jsonl(&String::from_utf8(active.stdout).unwrap()).len(), 2);
}

/// The table: a row per block, gap rows, the active block's burn rate and projection.
#[test]
fn human_table() {
    let w = world();
    insta::assert_snapshot!(table(&w, "100", &[]), @"
    BLOCK START       STATUS               TOKENS     COST  MODELS
    2026-01-01 08:00  4h 30m                7,000    $0.64  anthropic/claude-sonnet-4-5, anthropic/clau…
    2026-01-01 13:00  1h 00m                1,300    $0.13  anthropic/claude-sonnet-4-5
    2026-01-01 19:00  (6h 45m gap)
    2026-01-02 01:00  ACTIVE, 2h 55m left   3,000    $0.90  anthropic/claude-sonnet-4-5
      burn rate                            50/min  $0.90/h
      projected       by 2026-01-02 06:00  11,800    $3.54
    TOTAL                                  11,300    $1.67
    ");
    // At 60 columns, in Tokyo, as a percentage of the largest past block: no room for models.
    let narrow = table(&w, "60", &["--token-limit", "max", "-z", "Asia/Tokyo"]);
    assert!(narrow.lines().all(|l| pi_base::text::width(l) <= 60));
    insta::assert_snapshot!(narrow, @"
    BLOCK START       STATUS               TOKENS     %     COST
    2026-01-01 17:00  4h 30m                7,000  100%    $0.64
    2026-01-01 22:00  1h 00m                1,300   19%    $0.13
    2026-01-02 04:00  (6h 45m gap)
    2026-01-02 10:00  ACTIVE, 2h 55m left   3,000   43%    $0.90
      burn rate                            50/min        $0.90/h
      projected       by 2026-01-02 15:00  11,800  169%    $3.54
    TOTAL                                  11,300          $1.67
    ");
}

/// The blocks of the usage fixture (tests/fixtures/usage/sessions) equal those ccusage 20's
/// `blocks --json` finds in the same messages written as Claude Code entries
/// (scripts/goldens/blocks.py): the same boundaries, gaps, entries, tokens, costs and
/// models; and for the session whose last block was active when ccusage ran, with `PI_NOW`
/// at that instant, the same burn rate, projection and limit status.
#[test]
fn blocks_equal_ccusage() {
    let goldens: Value = serde_json::from_str(
        &std::fs::read_to_string(crate::common::fixture("usage/blocks-goldens.json")).unwrap(),
    )
    .unwrap();
    for run in goldens["runs"].as_array().unwrap() {
        let w = World::new();
        let sessions = run["sessions"].as_str().unwrap_or("usage/sessions");
        crate::usage_goldens::copy_dir(
            &crate::common::fixture(sessions),
            &w.agent().join("sessions"),
        );
        let now = run["recordedAt"]
            .as_str()
            .unwrap_or("2026-12-01T00:00:00.000Z");
        let args: Vec<&str> = run["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let what = format!("blocks {args:?}");
        let out = w
            .pi()
            .env("TZ", "UTC")
            .env("PI_NOW", now)
            .args(["usage", "blocks", "--all", "--json"])
            .args(&args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{what}");
        let ours = jsonl(&String::from_utf8(out.stdout).unwrap());
        let ours = &ours[..ours.len() - 1];
        let theirs = run["output"]["blocks"].as_array().unwrap();
        assert!(theirs.len() > 2, "{what}: a golden with blocks");
        assert!(theirs.iter().any(|b| b["isGap"] == true), "{what}: gaps");
        assert_eq!(ours.len(), theirs.len(), "{what}: blocks");
        for (o, t) in ours.iter().zip(theirs) {
            let what = format!("{what} {}", t["id"]);
            for f in [
                "id",
                "startTime",
                "endTime",
                "actualEndTime",
                "isGap",
                "isActive",
                "entries",
                "totalTokens",
            ] {
                assert_eq!(o[f], t[f], "{what}: {f}");
            }
            let counts = &t["tokenCounts"];
            assert_eq!(o["inputTokens"], counts["inputTokens"], "{what}");
            assert_eq!(o["outputTokens"], counts["outputTokens"], "{what}");
            assert_eq!(
                o["cacheCreationTokens"], counts["cacheCreationInputTokens"],
                "{what}"
            );
            assert_eq!(
                o["cacheReadTokens"], counts["cacheReadInputTokens"],
                "{what}"
            );
            let (a, b) = (
                o["totalCost"].as_f64().unwrap(),
                t["costUSD"].as_f64().unwrap(),
            );
            assert!((a - b).abs() < 1e-9, "{what}: cost {a} != {b}");
            // Ours are provider/model; the same model through two providers would be two.
            let mut models: Vec<&str> = o["models"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_str().unwrap().split_once('/').unwrap().1)
                .collect();
            models.dedup();
            let theirs: Vec<&str> = t["models"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_str().unwrap())
                .collect();
            assert_eq!(models, theirs, "{what}: models");
            // The active block's rate, projection (over whole minutes) and limit status.
            for f in ["burnRate", "projection", "tokenLimitStatus"] {
                same_json(&o[f], &t[f], &format!("{what}: {f}"));
            }
        }
    }
}

/// `a` equals `b`, numbers up to floating-point rounding (ccusage prints `278.0` for 278).
fn same_json(a: &Value, b: &Value, what: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-9 * y.abs().max(1.0),
                "{what}: {x} != {y}"
            );
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<std::collections::BTreeSet<_>>(),
                y.keys().collect::<std::collections::BTreeSet<_>>(),
                "{what}"
            );
            for (k, v) in x {
                same_json(v, &y[k], &format!("{what}.{k}"));
            }
        }
        (Value::Null, Value::Null) => {}
        _ => assert_eq!(a, b, "{what}"),
    }
}

/// Model names in wide characters are measured in terminal columns: at 40 and 60 columns no
/// line is wider than the terminal, and the models column is cut on a character boundary.
#[test]
fn wide_model_names_fit_the_terminal() {
    let w = World::new();
    write(
        &w,
        &w.proj(),
        "0193b000-0000-7000-8000-000000000002",
        "2026-01-02T00:00:00.000Z",
        None,
        &[
            answer("c1", "2026-01-02T00:30:00.000Z", "模型-🚀-é́", 10, 5, 0.01),
            answer(
                "c2",
                "2026-01-02T01:30:00.000Z",
                "大きなモデルの名前です",
                10,
                5,
                0.01,
            ),
        ],
        "2026-01-02T01:30:00.000Z",
    );
    for columns in ["40", "60", "100"] {
        let shown = table(&w, columns, &[]);
        let cols: usize = columns.parse().unwrap();
        assert!(
            shown.lines().all(|l| pi_base::text::width(l) <= cols),
            "{columns}:\n{shown}"
        );
        if columns == "100" {
            assert!(
                shown.contains("anthropic/模型-🚀-é́, anthropic/大き"),
                "{shown}"
            );
        }
    }
    insta::assert_snapshot!(table(&w, "80", &[]), @"
    BLOCK START       STATUS                TOKENS     COST  MODELS
    2026-01-02 00:00  ACTIVE, 1h 55m left       30    $0.02  anthropic/模型-🚀-é́, a…
      burn rate                            0.5/min  $0.02/h
      projected       by 2026-01-02 05:00       88    $0.06
    TOTAL                                       30    $0.02
    ");
    let none = w
        .pi()
        .args(["usage", "blocks", "--active", "--format", "human"])
        .env("PI_NOW", "2026-01-03T00:00:00.000Z")
        .output()
        .unwrap();
    assert!(none.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&none.stderr),
        "pi: no active block\n"
    );
}
