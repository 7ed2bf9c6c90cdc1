//! The context of sessions holding what the reference 1.6 added (system messages, compaction
//! checkpoints, context edits, several roots, usage entries), against what 1.6.0 itself builds:
//! tests/fixtures/context16/, recorded by scripts/goldens/context16.mjs. For every case and
//! leaf, `pi context build` in agent and llm form must equal 1.6's `buildSessionContext` and
//! `convertToLlm` line for line, and `--with-settings` its thinking level and model.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::*;

fn golden(name: &str) -> Value {
    let p: PathBuf = fixture("context16").join(name);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"019c0000-0000-7000-8000-000000000000","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/work"}"#;

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect()
}

#[test]
fn context_equals_the_reference_1_6_at_every_leaf() {
    let g = golden("cases.golden.json");
    assert_eq!(g["reference"], "1.6.0");
    let cases = g["cases"].as_array().unwrap();
    assert!(cases.len() >= 12);
    let mut failures = Vec::new();
    let mut leaves = 0;
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let w = World::new();
        let mut text = format!("{HEADER}\n");
        for l in strs(&c["lines"]) {
            text.push_str(l);
            text.push('\n');
        }
        let file = w.write("s.jsonl", text);
        let f = file.to_str().unwrap();
        for lg in c["leaves"].as_array().unwrap() {
            leaves += 1;
            let mut leaf = vec![f];
            if let Some(l) = lg["leaf"].as_str() {
                leaf.extend(["--leaf", l]);
            }
            let base = [&["context", "stats"][..], &leaf].concat();
            // `pi context stats`: the estimate, and the size 1.6 reports (the reported usage
            // only while no edit or compaction came after it).
            let st = &lg["stats"];
            if st.get("error").is_none() {
                let out = w.ok(&[&base[..], &["--json", "--context-window", "200000"]].concat());
                let ours: Value = serde_json::from_str(out.trim()).unwrap();
                for (k, want) in [
                    ("estimatedTokens", &st["estimatedTokens"]),
                    ("tokens", &st["projectedTokens"]),
                    ("lastUsageIndex", &st["projectedLastUsageIndex"]),
                ] {
                    if ours[k].as_f64() != want.as_f64() {
                        failures.push(format!(
                            "{name} (leaf {}): stats {k}: ours {}, 1.6's {want}",
                            lg["leaf"], ours[k]
                        ));
                    }
                }
            }
            for fmt in ["agent", "llm"] {
                let build = [&["context", "build"][..], &leaf].concat();
                let out = w.ok(&[&build[..], &["--format", fmt, "--with-settings"]].concat());
                let mut got: Vec<&str> = out.lines().collect();
                let settings: Value = serde_json::from_str(got.remove(0)).unwrap();
                let want_settings: Value =
                    serde_json::from_str(lg["settings"].as_str().unwrap()).unwrap();
                for k in ["thinkingLevel", "model"] {
                    if settings[k] != want_settings[k] {
                        failures.push(format!(
                            "{name} (leaf {}): {k}: ours {}, 1.6's {}",
                            lg["leaf"], settings[k], want_settings[k]
                        ));
                    }
                }
                let want = strs(&lg[fmt]);
                if got != want {
                    failures.push(format!(
                        "{name} (leaf {}) --format {fmt}:\n  ours:\n    {}\n  1.6:\n    {}",
                        lg["leaf"],
                        got.join("\n    "),
                        want.join("\n    ")
                    ));
                }
            }
        }
    }
    assert!(leaves >= 30, "{leaves} leaves");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The 0.73.1 goldens of tests/fixtures/context/ were computed again with 1.6.0 (agent and llm
/// forms, settings) by the same script: they agree on every leaf, so those goldens stand for
/// 1.6 as well. This checks that the comparison covered every leaf they hold.
#[test]
fn the_0_73_goldens_were_compared_with_1_6_leaf_for_leaf() {
    let changed = golden("changed.json");
    let dir = fixture("context");
    let mut leaves = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            let g: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            leaves += match g.get("cases") {
                Some(cases) => cases
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["leaves"].as_array().unwrap().len())
                    .sum::<usize>(),
                None => g["leaves"].as_array().unwrap().len(),
            };
        }
    }
    assert_eq!(changed["compared"], leaves);
    assert_eq!(changed["differ"], 0, "{changed}");
    assert_eq!(changed["files"], serde_json::json!({}));
    assert_eq!(changed["cases"], serde_json::json!({}));
}
