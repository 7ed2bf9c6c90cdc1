//! `pi usage` on generated directories (tests/cli/common/sessions.rs) and on files the
//! reference 1.6 wrote (tests/fixtures/usage/v16).

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

/// Where the tokens went, on files the reference 1.6 wrote (tests/fixtures/usage/v16): a row
/// per source under each session with `--sources`, and under the total whenever anything
/// besides assistant messages counted; a router's answer counts under the model that
/// answered.
#[test]
fn sources_of_usage_in_the_table_and_the_fact_table() {
    let w = World::new();
    crate::usage_goldens::copy_dir(
        &crate::common::fixture("usage/v16/sessions"),
        &w.agent().join("sessions"),
    );
    let shown = w
        .pi()
        .env("TZ", "UTC")
        .args([
            "usage",
            "session",
            "--all",
            "--sources",
            "--format",
            "human",
            "--color",
            "never",
        ])
        .output()
        .unwrap();
    insta::assert_snapshot!(String::from_utf8_lossy(&shown.stdout), @"
    SESSION                             INPUT  OUTPUT  CACHE WRITE  CACHE READ  TOTAL TOKENS   COST
    2026-02-10 00000001 /home/me/app  261,450   5,170        8,300     219,400       494,320  $0.79
      assistant                       214,650   2,550        8,300     168,400       393,900  $0.66
      toolResult                        4,000     500            0       1,000         5,500  $0.00
      usage:cache_warm                      0       0            0      50,000        50,000  $0.01
      usage:title_generation              800      20            0           0           820  $0.00
      compaction                       30,000   1,500            0           0        31,500  $0.11
      branch_summary                   12,000     600            0           0        12,600  $0.00
    2026-02-10 00000002 /home/me/app    3,440     520        4,000       4,900        12,860  $0.03
      assistant                         3,440     520        4,000       4,900        12,860  $0.03
    2026-02-10 00000003 /srv/build    483,000   9,300            0     615,000     1,107,300  $1.54
      assistant                       210,000   2,300            0           0       212,300  $0.55
      toolResult                       64,000   3,000            0           0        67,000  $0.02
      usage:cache_warm                      0       0            0     615,000       615,000  $0.38
      compaction                      209,000   4,000            0           0       213,000  $0.58
    TOTAL                             747,890  14,990       12,300     839,300     1,614,480  $2.36
      assistant                       428,090   5,370       12,300     173,300       619,060  $1.24
      toolResult                       68,000   3,500            0       1,000        72,500  $0.02
      usage:cache_warm                      0       0            0     665,000       665,000  $0.40
      usage:title_generation              800      20            0           0           820  $0.00
      compaction                      239,000   5,500            0           0       244,500  $0.70
      branch_summary                   12,000     600            0           0        12,600  $0.00
    ");
    let facts = usage(&w, &["--all", "--format", "jsonl"]);
    let routed = facts
        .iter()
        .find(|f| f["responseModel"] == "google/gemini-2.5-pro")
        .unwrap();
    assert_eq!(
        (&routed["provider"], &routed["model"]),
        (&"openrouter".into(), &"auto".into())
    );
    let models = usage(&w, &["model", "--all"]);
    assert!(
        models
            .iter()
            .any(|m| m["model"] == "openrouter/google/gemini-2.5-pro")
    );
    assert!(!models.iter().any(|m| m["model"] == "openrouter/auto"));
    let sources: Vec<(&str, Option<&str>)> = facts
        .iter()
        .map(|f| (f["source"].as_str().unwrap(), f["kind"].as_str()))
        .collect();
    for s in [
        ("toolResult", None),
        ("usage", Some("title_generation")),
        ("compaction", None),
        ("branch_summary", None),
    ] {
        assert!(sources.contains(&s), "{s:?}");
    }
    // A tool result or summary names no model; only assistant messages have a stop reason.
    for f in &facts {
        let attributed = ["assistant", "usage"].contains(&f["source"].as_str().unwrap());
        assert_eq!(f["model"].is_string(), attributed, "{f}");
        assert_eq!(
            f["stopReason"].is_string(),
            f["source"] == "assistant",
            "{f}"
        );
    }
    // Summaries and tool results without usage are not facts: 3 files, 21 entries with usage.
    assert_eq!(facts.len(), 21);
}
