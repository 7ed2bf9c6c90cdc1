//! `pi session tree`, `fork`, `check`, `migrate`

use serde_json::{Value, json};

use crate::common::*;

fn ids(v: &[Value]) -> Vec<String> {
    v.iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

/// u1 a1 (u2 a2 | u3 a3 with a summary), labels.
fn sample(w: &World) -> (String, Vec<String>) {
    let s = w.new_session().to_str().unwrap().to_owned();
    let mut id = ids(&jsonl(&w.ok_in(
        &["session", "append", &s],
        &[user("u1"), assistant("a1"), user("u2"), assistant("a2")].join("\n"),
    )));
    id.extend(ids(&jsonl(&w.ok(&[
        "session",
        "branch",
        &s,
        &id[1],
        "--summary",
        "left u2",
    ]))));
    id.extend(ids(&jsonl(&w.ok_in(
        &["session", "append", &s],
        &[user("u3 line one\nline two"), assistant("a3")].join("\n"),
    ))));
    w.ok(&["session", "label", &s, &id[0], "start"]);
    (s, id)
}

#[test]
fn tree_json_nests_and_marks_the_active_path() {
    let w = World::new();
    let (s, id) = sample(&w);
    let roots = jsonl(&w.ok(&["session", "tree", &s, "--json", "--nested"]));
    assert_eq!(roots.len(), 1);
    let r = &roots[0];
    assert_eq!(r["id"], id[0].as_str());
    assert_eq!(r["role"], "user");
    assert_eq!(r["label"], "start");
    assert!(r["labelTimestamp"].is_string());
    assert_eq!(r["active"], true);
    let a1 = &r["children"][0];
    assert_eq!(
        a1["children"].as_array().unwrap().len(),
        2,
        "a1 is a branch point"
    );
    let (old, new) = (&a1["children"][0], &a1["children"][1]);
    assert_eq!(old["id"], id[2].as_str());
    assert_eq!(old["active"], false);
    assert_eq!(new["type"], "branch_summary");
    assert_eq!(new["preview"], "[branch summary]: left u2");
    assert_eq!(new["active"], true);
    let u3 = &new["children"][0];
    assert_eq!(u3["preview"], "user: u3 line one line two");
    let leaf = &u3["children"][0]["children"][0];
    assert_eq!(leaf["type"], "label");
    assert_eq!(leaf["leaf"], true);
    // --leaf moves the active path.
    let roots = jsonl(&w.ok(&[
        "session", "tree", &s, "--json", "--nested", "--leaf", &id[3],
    ]));
    assert_eq!(roots[0]["children"][0]["children"][0]["active"], true);
    assert_eq!(roots[0]["children"][0]["children"][1]["active"], false);
}

#[test]
fn tree_human_keeps_chains_flat_and_branches_indented() {
    let w = World::new();
    let (s, _) = sample(&w);
    // The side branch (u2 a2) hangs off its branch point a1, indented; the active path stays
    // in the first column and continues after it, to the label at the leaf.
    insta::assert_snapshot!(w.snap(&["session", "tree", &s, "--format", "human"]), @"
    status: 0
    ----- stdout -----
    • bfc84610 [start] user: u1
    • 987bbcbf assistant: a1
      └─ c3f2827a user: u2
         4fc446b5 assistant: a2
    • c34d0bff [branch summary]: left u2
    • 01f6b010 user: u3 line one line two
    • 1ca62ac7 assistant: a3
    • 6d2bea3a [label: start]  ← leaf
    ----- stderr -----
    ");
    // Not a terminal: JSON by default.
    assert!(w.ok(&["session", "tree", &s]).starts_with("{\"id\""));
}

/// The deepest nesting of arrays and objects in one JSON text.
fn nesting(line: &str) -> usize {
    let (mut depth, mut max, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for b in line.bytes() {
        match (in_str, esc, b) {
            (true, true, _) => esc = false,
            (true, false, b'\\') => esc = true,
            (true, false, b'"') => in_str = false,
            (true, ..) => {}
            (false, _, b'"') => in_str = true,
            (false, _, b'{' | b'[') => {
                depth += 1;
                max = max.max(depth);
            }
            (false, _, b'}' | b']') => depth -= 1,
            _ => {}
        }
    }
    max
}

#[test]
fn tree_json_is_one_shallow_line_per_entry() {
    let w = World::new();
    let (s, id) = sample(&w);
    let rows = jsonl(&w.ok(&["session", "tree", &s, "--json"]));
    // Depth first: u1 a1, the branch left (u2 a2), then the active branch.
    let got: Vec<(String, u64, u64, bool)> = rows
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["depth"].as_u64().unwrap(),
                r["children"].as_u64().unwrap(),
                r["active"].as_bool().unwrap(),
            )
        })
        .collect();
    let want = [
        (&id[0], 0, 1, true),
        (&id[1], 1, 2, true),
        (&id[2], 2, 1, false),
        (&id[3], 3, 0, false),
        (&id[4], 2, 1, true),
        (&id[5], 3, 1, true),
        (&id[6], 4, 1, true),
    ];
    assert_eq!(got.len(), 8, "{rows:?}");
    for (g, (i, d, c, a)) in got.iter().zip(want) {
        assert_eq!(g, &((*i).clone(), d, c, a));
    }
    assert_eq!(rows[0]["label"], "start");
    assert_eq!(rows[7]["leaf"], true);
    assert_eq!(rows[7]["type"], "label");
    assert_eq!(rows[2]["preview"], "user: u2");
    assert_eq!(rows[2]["parentId"], id[1].as_str());
    // --nested is for JSON only.
    let out = w
        .pi()
        .args(["session", "tree", &s, "--nested", "--format", "human"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_100k_entry_tree_parses_with_a_depth_limited_parser() {
    let w = World::new();
    // A chain of 100k entries with a side branch every 1000: deep in the nested form.
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/\"}\n",
    );
    let n = 100_000;
    for i in 0..n {
        let parent = match i {
            0 => "null".to_owned(),
            i if i % 1000 == 999 => format!("\"e{}\"", i - 2),
            i => format!("\"e{}\"", i - 1),
        };
        text.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent},\"timestamp\":\"2025-01-01T00:00:00Z\",\"message\":{{\"role\":\"user\",\"content\":\"m{i}\"}}}}\n"
        ));
    }
    let f = w.write("deep.jsonl", text);
    let json = w.ok(&["session", "tree", f.to_str().unwrap(), "--json"]);
    let mut lines = 0;
    for line in json.lines() {
        assert!(nesting(line) <= 64, "{line}");
        // serde_json refuses more than 128 levels.
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["depth"].is_u64());
        lines += 1;
    }
    assert_eq!(lines, n);
    let nested = w.ok(&["session", "tree", f.to_str().unwrap(), "--json", "--nested"]);
    assert!(nesting(&nested) > 64, "the nested form is deep");
}

