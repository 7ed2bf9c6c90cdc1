//! Data safety under stress: concurrent writers, files cut at every byte, arbitrary input.

use std::path::Path;

use pi_session::append::{Appender, NewEntry, Parent};
use pi_session::scan::NoVisit;
use pi_session::store::{NONE, ProblemKind, Session};
use pi_session::tree::{self, Tree};
use proptest::prelude::*;

use crate::common::*;

#[test]
fn concurrent_appends_from_eight_processes() {
    let w = World::new();
    let s = w.new_session();
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let children: Vec<_> = (0..8)
        .map(|p| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "for i in $(seq 50); do echo '{{\"role\":\"user\",\"content\":\"p{p} m'$i'\"}}' | pi session append \"$1\" > /dev/null || exit 1; done"
                ))
                .arg("sh")
                .arg(&s)
                .env("PATH", format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap()))
                .env("PI_CODING_AGENT_DIR", w.agent())
                .env("HOME", w.path("home"))
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(&s).unwrap();
    let lines = jsonl(&text);
    assert_eq!(lines.len(), 401);
    let mut seen = std::collections::HashSet::new();
    for (n, l) in lines.iter().enumerate().skip(1) {
        let id = l["id"].as_str().unwrap();
        assert!(seen.insert(id.to_owned()), "duplicate id {id}");
        // Every parent exists and was written before (a single chain, in file order).
        let parent = l["parentId"].as_str();
        if n == 1 {
            assert_eq!(parent, None);
        } else {
            assert_eq!(parent, lines[n - 1]["id"].as_str(), "line {}", n + 1);
        }
    }
    let out = w
        .pi()
        .args(["session", "check", s.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    for p in 0..8 {
        for i in 1..=50 {
            assert!(text.contains(&format!("\"p{p} m{i}\"")));
        }
    }
}

fn sample_file(w: &World) -> Vec<u8> {
    let s = w.new_session();
    let input = [
        user("first é ✅"),
        assistant("second"),
        r#"{"type":"custom","customType":"c","data":{"x":"\"quoted\" \\ backslash"}}"#.to_owned(),
        user("fourth"),
    ]
    .join("\n");
    w.ok_in(&["session", "append", s.to_str().unwrap()], &input);
    std::fs::read(s).unwrap()
}

fn complete_entries(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    let complete = match text.rfind('\n') {
        Some(p) => &text[..p],
        None => "",
    };
    for l in complete.lines().skip(1) {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        out.push(v["id"].as_str().unwrap().to_owned());
    }
    // A last line without newline counts when it is whole.
    if let Some(p) = text.rfind('\n')
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text[p + 1..])
        && let Some(id) = v["id"].as_str()
    {
        out.push(id.to_owned());
    }
    out
}

#[test]
fn a_file_cut_at_any_byte_is_readable_and_appendable() {
    let w = World::new();
    let full = sample_file(&w);
    let header_len = full.iter().position(|&c| c == b'\n').unwrap();
    let dir = w.path("cuts");
    std::fs::create_dir_all(&dir).unwrap();
    for cut in 0..=full.len() {
        let f = dir.join(format!("cut{cut}.jsonl"));
        std::fs::write(&f, &full[..cut]).unwrap();
        let opened = Session::open(&f);
        if cut < header_len {
            assert!(
                opened.is_err(),
                "cut {cut}: a partial header is not a session"
            );
            assert!(Appender::open(&f, None).is_err());
            assert_eq!(
                std::fs::read(&f).unwrap(),
                &full[..cut],
                "never overwritten"
            );
            continue;
        }
        let s = opened.unwrap();
        let expected = complete_entries(&full[..cut]);
        let got: Vec<String> = s.entries.iter().map(|r| r.id.to_string()).collect();
        assert_eq!(got, expected, "cut {cut}");
        let mut ap = Appender::open(&f, None).unwrap();
        let lines = ap
            .append(&[
                NewEntry::new("custom", Parent::Leaf).field("customType", b"\"after\"".to_vec())
            ])
            .unwrap();
        let new: serde_json::Value = serde_json::from_slice(&lines[0]).unwrap();
        assert_eq!(
            new["parentId"].as_str(),
            expected.last().map(String::as_str),
            "cut {cut}"
        );
        drop(ap);
        let s = Session::open(&f).unwrap();
        assert_eq!(
            s.entries.last().unwrap().id.as_str(),
            new["id"].as_str().unwrap()
        );
        assert_eq!(s.entries.len(), expected.len() + 1);
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            bytes.starts_with(&full[..cut]),
            "cut {cut}: existing bytes untouched"
        );
        assert!(bytes.ends_with(b"\n"));
    }
    // And through the command line at a few places.
    for cut in [header_len + 1, header_len + 40, full.len() - 3, full.len()] {
        let f = dir.join(format!("cli{cut}.jsonl"));
        std::fs::write(&f, &full[..cut]).unwrap();
        let out = w.ok(&["session", "log", "--all", f.to_str().unwrap()]);
        assert_eq!(jsonl(&out).len(), complete_entries(&full[..cut]).len());
        w.ok_in(
            &["session", "append", f.to_str().unwrap()],
            &user("after the cut"),
        );
        assert!(
            w.ok(&["session", "log", f.to_str().unwrap(), "-n", "1"])
                .contains("after the cut")
        );
    }
}

