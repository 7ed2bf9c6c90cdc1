//! `pi usage` on generated directories (tests/cli/common/sessions.rs).

use crate::common::sessions::populate;
use crate::common::{World, jsonl};

fn usage(w: &World, args: &[&str]) -> Vec<serde_json::Value> {
    let out = w
        .pi()
        .env("TZ", "UTC")
        .arg("usage")
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

#[test]
fn groupings_count_every_branch_and_forks_once() {
    let w = World::new();
    populate(&w);
    // project: a1 a2 (branch 1), a3 (branch 2), a4 (fork's own); the fork's copy of a1 once
    let daily = usage(&w, &["daily"]);
    let dates: Vec<&str> = daily.iter().filter_map(|r| r["date"].as_str()).collect();
    assert_eq!(dates, ["2026-01-01", "2025-12-31", "2025-12-30"]);
    assert_eq!(daily[2]["inputTokens"], 2700);
    assert_eq!(
        daily.last().unwrap()["totals"]["inputTokens"],
        1200 + 1500 + 900 + 700
    );
    let all = usage(&w, &["monthly", "--all"]);
    assert_eq!(all.len(), 4); // three months and the totals
    assert_eq!(all[2]["month"], "2025-11");
    let weekly = usage(&w, &["weekly", "--all"]);
    assert_eq!(weekly[0]["week"], "2025-12-29");
    assert_eq!(weekly[1]["week"], "2025-11-10");
    let models = usage(&w, &["model", "--all"]);
    assert_eq!(models[0]["model"], "anthropic/claude-sonnet-4-5");
    assert_eq!(
        models[0]["modelsUsed"],
        serde_json::json!(["anthropic/claude-sonnet-4-5"])
    );
    let projects = usage(&w, &["project", "--all"]);
    assert_eq!(projects.len(), 3); // two projects and the totals
    let sessions = usage(&w, &["session"]);
    assert_eq!(
        sessions[0]["sessionId"],
        "0193a000-0000-7000-8000-000000000002"
    );
    assert_eq!(
        sessions[0]["inputTokens"], 700,
        "the copied message counts in the parent"
    );
    assert_eq!(sessions[0]["lastActivity"], "2026-01-01");
}

#[test]
fn date_ranges_and_time_zones() {
    let w = World::new();
    let s = populate(&w);
    let other = s.other_cwd.to_str().unwrap();
    let utc = usage(&w, &["daily", "--cwd", other]);
    assert_eq!(utc[0]["date"], "2025-12-29");
    let tokyo = usage(&w, &["daily", "--cwd", other, "--timezone", "Asia/Tokyo"]);
    assert_eq!(
        tokyo[0]["date"], "2025-12-30",
        "23:30 UTC is the next day in Tokyo"
    );
    let since = usage(
        &w,
        &[
            "daily",
            "--all",
            "--since",
            "20251231",
            "--until",
            "2025-12-31",
        ],
    );
    assert_eq!(since.len(), 2);
    w.pi()
        .args(["usage", "--timezone", "Mars/Base"])
        .assert()
        .code(2);
}

#[test]
fn fact_table_and_breakdown() {
    let w = World::new();
    populate(&w);
    let facts = usage(&w, &["--format", "jsonl"]);
    assert_eq!(facts.len(), 4);
    let f = &facts[0];
    assert_eq!(f["provider"], "anthropic");
    assert_eq!(f["stopReason"], "stop");
    assert_eq!(f["entryId"], "a1");
    assert_eq!(f["totalTokens"], 7300);
    assert!(f["cwd"].as_str().unwrap().ends_with("proj"));
    let shown = w
        .pi()
        .env("TZ", "UTC")
        .env("COLUMNS", "100")
        .args([
            "usage",
            "monthly",
            "--all",
            "--breakdown",
            "--format",
            "human",
        ])
        .output()
        .unwrap();
    insta::assert_snapshot!(String::from_utf8_lossy(&shown.stdout), @"
    MONTH                          INPUT  OUTPUT  CACHE WRITE  CACHE READ  TOTAL TOKENS   COST
    2026-01                          700      50          100           0           850  $0.00
      openai/gpt-5                   700      50          100           0           850  $0.00
    2025-12                        6,700     910          800      31,000        39,410  $0.05
      openai/gpt-5                 3,000     400            0           0         3,400  $0.02
      anthropic/claude-sonnet-4-5  3,700     510          800      31,000        36,010  $0.03
    2025-11                           10      20            0           0            30  $0.00
      openai/gpt-5                    10      20            0           0            30  $0.00
    TOTAL                          7,410     980          900      31,000        40,290  $0.06
    ");
}