#[test]
fn tree_of_deep_linear_and_broken_sessions() {
    let w = World::new();
    let s = w.new_session();
    let many: Vec<String> = (0..5000).map(|i| user(&format!("m{i}"))).collect();
    w.ok_in(
        &["session", "append", s.to_str().unwrap()],
        &many.join("\n"),
    );
    let human = w.ok(&["session", "tree", s.to_str().unwrap(), "--format", "human"]);
    assert_eq!(human.lines().count(), 5000);
    assert!(
        human.lines().all(|l| l.starts_with("• ")),
        "a linear chain stays in one column"
    );
    let json = w.ok(&["session", "tree", s.to_str().unwrap(), "--json", "--nested"]);
    assert_eq!(json.lines().count(), 1);
    assert_eq!(json.matches("\"children\":[").count(), 5000);
    // The default JSON is one flat line per entry, depth first.
    let rows = jsonl(&w.ok(&["session", "tree", s.to_str().unwrap(), "--json"]));
    assert_eq!(rows.len(), 5000);
    assert_eq!(rows[4999]["depth"], 4999);
    assert_eq!(rows[4999]["children"], 0);
    assert_eq!(rows[0]["children"], 1);
    // Orphans and self-parents become roots.
    let f = w.write(
        "broken.jsonl",
        concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"missing\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"user\",\"content\":\"y\"}}\n",
            "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"c\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"user\",\"content\":\"z\"}}\n",
        ),
    );
    let roots = jsonl(&w.ok(&["session", "tree", f.to_str().unwrap(), "--json"]));
    assert!(roots.iter().all(|r| r["depth"] == 0));
    assert_eq!(ids(&roots), ["a", "b", "c"]);
    assert_eq!(roots[2]["leaf"], true);
}

#[test]
fn children_are_ordered_by_timestamp() {
    let w = World::new();
    let f = w.write(
        "order.jsonl",
        concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/\"}\n",
            "{\"type\":\"custom\",\"customType\":\"r\",\"id\":\"r\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00Z\"}\n",
            "{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"late\",\"parentId\":\"r\",\"timestamp\":\"2025-01-01T00:00:09Z\"}\n",
            "{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"early\",\"parentId\":\"r\",\"timestamp\":\"2025-01-01T00:00:01.500Z\"}\n",
            "{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"tie\",\"parentId\":\"r\",\"timestamp\":\"2025-01-01T00:00:01.5Z\"}\n",
        ),
    );
    let roots = jsonl(&w.ok(&[
        "session",
        "tree",
        f.to_str().unwrap(),
        "--json",
        "--leaf",
        "r",
    ]));
    assert_eq!(ids(&roots[1..]), ["early", "tie", "late"]);
    assert!(roots[1..].iter().all(|r| r["depth"] == 1));
}

/// An entry line of a crafted file: `parent` is `null` or an id.
fn raw_entry(id: &str, parent: Option<&str>, text: &str) -> String {
    json!({"type": "message", "id": id, "parentId": parent,
           "timestamp": "2025-01-01T00:00:00Z", "message": {"role": "user", "content": text}})
    .to_string()
}

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/"}"#;