/// Lines the reader must account for: blank, header, entry, or a reported problem.
fn accounted(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.jsonl");
    std::fs::write(&f, bytes).unwrap();
    let Ok((s, NoVisit)) = Session::scan(&f, NoVisit) else {
        panic!("scan failed on {bytes:?}");
    };
    let lines: Vec<&[u8]> = if bytes.is_empty() {
        Vec::new()
    } else {
        let mut v: Vec<&[u8]> = bytes.split(|&c| c == b'\n').collect();
        if bytes.ends_with(b"\n") {
            v.pop();
        }
        v
    };
    let blank = lines
        .iter()
        .filter(|l| l.iter().all(|&c| matches!(c, b' ' | b'\t' | b'\r')))
        .count();
    let per_line = s
        .problems
        .iter()
        .filter(|p| {
            matches!(
                p.kind,
                ProblemKind::Invalid
                    | ProblemKind::Torn
                    | ProblemKind::NotEntry
                    | ProblemKind::ExtraHeader
                    | ProblemKind::NoHeader
            )
        })
        .count();
    let header = usize::from(s.header.is_some());
    assert_eq!(
        blank + header + s.entries.len() + per_line + s.problems_dropped,
        lines.len(),
        "{:?}\n{:?}",
        String::from_utf8_lossy(bytes),
        s.problems
    );
    for r in &s.entries {
        assert!(r.parent == NONE || (r.parent as usize) < s.entries.len());
    }
}

fn entry_line() -> impl Strategy<Value = String> {
    let id = prop_oneof![Just("a"), Just("b"), Just("c"), Just("d"), Just("e")];
    let parent = prop_oneof![
        Just("null"),
        Just("\"a\""),
        Just("\"b\""),
        Just("\"c\""),
        Just("\"zz\""),
        Just("\"e\"")
    ];
    let ty = prop_oneof![
        Just("message"),
        Just("label"),
        Just("custom"),
        Just("session"),
        Just("weird")
    ];
    (id, parent, ty, 0u8..4).prop_map(|(id, parent, ty, ts)| {
        format!(
            r#"{{"type":"{ty}","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:0{ts}Z","targetId":"a","label":"l","message":{{"role":"user","content":"x"}}}}"#
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn reader_accounts_for_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        accounted(&bytes);
    }

    #[test]
    fn reader_accounts_for_mangled_json(lines in proptest::collection::vec(
        prop_oneof![
            entry_line(),
            Just(String::new()),
            Just("   ".to_owned()),
            "[ -~]{0,30}",
            entry_line().prop_map(|l| l[..l.len() / 2].to_owned()),
        ], 0..12), end_nl in any::<bool>()) {
        let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/\"}\n");
        text.push_str(&lines.join("\n"));
        if end_nl { text.push('\n'); }
        accounted(text.as_bytes());
    }

    #[test]
    fn tree_covers_every_entry_once(lines in proptest::collection::vec(entry_line(), 0..15)) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.jsonl");
        let text = format!("{{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}}\n{}\n", lines.join("\n"));
        std::fs::write(&f, text).unwrap();
        let s = Session::open(Path::new(&f)).unwrap();
        let t = Tree::build(&s, &vec![0; s.entries.len()]);
        let active = vec![false; s.entries.len()];
        let mut seen = vec![0u32; s.entries.len()];
        tree::layout(&t, &active, |row| { seen[row.idx as usize] += 1; Ok(()) }).unwrap();
        for (i, &n) in seen.iter().enumerate() {
            // Every entry is shown once, those in or under a parent cycle too.
            prop_assert_eq!(n, 1, "entry {}", i);
        }
        let mut out = Vec::new();
        tree::write_nested(&t, &mut out, |w, i| write!(w, "\"i\":{i}")).unwrap();
        let out = String::from_utf8(out).unwrap();
        prop_assert_eq!(out.matches("\"i\":").count(), s.entries.len());
        for line in out.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
        if let Some(leaf) = s.leaf() {
            let path = s.path_to(leaf);
            prop_assert!(path.len() <= s.entries.len());
            prop_assert_eq!(path.last().copied(), Some(leaf));
            // The tree's path runs from one of its roots down its edges.
            let tp = t.path_to(leaf);
            prop_assert_eq!(tp.last().copied(), Some(leaf));
            prop_assert!(t.roots.contains(&tp[0]));
            for pair in tp.windows(2) {
                prop_assert!(t.children(pair[0]).contains(&pair[1]));
            }
        }
    }
}

