//! Differential tests of compaction planning against the reference implementation:
//! tests/fixtures/compact/goldens.json holds what @earendil-works/pi-coding-agent 1.6.0 plans
//! (`prepareCompaction`, `findCutPoint`, `serializeConversation`, `computeFileLists`) and
//! prepares for branch summaries (`collectEntriesForBranchSummary`, `prepareBranchEntries`)
//! on the session fixtures, the 20 generated sessions of tests/fixtures/context/gen and the
//! hand-written sessions of tests/fixtures/compact/cases, recorded by
//! scripts/goldens/compact.mjs. pi's plan must agree on every field: the first kept entry,
//! the split turn and its start, tokensBefore, the messages summarized and the turn prefix
//! (their serialized text, by hash or in full), the previous summary and the file lists.

use std::path::{Path, PathBuf};

use pi_agent::compact::{self, Budget, NoPlan};
use pi_session::Session;
use serde_json::Value;

fn fnv64(b: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in b {
        h ^= u64::from(c);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

use crate::common::deflate as inflate;

fn goldens() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compact/goldens.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The input of a golden record, as a file (inflated into `dir` when compressed).
fn input(dir: &Path, g: &Value) -> PathBuf {
    let rel = g["input"].as_str().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    match rel.strip_suffix(".deflate") {
        Some(stem) => {
            let text = inflate::inflate(&std::fs::read(&src).unwrap());
            let f = dir.join(Path::new(stem).file_name().unwrap());
            std::fs::write(&f, text).unwrap();
            f
        }
        None => src,
    }
}

fn files_hash(read: &[String], modified: &[String]) -> String {
    fnv64(format!("{}\0{}", read.join("\n"), modified.join("\n")).as_bytes())
}

/// Compares one recorded plan; differences are pushed to `bad`.
fn check_plan(s: &Session, what: &str, g: &Value, full: bool, bad: &mut Vec<String>) {
    let leaf = match g["leaf"].as_str() {
        None => s.leaf().unwrap(),
        Some(id) => s.get(id).unwrap_or_else(|| panic!("{what}: no entry {id}")),
    };
    let keep = g["keep"].as_u64().unwrap();
    let budget = Budget {
        reserve_tokens: 16_384,
        keep_recent_tokens: keep,
        window: 0,
    };
    let what = format!("{what} leaf {} keep {keep}", g["leaf"]);
    let none = g["result"] != "plan";
    let plan = match compact::prepare(s, leaf, budget).unwrap() {
        Err(NoPlan::AlreadyCompacted | NoPlan::TooSmall) => {
            if !none {
                bad.push(format!("{what}: pi has no plan, the reference has one"));
            }
            return;
        }
        Ok(p) => p,
    };
    if none {
        bad.push(format!("{what}: pi has a plan, the reference has none"));
        return;
    }
    let path = s.path_to(leaf);
    let pos = |i: u32| path.iter().position(|&x| x == i).map_or(-1, |p| p as i64);
    let (read, modified) = plan.file_ops.lists();
    let conversation = compact::summarize::conversation(&plan.history.messages);
    let prefix = compact::summarize::conversation(&plan.turn_prefix.messages);
    let mut ours = serde_json::json!({
        "firstKept": pos(plan.first_kept),
        "split": plan.split_turn,
        "turnStart": plan.turn_start.map_or(-1, pos),
        "tokensBefore": plan.tokens_before,
        "messages": plan.history.messages.len(),
        "prefix": plan.turn_prefix.messages.len(),
        "conversation": fnv64(conversation.as_bytes()),
        "prefixText": fnv64(prefix.as_bytes()),
        "previousSummary": plan.previous_summary.as_ref().map(|p| fnv64(p.as_bytes())),
    });
    if full {
        ours["readFiles"] = serde_json::json!(read);
        ours["modifiedFiles"] = serde_json::json!(modified);
        ours["conversationText"] = conversation.into();
        ours["prefixTextFull"] = prefix.into();
    } else {
        ours["files"] = files_hash(&read, &modified).into();
        ours["nFiles"] = serde_json::json!([read.len(), modified.len()]);
    }
    if let Some(id) = g.get("firstKeptEntryId") {
        ours["firstKeptEntryId"] = plan.first_kept_entry_id.clone().into();
        assert!(id.is_string());
    }
    for (k, v) in ours.as_object().unwrap() {
        let want = &g[k];
        // 1.6 does not say where a split turn starts when its first message was rebuilt.
        if k == "turnStart" && want.is_null() {
            continue;
        }
        let same = match (v.as_f64(), want.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => v == want,
        };
        if !same {
            bad.push(format!("{what}: {k}: pi {v}, reference {want}"));
        }
    }
}

/// Compares one recorded branch summary preparation.
fn check_branch(s: &Session, what: &str, g: &Value, full: bool, bad: &mut Vec<String>) {
    let old = s.get(g["oldLeaf"].as_str().unwrap()).unwrap();
    let target = s.get(g["target"].as_str().unwrap()).unwrap();
    let what = format!("{what} branch {} -> {}", g["oldLeaf"], g["target"]);
    let (entries, ancestor) = compact::branch::collect(s, Some(old), Some(target));
    let ids: Vec<String> = entries
        .iter()
        .map(|&i| s.entries[i as usize].id.to_string())
        .collect();
    let ours = if full {
        serde_json::json!(ids)
    } else {
        serde_json::json!({
            "n": ids.len(),
            "first": ids.first(),
            "last": ids.last(),
            "hash": fnv64(ids.join("\n").as_bytes()),
        })
    };
    if ours != g["entries"] {
        bad.push(format!(
            "{what}: entries: pi {ours}, reference {}",
            g["entries"]
        ));
    }
    let ancestor = ancestor.map(|a| s.entries[a as usize].id.to_string());
    if serde_json::json!(ancestor) != g["commonAncestor"] {
        bad.push(format!(
            "{what}: common ancestor: pi {ancestor:?}, reference {}",
            g["commonAncestor"]
        ));
    }
    for b in g["budgets"].as_array().unwrap() {
        let budget = b["budget"].as_u64().unwrap();
        let p = compact::branch::prepare(s, &entries, budget).unwrap();
        let (read, modified) = p.file_ops.lists();
        let conversation = compact::summarize::conversation(&p.messages);
        let mut ours = serde_json::json!({
            "messages": p.messages.len(),
            "totalTokens": p.total_tokens,
            "conversation": fnv64(conversation.as_bytes()),
        });
        if full {
            ours["readFiles"] = serde_json::json!(read);
            ours["modifiedFiles"] = serde_json::json!(modified);
            ours["conversationText"] = conversation.into();
        } else {
            ours["files"] = files_hash(&read, &modified).into();
            ours["nFiles"] = serde_json::json!([read.len(), modified.len()]);
        }
        for (k, v) in ours.as_object().unwrap() {
            if *v != b[k] {
                bad.push(format!(
                    "{what} budget {budget}: {k}: pi {v}, reference {}",
                    b[k]
                ));
            }
        }
    }
}

fn report(bad: &[String], checked: usize) {
    assert!(
        bad.is_empty(),
        "{} of {checked} records differ from the reference:\n{}",
        bad.len(),
        bad.iter().take(25).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn plans_match_the_reference_on_fixtures_and_generated_sessions() {
    let g = goldens();
    let dir = tempfile::tempdir().unwrap();
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in g["files"].as_array().unwrap() {
        let path = input(dir.path(), f);
        let s = Session::open(&path).unwrap();
        let name = f["input"].as_str().unwrap();
        for p in f["plans"].as_array().unwrap() {
            check_plan(&s, name, p, false, &mut bad);
            checked += 1;
        }
    }
    assert!(checked > 600);
    report(&bad, checked);
}

#[test]
fn branch_summaries_match_the_reference() {
    let g = goldens();
    let dir = tempfile::tempdir().unwrap();
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in g["files"].as_array().unwrap() {
        if f["branches"].as_array().unwrap().is_empty() {
            continue;
        }
        let path = input(dir.path(), f);
        let s = Session::open(&path).unwrap();
        let name = f["input"].as_str().unwrap();
        for b in f["branches"].as_array().unwrap() {
            check_branch(&s, name, b, false, &mut bad);
            checked += 1;
        }
    }
    assert!(checked > 100);
    report(&bad, checked);
}

#[test]
fn hand_written_cases_match_in_full() {
    // test-cases.md CO-C1..C5, CO-F1..F7 and CHANGES-0.73 §3.1 (the repeated compaction).
    let g = goldens();
    let mut bad = Vec::new();
    let mut checked = 0;
    for c in g["cases"].as_array().unwrap() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(c["input"].as_str().unwrap());
        let s = Session::open(&path).unwrap();
        let name = c["name"].as_str().unwrap();
        for p in c["plans"].as_array().unwrap() {
            // The reference fails on a context edit without content; pi ignores that edit
            // (docs/decisions.md §1), so there is nothing to compare.
            if p["result"] == "error" {
                continue;
            }
            check_plan(&s, name, p, true, &mut bad);
            checked += 1;
        }
        for b in c["branches"].as_array().unwrap() {
            check_branch(&s, name, b, true, &mut bad);
            checked += 1;
        }
    }
    report(&bad, checked);
    // The 0.73 boundary: the repeated compaction summarizes U2 A2 U3 A3 (kept by the first
    // compaction, then new), with the first summary as the previous one.
    let rep = &g["cases"][3];
    assert_eq!(rep["name"], "changes-3.1-repeated");
    assert_eq!(rep["plans"][0]["firstKeptEntryId"], "r8");
    let text = rep["plans"][0]["conversationText"].as_str().unwrap();
    for m in ["U2", "A2", "U3", "A3"] {
        assert!(text.contains(&format!("]: {m} ")), "{m} is summarized");
    }
    assert!(!text.contains("U1 ") && !text.contains("U4 "));
}