/// Entries in or under a parent cycle are shown: the entry that closes the cycle (the one
/// `check` names) becomes a root marked as such, with the rest of the cycle and what hangs
/// under it below; a self-parent is a marked root. Every entry is shown once.
#[test]
fn tree_shows_cycles_and_what_hangs_under_them() {
    let w = World::new();
    let lines = [
        HEADER.to_owned(),
        raw_entry("a", None, "a root"),
        raw_entry("c1", Some("c2"), "in the cycle"),
        raw_entry("c2", Some("c1"), "closes the cycle"),
        raw_entry("e", Some("e"), "its own parent"),
        raw_entry("d", Some("c1"), "under the cycle"),
    ];
    let f = w.write("cycle.jsonl", lines.join("\n") + "\n");
    let p = f.to_str().unwrap();
    insta::assert_snapshot!(w.snaps(&[
        &["session", "tree", p, "--format", "human"],
        &["session", "check", p, "--format", "human"],
    ]), @"
    $ pi session tree [ROOT]/cycle.jsonl --format human
    status: 0
    ----- stdout -----
    • c2 [cycle: parent c1 is below] user: closes the cycle
    • c1 user: in the cycle
    • d user: under the cycle  ← leaf
      a user: a root
      e [cycle: its own parent] user: its own parent
    ----- stderr -----

    $ pi session check [ROOT]/cycle.jsonl --format human
    status: 1
    ----- stdout -----
    [ROOT]/cycle.jsonl:4: error[cycle]: entry 'c2' is its own ancestor (a parentId cycle)
    [ROOT]/cycle.jsonl:5: error[self-parent]: entry 'e' names itself as its parent
    [ROOT]/cycle.jsonl: 2 errors, 0 warnings (5 entries)
    ----- stderr -----
    ");
    let roots = jsonl(&w.ok(&["session", "tree", p, "--json", "--nested"]));
    assert_eq!(ids(&roots), ["a", "c2", "e"]);
    assert_eq!(roots[0].get("cycle"), None);
    assert_eq!(roots[1]["cycle"], true);
    assert_eq!(roots[1]["parentId"], "c1", "the parent is kept as written");
    assert_eq!(roots[1]["active"], true);
    let c1 = &roots[1]["children"][0];
    assert_eq!((c1["id"].clone(), c1.get("cycle")), (json!("c1"), None));
    assert_eq!(c1["children"][0]["id"], "d");
    assert_eq!(c1["children"][0]["leaf"], true);
    assert_eq!(roots[2]["cycle"], true);
    assert_eq!(roots[2]["children"], json!([]));
}

/// A cycle through every entry of a large file is shown whole, and fast.
#[test]
fn tree_of_a_long_cycle_is_linear() {
    let w = World::new();
    let n = 100_000;
    let mut text = String::from(HEADER);
    text.push('\n');
    for i in 0..n {
        let parent = format!("e{}", (i + n - 1) % n);
        text.push_str(&raw_entry(
            &format!("e{i}"),
            Some(&parent),
            &format!("m{i}"),
        ));
        text.push('\n');
    }
    let f = w.write("long.jsonl", text);
    let p = f.to_str().unwrap();
    let t = std::time::Instant::now();
    let human = w.ok(&["session", "tree", p, "--format", "human"]);
    let json = w.ok(&["session", "tree", p, "--json"]);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(human.lines().count(), n);
    let last = format!("e{}", n - 1);
    // The leaf closes the cycle: a root, with the rest of the cycle under it.
    assert!(
        human.starts_with(&format!(
            "• {last} [cycle: parent e{} is below] user: m{}  ← leaf\n  e0 user: m0\n  e1 user: m1\n",
            n - 2,
            n - 1
        )),
        "{}",
        &human[..200]
    );
    assert!(
        human.lines().skip(1).all(|l| l.starts_with("  e")),
        "one column"
    );
    assert_eq!(json.lines().count(), n);
    assert_eq!(json.matches("\"cycle\":true").count(), 1);
}

/// A chain of side branches nested `n` levels deep (issue 30): every `nK` has an earlier
/// leaf `lK+1` as its main continuation and `nK+1` as a side branch; the session's leaf is
/// `l1`, under the root.
fn nested_side_branches(n: usize) -> String {
    let entry = |id: &str, parent: Option<&str>, ms: usize, text: &str| {
        let ts = format!(
            "2025-01-01T{:02}:{:02}:{:02}.{:03}Z",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000
        );
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts,
               "message": {"role": "user", "content": text}})
        .to_string()
    };
    let mut lines = vec![HEADER.to_owned(), entry("r0", None, 0, "root")];
    for k in 1..=n {
        let parent = if k == 1 {
            "r0".into()
        } else {
            format!("n{}", k - 1)
        };
        lines.push(entry(&format!("n{k}"), Some(&parent), 2 * k + 1, "nested"));
    }
    for k in (1..=n).rev() {
        let parent = if k == 1 {
            "r0".into()
        } else {
            format!("n{}", k - 1)
        };
        lines.push(entry(&format!("l{k}"), Some(&parent), 2 * k, "leaf"));
    }
    lines.join("\n") + "\n"
}