/// The tree of whatever a reader accepts from arbitrary bytes, torn and broken lines: no
/// panic, each entry shown at most once, valid nested JSON, a finite path to the leaf.
fn tree_survives(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.jsonl");
    std::fs::write(&f, bytes).unwrap();
    let Ok(s) = Session::open(Path::new(&f)) else {
        return;
    };
    let t = Tree::build(&s, &vec![0; s.entries.len()]);
    let mut active = vec![false; s.entries.len()];
    if let Some(leaf) = s.leaf() {
        let path = s.path_to(leaf);
        assert!(path.len() <= s.entries.len());
        for i in path {
            active[i as usize] = true;
        }
    }
    let mut seen = vec![0u32; s.entries.len()];
    tree::layout(&t, &active, |row| {
        seen[row.idx as usize] += 1;
        Ok(())
    })
    .unwrap();
    assert!(seen.iter().all(|&n| n <= 1), "{seen:?}");
    let mut out = Vec::new();
    tree::write_nested(&t, &mut out, |w, i| write!(w, "\"i\":{i}")).unwrap();
    for line in String::from_utf8(out).unwrap().lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn tree_survives_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut text = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n".to_vec();
        text.extend_from_slice(&bytes);
        tree_survives(&text);
        tree_survives(&bytes);
    }

    #[test]
    fn tree_survives_broken_lines(lines in proptest::collection::vec(
        prop_oneof![
            entry_line(),
            Just(String::new()),
            "[ -~]{0,30}",
            entry_line().prop_map(|l| l[..l.len() / 2].to_owned()),
            entry_line().prop_map(|l| l.replace("\"parentId\"", "\"parent\"")),
        ], 0..15), end_nl in any::<bool>()) {
        let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n");
        text.push_str(&lines.join("\n"));
        if end_nl { text.push('\n'); }
        tree_survives(text.as_bytes());
    }
}

/// JSON-ish text: valid values, then random edits.
fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("-0.5e+3".to_owned()),
        Just("12".to_owned()),
        "\"[a-z\\\\\"/ é\u{1F600}\\t]{0,6}\"",
        Just("\"\\ud83d\"".to_owned()),
        Just("\"\\u00e9\\n\"".to_owned()),
    ];
    let value = leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4)
                .prop_map(|v| format!("[{}]", v.join(","))),
            proptest::collection::vec(("[a-z]{0,3}", inner), 0..4).prop_map(|v| {
                let m: Vec<String> = v
                    .into_iter()
                    .map(|(k, x)| format!("\"{k}\" : {x}"))
                    .collect();
                format!("{{ {} }}", m.join(" , "))
            }),
        ]
    });
    (
        value,
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..3),
    )
        .prop_map(|(v, edits)| {
            let mut b = v.into_bytes();
            for (at, byte, op) in edits {
                if b.is_empty() {
                    break;
                }
                let i = at.index(b.len());
                match op {
                    0 => b[i] = byte,
                    1 => {
                        b.remove(i);
                    }
                    _ => b.insert(i, byte),
                }
            }
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// The scanner accepts exactly what serde_json accepts (both allow lone surrogate escapes
    /// when not decoding strings), and never panics.
    #[test]
    fn json_scanner_agrees_with_serde_json(b in jsonish()) {
        let ours = pi_base::json::validate(&b).is_ok();
        let theirs = serde_json::from_slice::<serde::de::IgnoredAny>(&b).is_ok();
        prop_assert_eq!(ours, theirs, "{:?}", String::from_utf8_lossy(&b));
    }
}