/// Indentation is capped: past 16 levels a row starts with its level (`⋮N`), so the text
/// view of a 20k-deep chain of side branches grows linearly with the entries (it was 1.2
/// GB, quadratic), and `--depth` lays out only what it shows.
#[test]
fn deeply_nested_branches_give_output_linear_in_the_entries() {
    let w = World::new();
    let n = 20_000;
    let f = w.write("deep.jsonl", nested_side_branches(n));
    let p = f.to_str().unwrap();
    let human = w.ok(&["session", "tree", p, "--format", "human"]);
    assert_eq!(human.lines().count(), 2 * n + 1);
    let per_entry = human.len() / (2 * n + 1);
    assert!(per_entry < 120, "{per_entry} bytes per row");
    let longest = human.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(longest < 100, "{longest} characters");
    // The first rows are drawn in full; deeper ones carry their level.
    assert!(
        human.contains("\n           └─ n4 user: nested\n"),
        "{}",
        &human[..400]
    );
    assert!(human.contains("  ⋮17 "), "no depth marker");
    let deepest = human
        .lines()
        .find(|l| l.contains(&format!(" n{n} ")))
        .unwrap();
    assert!(deepest.starts_with(&format!("  ⋮{n} ")), "{deepest}");
    assert!(
        deepest.ends_with(&format!("└─ n{n} user: nested")),
        "{deepest}"
    );
    // `--depth 2`: three levels and their leaves, the rest folded into one line.
    let shallow = w.ok(&["session", "tree", p, "--format", "human", "--depth", "2"]);
    assert_eq!(shallow.lines().count(), 7, "{shallow}");
    assert!(
        shallow.contains(&format!("└─ … {} entries in this branch", 2 * n - 5)),
        "{shallow}"
    );
    // The HTML page holds the entries once (its tree is laid out in the browser, capped
    // the same way).
    let html = w.ok(&["session", "export", p, "--format", "html"]);
    assert!(html.len() / (2 * n + 1) < 1000, "{} bytes", html.len());
    assert!(html.contains("MAXI = 16"), "the page caps indentation");
}

#[test]
fn fork_copies_the_path_into_a_new_session() {
    let w = World::new();
    let (s, id) = sample(&w);
    let out = w.ok(&["session", "fork", &s, &id[3]]);
    let forked = out.trim();
    assert_ne!(forked, s);
    let lines = jsonl(&std::fs::read_to_string(forked).unwrap());
    assert_eq!(lines[0]["parentSession"], s.as_str());
    assert_eq!(lines[0]["cwd"], w.proj().to_str().unwrap());
    assert_ne!(
        lines[0]["id"],
        jsonl(&std::fs::read_to_string(&s).unwrap())[0]["id"]
    );
    // The path root → a2, then the label of u1 recreated with its original timestamp.
    assert_eq!(ids(&lines[1..5]), id[..4].to_vec());
    assert_eq!(lines[5]["type"], "label");
    assert_eq!(lines[5]["targetId"], id[0].as_str());
    assert_eq!(lines[5]["parentId"], id[3].as_str());
    let original_label = jsonl(&w.ok(&["session", "log", &s, "--type", "label"]));
    assert_eq!(lines[5]["timestamp"], original_label[0]["timestamp"]);
    assert_eq!(lines.len(), 6);
    // Entries keep their bytes.
    let src = std::fs::read_to_string(&s).unwrap();
    for l in std::fs::read_to_string(forked)
        .unwrap()
        .lines()
        .skip(1)
        .take(4)
    {
        assert!(src.lines().any(|x| x == l));
    }
    // Default: up to the leaf; --cwd files it under another project.
    std::fs::create_dir_all(w.path("p2")).unwrap();
    let out = w.ok(&[
        "session",
        "fork",
        &s,
        "--cwd",
        w.path("p2").to_str().unwrap(),
    ]);
    let p2 = std::fs::canonicalize(w.path("p2")).unwrap();
    let lines = jsonl(&std::fs::read_to_string(out.trim()).unwrap());
    assert_eq!(lines[0]["cwd"], p2.to_str().unwrap());
    assert!(lines.iter().any(|l| l["type"] == "branch_summary"));
    assert!(!lines.iter().any(|l| l["message"]["content"] == json!("u2")));
    assert_eq!(
        jsonl(&w.ok(&["session", "list", "--cwd", p2.to_str().unwrap()])).len(),
        1
    );
}

#[test]
fn check_reports_problems_with_line_numbers() {
    let w = World::new();
    let (s, _) = sample(&w);
    insta::assert_snapshot!(w.snap(&["session", "check", &s, "--format", "human"]), @"
    status: 0
    ----- stdout -----
    [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl: ok (8 entries)
    ----- stderr -----
    ");
    let f = w.write(
        "bad.jsonl",
        concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n",
            "not json at all\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"a0\",\"timestamp\":\"t\",\"message\":{}}\n",
            "[1,2]\n",
            "{\"type\":\"label\",\"id\":\"l\",\"parentId\":\"a\",\"timestamp\":\"t\",\"targetId\":\"ghost\",\"label\":\"x\"}\n",
            "{\"type\":\"session\",\"id\":\"again\"}\n",
            "{\"type\":\"x\",\"id\":\"c1\",\"parentId\":\"c2\",\"timestamp\":\"t\"}\n",
            "{\"type\":\"x\",\"id\":\"c2\",\"parentId\":\"c1\",\"timestamp\":\"t\"}\n",
            "{\"type\":\"compaction\",\"id\":\"k\",\"parentId\":\"l\",\"timestamp\":\"t\",\"summary\":\"s\",\"firstKeptEntryId\":\"nowhere\",\"tokensBefore\":1}\n",
            "{\"type\":\"message\",\"id\":\"torn\",\"par",
        ),
    );
    let before = std::fs::read(&f).unwrap();
    let out = w
        .pi()
        .args(["session", "check", f.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let recs = jsonl(&String::from_utf8_lossy(&out.stdout));
    let got: Vec<(u64, &str)> = recs
        .iter()
        .map(|r| (r["line"].as_u64().unwrap(), r["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (3, "invalid-json"),
            (4, "dangling-parent"),
            (4, "duplicate-id"),
            (5, "not-an-entry"),
            (6, "dangling-reference"),
            (7, "extra-header"),
            (9, "cycle"),
            (10, "dangling-reference"),
            (11, "torn-line"),
        ]
    );
    assert_eq!(recs[0]["column"], 1);
    assert!(
        recs[0]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
    assert_eq!(std::fs::read(&f).unwrap(), before, "check never writes");
    insta::assert_snapshot!(
        w.snap(&["session", "check", f.to_str().unwrap(), "--format", "human"]),
        @r#"
    status: 1
    ----- stdout -----
    [ROOT]/bad.jsonl:3:1: error[invalid-json]: not valid JSON: expected 'null' at column 1
    [ROOT]/bad.jsonl:4: error[dangling-parent]: entry 'a' has parent 'a0', which does not exist
    [ROOT]/bad.jsonl:4: error[duplicate-id]: id 'a' was already used on line 2
    [ROOT]/bad.jsonl:5:1: error[not-an-entry]: a JSON value that is not an object
    [ROOT]/bad.jsonl:6: error[dangling-reference]: label targets 'ghost', which does not exist
    [ROOT]/bad.jsonl:7: error[extra-header]: a second session header (skipped)
    [ROOT]/bad.jsonl:9: error[cycle]: entry 'c2' is its own ancestor (a parentId cycle)
    [ROOT]/bad.jsonl:10: error[dangling-reference]: firstKeptEntryId refers to 'nowhere', which does not exist
    [ROOT]/bad.jsonl:11:35: error[torn-line]: the last line is incomplete (an interrupted write?): expected '"' to close the string at column 35
    [ROOT]/bad.jsonl: 9 errors, 0 warnings (6 entries)
    ----- stderr -----
    "#
    );
    // Not a session at all.
    let g = w.write("g.jsonl", "");
    let out = w
        .pi()
        .args(["session", "check", g.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn migrate_rewrites_old_files_atomically_with_a_backup() {
    let w = World::new();
    let f = w.write("old.jsonl", concat!(
        "{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/x\"}\n",
        "{\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:01Z\",\"message\":{\"role\":\"user\",\"content\":\"a\",\"timestamp\":1}}\n",
        "{\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:02Z\",\"message\":{\"role\":\"hookMessage\",\"content\":\"h\",\"timestamp\":2}}\n",
        "{\"type\":\"compaction\",\"timestamp\":\"2025-01-01T00:00:03Z\",\"summary\":\"s\",\"firstKeptEntryIndex\":2,\"tokensBefore\":5}\n",
    ));
    let original = std::fs::read(&f).unwrap();
    // Reading an old file migrates it in memory, with the same ids every time.
    let view = w.ok(&["session", "log", "--all", f.to_str().unwrap()]);
    assert_eq!(
        view,
        w.ok(&["session", "log", "--all", f.to_str().unwrap()])
    );
    assert_eq!(
        std::fs::read(&f).unwrap(),
        original,
        "reading never rewrites"
    );
    let out = jsonl(&w.ok(&["session", "migrate", f.to_str().unwrap()]));
    assert_eq!(out[0]["migrated"], true);
    assert_eq!(out[0]["fromVersion"], 1);
    assert_eq!(out[0]["entries"], 3);
    let backup = out[0]["backup"].as_str().unwrap();
    assert!(backup.ends_with("old.jsonl.v1.bak"));
    assert_eq!(std::fs::read(backup).unwrap(), original);
    let text = std::fs::read_to_string(&f).unwrap();
    let lines = jsonl(&text);
    assert_eq!(lines[0]["version"], 3);
    assert!(text.starts_with("{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/x\",\"version\":3}\n"));
    assert_eq!(lines[1]["parentId"], Value::Null);
    assert_eq!(lines[2]["parentId"], lines[1]["id"]);
    assert_eq!(lines[2]["message"]["role"], "custom");
    assert_eq!(lines[3]["firstKeptEntryId"], lines[2]["id"]);
    assert!(lines[3].get("firstKeptEntryIndex").is_none());
    // The ids are those the in-memory view showed.
    assert_eq!(
        text.lines()
            .skip(1)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
        view
    );
    // Now it can be appended to; migrating again is a no-op.
    w.ok_in(&["session", "append", f.to_str().unwrap()], &user("new"));
    let again = jsonl(&w.ok(&["session", "migrate", f.to_str().unwrap()]));
    assert_eq!(again[0]["migrated"], false);
}

/// A version 2 file (ids and parents, the legacy `hookMessage` role): read as version 3 in
/// memory, refused for appends until migrated, migrated with a `.v2.bak` backup (a second
/// backup name when one exists), corrupt lines dropped from the new file but kept in the
/// backup.
#[test]
fn version_2_files_read_refuse_appends_and_migrate() {
    let w = World::new();
    let body = concat!(
        "{\"type\":\"session\",\"version\":2,\"id\":\"v2s\",\"timestamp\":\"2025-03-01T00:00:00.000Z\",\"cwd\":\"/x\"}\n",
        "{\"type\":\"message\",\"id\":\"aaaa0001\",\"parentId\":null,\"timestamp\":\"2025-03-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n",
        "{\"type\":\"message\",\"id\":\"aaaa0002\",\"parentId\":\"aaaa0001\",\"timestamp\":\"2025-03-01T00:00:02.000Z\",\"message\":{\"role\":\"hookMessage\",\"customType\":\"h\",\"content\":\"from a hook\",\"display\":true,\"timestamp\":2}}\n",
        "{\"type\":\"message\",\"id\":\"aaaa0003\",\"parentId\":\"aaaa0002\",\"timestamp\":\"2025-03-01T00:00:03.000Z\",\"extra\":{\"kept\":[1,2]},\"message\":{\"role\":\"user\",\"content\":\"again\",\"timestamp\":3}}\n",
    );
    let f = w.write("v2.jsonl", body);
    let p = f.to_str().unwrap();
    let original = std::fs::read(&f).unwrap();
    let log = jsonl(&w.ok(&["session", "log", p]));
    assert_eq!(log.len(), 3);
    assert_eq!(log[1]["message"]["role"], "custom");
    assert_eq!(log[1]["id"], "aaaa0002");
    let ctx = jsonl(&w.ok(&["context", "build", p]));
    assert_eq!(ctx[1]["role"], "custom");
    assert_eq!(ctx[1]["content"], "from a hook");
    let out = w
        .pi()
        .args(["session", "append", p])
        .write_stdin(user("no"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pi session migrate"));
    assert_eq!(std::fs::read(&f).unwrap(), original);

    let out = jsonl(&w.ok(&["session", "migrate", p]));
    assert_eq!(out[0]["fromVersion"], 2);
    let backup = out[0]["backup"].as_str().unwrap().to_owned();
    assert!(backup.ends_with("v2.jsonl.v2.bak"), "{backup}");
    assert_eq!(std::fs::read(&backup).unwrap(), original);
    let text = std::fs::read_to_string(&f).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "{\"type\":\"session\",\"version\":3,\"id\":\"v2s\",\"timestamp\":\"2025-03-01T00:00:00.000Z\",\"cwd\":\"/x\"}"
    );
    // Ids, parents and unknown fields are kept byte for byte; only the role changes.
    assert_eq!(lines[1], body.lines().nth(1).unwrap());
    assert_eq!(
        lines[2],
        body.lines()
            .nth(2)
            .unwrap()
            .replace("hookMessage", "custom")
    );
    assert_eq!(lines[3], body.lines().nth(3).unwrap());
    w.ok_in(&["session", "append", p], &user("now it works"));

    // A second file of that name: the backup gets another name; a corrupt line is dropped
    // from the new file (and counted) but stays in the backup.
    let torn = format!("{body}{{\"type\":\"message\",\"id\":\"bad\n");
    std::fs::write(&f, &torn).unwrap();
    let out = jsonl(&w.ok(&["session", "migrate", p]));
    let backup2 = out[0]["backup"].as_str().unwrap().to_owned();
    assert!(backup2.ends_with("v2.jsonl.v2.bak.1"), "{backup2}");
    assert_eq!(std::fs::read_to_string(&backup2).unwrap(), torn);
    assert_eq!(out[0]["droppedLines"], 1);
    assert_eq!(std::fs::read_to_string(&f).unwrap().lines().count(), 4);
    // A file that is not a session is refused and left alone.
    let junk = w.write("junk.jsonl", "hello\n");
    let out = w
        .pi()
        .args(["session", "migrate", junk.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&junk).unwrap(), "hello\n");
}

/// Fork copies the entries of the path byte for byte, unknown fields and entry types
/// included.
#[test]
fn fork_keeps_unknown_fields_and_types_byte_for_byte() {
    let w = World::new();
    let s = w.new_session();
    let p = s.to_str().unwrap();
    let mut text = std::fs::read_to_string(&s).unwrap();
    let lines = [
        r#"{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1,"x-extra":[1,{"b":null}]},"future":"kept"}"#,
        r#"{"type":"hologram","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2026-01-01T00:00:01.000Z","payload":{"deep":[true,2.50]}}"#,
        r#"{"type":"message","id":"aaaa0003","parentId":"aaaa0002","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"bye","timestamp":2}}"#,
    ];
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&s, text).unwrap();
    let forked = w.ok(&["session", "fork", p, "aaaa0003"]);
    let copy = std::fs::read_to_string(forked.trim()).unwrap();
    let got: Vec<&str> = copy.lines().skip(1).collect();
    assert_eq!(got, lines);
    let header: Value = serde_json::from_str(copy.lines().next().unwrap()).unwrap();
    assert_eq!(header["parentSession"], p);
}

/// With an id used twice, the id names its last entry (as the reference's map does), and
/// the labels copied are those whose target id is on the path.
#[test]
fn fork_with_a_repeated_id_copies_the_labels_of_the_path() {
    let w = World::new();
    let mut text = String::from(HEADER);
    text.push('\n');
    let entry = |id: &str, parent: Option<&str>, content: &str| {
        json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": content}})
        .to_string()
    };
    let label = |id: &str, parent: &str, target: &str, name: &str| {
        json!({"type": "label", "id": id, "parentId": parent,
            "timestamp": "2026-01-01T00:00:01.000Z", "targetId": target, "label": name})
        .to_string()
    };
    let lines = [
        entry("r0000001", None, "root"),
        entry("x0000001", Some("r0000001"), "first x"),
        entry("y0000001", Some("r0000001"), "y"),
        entry("x0000001", Some("y0000001"), "second x"),
        entry("w0000001", Some("r0000001"), "w, off the path"),
        label("l0000001", "w0000001", "y0000001", "why"),
        label("l0000002", "l0000001", "x0000001", "ex"),
        label("l0000003", "l0000002", "w0000001", "double-u"),
    ];
    for l in &lines {
        text.push_str(l);
        text.push('\n');
    }
    let f = w.write("repeated.jsonl", text);
    let out = w.ok(&["session", "fork", f.to_str().unwrap(), "x0000001"]);
    let copy = jsonl(&std::fs::read_to_string(out.trim()).unwrap());
    let contents: Vec<&Value> = copy[1..4]
        .iter()
        .map(|l| &l["message"]["content"])
        .collect();
    assert_eq!(contents, [&json!("root"), &json!("y"), &json!("second x")]);
    let labels: Vec<(&Value, &Value)> = copy[4..]
        .iter()
        .map(|l| (&l["targetId"], &l["label"]))
        .collect();
    assert_eq!(
        labels,
        [
            (&json!("y0000001"), &json!("why")),
            (&json!("x0000001"), &json!("ex"))
        ]
    );
    // The new labels' ids are none of the path's.
    for l in &copy[4..] {
        assert!(!["r0000001", "y0000001", "x0000001"].contains(&l["id"].as_str().unwrap()));
    }
}

/// A path of long runs of adjacent lines (copied by the kernel, in parts) cut by an
/// abandoned branch and a label: the copy holds exactly the path's lines, then the label.
#[test]
fn fork_copies_long_runs_of_the_path_byte_for_byte() {
    let w = World::new();
    let mut text = String::from(HEADER);
    text.push('\n');
    let mut path = Vec::new();
    let mut parent: Option<String> = None;
    for i in 0..3000 {
        let id = format!("f{i:07}");
        let side = i % 1000 == 500;
        let line = json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": format!("{i} {}", "é x\"y ".repeat(60))}})
        .to_string();
        text.push_str(&line);
        text.push('\n');
        // Every 1000 entries one is a branch left behind: the next entry skips it.
        if !side {
            path.push(line);
            parent = Some(id);
        }
    }
    text.push_str(
        &json!({"type": "label", "id": "lab00001", "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z", "targetId": "f0000007", "label": "seven"})
        .to_string(),
    );
    text.push('\n');
    let f = w.write("long-runs.jsonl", text);
    let out = w.ok(&["session", "fork", f.to_str().unwrap(), path_id(&path)]);
    let copy = std::fs::read_to_string(out.trim()).unwrap();
    let lines: Vec<&str> = copy.lines().collect();
    assert_eq!(lines.len(), 1 + path.len() + 1);
    assert!(lines[1..=path.len()].iter().zip(&path).all(|(a, b)| a == b));
    let label: Value = serde_json::from_str(lines[path.len() + 1]).unwrap();
    assert_eq!(label["targetId"], "f0000007");
    assert!(copy.ends_with("}\n"));
}

/// The id of the last line of `path`.
fn path_id(path: &[String]) -> &str {
    let last = path.last().map_or("", String::as_str);
    let at = last.find("\"id\":\"").map_or(0, |k| k + 6);
    &last[at..at + 8]
}

/// The whole views are written a batch of rows at a time from the lines read again; the
/// shaped view (`--depth`) reads everything in one pass. On a file of several batches with
/// branches and every kind of preview, both give the same rows, and `--json` the same
/// previews and one node per entry.
#[test]
fn streamed_tree_rows_equal_the_one_pass_rows() {
    let w = World::new();
    let n = 20_000;
    let mut text = String::from(HEADER);
    text.push('\n');
    let mut parent: Option<String> = None;
    for i in 0..n {
        let id = format!("e{i:05}");
        let ts = format!(
            "2025-01-01T{:02}:{:02}:{:02}.{:03}Z",
            i / 3600 % 24,
            i / 60 % 60,
            i % 60,
            i % 1000
        );
        let line = match i % 5 {
            0 => json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts,
                        "message": {"role": "user", "content": format!("question\n\n  {i} with\ttabs é →")}}),
            1 => json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts,
                        "message": {"role": "assistant", "content": [
                            {"type": "thinking", "thinking": "x\"y\\".repeat(50)},
                            {"type": "text", "text": format!("answer {i} \"quoted\"")},
                            {"type": "toolCall", "name": "bash", "arguments": {"command": format!("ls {i}")}}]}}),
            2 => json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts,
                        "message": {"role": "toolResult", "toolName": "bash", "isError": i % 7 == 0,
                                    "content": [{"type": "text", "text": "out\\put\n".repeat(40)}]}}),
            3 if i % 100 == 3 => {
                json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": ts,
                        "summary": "s", "firstKeptEntryId": "e00000", "tokensBefore": 12345})
            }
            3 => json!({"type": "model_change", "id": id, "parentId": parent, "timestamp": ts,
                        "provider": "p", "modelId": format!("m{i}")}),
            _ => json!({"type": "custom_message", "id": id, "parentId": parent, "timestamp": ts,
                        "customType": "note", "content": "a note", "display": true}),
        };
        text.push_str(&line.to_string());
        text.push('\n');
        // Every 50 entries the next one branches off 20 entries back.
        parent = Some(if i % 50 == 49 {
            format!("e{:05}", i - 20)
        } else {
            id
        });
    }
    let f = w.write("branched.jsonl", text);
    let p = f.to_str().unwrap();
    let human = w.ok(&["session", "tree", p, "--format", "human"]);
    let shaped = w.ok(&[
        "session", "tree", p, "--format", "human", "--depth", "1000000",
    ]);
    assert_eq!(human.lines().count(), n);
    assert!(
        human == shaped,
        "the streamed rows differ from the one-pass rows"
    );
    let json = w.ok(&["session", "tree", p, "--json"]);
    assert_eq!(json.lines().count(), n);
    // Each node's preview is the text the rows end with.
    let nodes: Vec<(String, String)> = json
        .split("{\"id\":")
        .skip(1)
        .map(|node| {
            let id: String = serde_json::from_str(node.split(',').next().unwrap()).unwrap();
            let pv = node.split("\"preview\":").nth(1).unwrap();
            let end = pv.find(",\"active\"").unwrap();
            (id, serde_json::from_str::<String>(&pv[..end]).unwrap())
        })
        .collect();
    assert_eq!(nodes.len(), n);
    let rows: std::collections::HashMap<&str, &str> = human
        .lines()
        .map(|l| {
            let at = l.find(" e").unwrap() + 1;
            (&l[at..at + 6], l[at + 7..].trim_end_matches("  ← leaf"))
        })
        .collect();
    for (id, preview) in &nodes {
        assert_eq!(rows[id.as_str()], preview.as_str(), "{id}");
    }
}

#[test]
fn a_preview_cut_inside_an_escape_shows_no_stray_backslash() {
    // The preview reads the first 3200 bytes of a text: here they are all whitespace but
    // the last, which starts the escape `\n`. This once ended the process with a panic.
    let w = World::new();
    let s = w.new_session().to_str().unwrap().to_owned();
    // Cut in `\n`, in `\u0001`, and just after `\\`.
    for (before, after) in [(3199, "\nhello"), (3197, "\u{1}x"), (3198, "\\ x")] {
        let text = format!("{}{after}", " ".repeat(before));
        w.ok_in(&["session", "append", &s], &user(&text));
    }
    let rows = jsonl(&w.ok(&["session", "tree", &s, "--json", "--nested"]));
    let mut previews = Vec::new();
    let mut row = rows.last().cloned();
    while let Some(r) = row {
        previews.push(r["preview"].as_str().unwrap().to_owned());
        row = r["children"].as_array().and_then(|c| c.last()).cloned();
    }
    // The third text's escaped backslash is whole within the cut: it is shown.
    assert_eq!(previews, ["user: ", "user: ", "user: \\"]);
    let human = w.ok(&["session", "tree", &s, "--format", "human"]);
    assert_eq!(human.lines().count(), 3, "{human}");
    assert_eq!(human.matches('\\').count(), 1, "{human}");
}

#[test]
fn branch_without_an_entry_lists_the_tips() {
    let w = World::new();
    let (s, id) = sample(&w);
    let tips = jsonl(&w.ok(&["session", "branch", "-s", &s]));
    // The side branch ends at a2; the active one at the label entry (the leaf).
    assert_eq!(tips.len(), 2, "{tips:?}");
    assert_eq!(tips[0]["id"], id[3].as_str());
    assert_eq!(tips[0]["active"], false);
    assert_eq!(tips[0]["preview"], "assistant: a2");
    assert_eq!(tips[1]["active"], true);
    // A label entry is not a message: the tip shows the last message above it.
    assert_eq!(tips[1]["preview"], "assistant: a3");
    assert!(tips[1]["timestamp"].is_string());
    // The most recent session, the same; a move after it makes a2 the leaf.
    assert_eq!(jsonl(&w.ok(&["session", "branch"])), tips);
    // Moving the leaf to a2 appends an entry under it: that is the active tip now.
    w.ok(&["session", "branch", &id[3]]);
    let tips = jsonl(&w.ok(&["session", "branch", "-s", &s]));
    assert_eq!(tips.len(), 2, "{tips:?}");
    assert_eq!(tips[0]["active"], false);
    assert_eq!(tips[1]["active"], true);
    assert_eq!(tips[1]["preview"], "assistant: a2");
    insta::assert_snapshot!(w.snap(&["session", "branch", "--format", "human"]), @"
    status: 0
    ----- stdout -----
      6d2bea3a just now  assistant: a3
    * bef37270 just now  assistant: a2
    ----- stderr -----
    ");
    // Options that move the leaf need the entry.
    let out = w
        .pi()
        .args(["session", "branch", "--summary", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_says_first_that_a_file_is_not_a_session() {
    let w = World::new();
    let html: String = std::iter::once("<!doctype html>".to_owned())
        .chain((0..400).map(|i| format!("<p>line {i}</p>")))
        .collect::<Vec<_>>()
        .join("\n");
    let f = w.write("page.html", html);
    let out = w
        .pi()
        .args(["session", "check", f.to_str().unwrap(), "--format", "human"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert!(
        first.contains("error[no-header]: no session header"),
        "{text}"
    );
    assert!(text.lines().count() < 10, "a few lines, not 400: {text}");
    assert!(text.contains("more problems"), "{text}");
}

#[test]
fn a_directory_is_named_as_such() {
    let w = World::new();
    let dir = w.path("somewhere");
    std::fs::create_dir_all(&dir).unwrap();
    let out = w
        .pi()
        .args(["session", "log", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("is a directory, not a session file"), "{err}");
}
