//! Differential tests of compaction planning against the reference implementation:
//! tests/fixtures/compact/goldens.json holds what @mariozechner/pi-coding-agent 0.73.1 plans
//! (`prepareCompaction`, `findCutPoint`, `serializeConversation`, `computeFileLists`) and
//! prepares for branch summaries (`collectEntriesForBranchSummary`, `prepareBranchEntries`)
//! on the session fixtures, the 20 generated sessions of tests/fixtures/context/gen and the
//! hand-written sessions of tests/fixtures/compact/cases, recorded by
//! scripts/goldens/compact.mjs. pi's plan must agree on every field: the first kept entry,
//! the split turn and its start, tokensBefore, the messages summarized and the turn prefix
//! (their serialized text, by hash or in full), the previous summary and the file lists.

use std::path::{Path, PathBuf};

use pi::compact::{self, Budget, NoPlan};
use pi::session::Session;
use serde_json::Value;

fn fnv64(b: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in b {
        h ^= u64::from(c);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

// The same decoder as in context_goldens.rs (the generated inputs are stored compressed).
/// A raw DEFLATE (RFC 1951) decoder: stored, fixed and dynamic Huffman blocks.
mod inflate {
    struct Bits<'a> {
        data: &'a [u8],
        pos: usize,
        buf: u32,
        cnt: u32,
    }

    impl Bits<'_> {
        fn need(&mut self, n: u32) -> u32 {
            while self.cnt < n {
                let b = *self.data.get(self.pos).expect("deflate: out of input");
                self.pos += 1;
                self.buf |= u32::from(b) << self.cnt;
                self.cnt += 8;
            }
            let v = self.buf & ((1u32 << n) - 1);
            self.buf >>= n;
            self.cnt -= n;
            v
        }
    }

    /// Canonical Huffman code: counts per length and symbols in code order.
    struct Huffman {
        count: [u16; 16],
        symbol: Vec<u16>,
    }

    impl Huffman {
        fn new(lengths: &[u8]) -> Huffman {
            let mut count = [0u16; 16];
            for &l in lengths {
                count[l as usize] += 1;
            }
            count[0] = 0;
            let mut offs = [0u16; 16];
            for l in 1..16 {
                offs[l] = offs[l - 1] + count[l - 1];
            }
            let mut symbol = vec![0u16; lengths.len()];
            for (s, &l) in lengths.iter().enumerate() {
                if l != 0 {
                    symbol[offs[l as usize] as usize] = s as u16;
                    offs[l as usize] += 1;
                }
            }
            Huffman { count, symbol }
        }

        fn decode(&self, bits: &mut Bits) -> u16 {
            let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
            for len in 1..16 {
                code |= bits.need(1) as i32;
                let count = i32::from(self.count[len]);
                if code - count < first {
                    return self.symbol[(index + (code - first)) as usize];
                }
                index += count;
                first += count;
                first <<= 1;
                code <<= 1;
            }
            panic!("deflate: bad code");
        }
    }

    const LBASE: [u16; 29] = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
        131, 163, 195, 227, 258,
    ];
    const LEXT: [u8; 29] = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
    ];
    const DBASE: [u16; 30] = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
        2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
    ];
    const DEXT: [u8; 30] = [
        0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12,
        13, 13,
    ];

    fn codes(bits: &mut Bits, out: &mut Vec<u8>, lit: &Huffman, dist: &Huffman) {
        loop {
            let sym = lit.decode(bits) as usize;
            if sym < 256 {
                out.push(sym as u8);
            } else if sym == 256 {
                return;
            } else {
                let s = sym - 257;
                let len = LBASE[s] as usize + bits.need(u32::from(LEXT[s])) as usize;
                let d = dist.decode(bits) as usize;
                let back = DBASE[d] as usize + bits.need(u32::from(DEXT[d])) as usize;
                let start = out.len() - back;
                for k in 0..len {
                    out.push(out[start + k]);
                }
            }
        }
    }

    pub fn inflate(data: &[u8]) -> Vec<u8> {
        let mut bits = Bits {
            data,
            pos: 0,
            buf: 0,
            cnt: 0,
        };
        let mut out = Vec::new();
        loop {
            let last = bits.need(1);
            match bits.need(2) {
                0 => {
                    bits.buf = 0;
                    bits.cnt = 0;
                    let p = bits.pos;
                    let len = u16::from_le_bytes([data[p], data[p + 1]]) as usize;
                    out.extend_from_slice(&data[p + 4..p + 4 + len]);
                    bits.pos = p + 4 + len;
                }
                1 => {
                    let mut l = [0u8; 288];
                    for (i, x) in l.iter_mut().enumerate() {
                        *x = match i {
                            0..=143 => 8,
                            144..=255 => 9,
                            256..=279 => 7,
                            _ => 8,
                        };
                    }
                    let lit = Huffman::new(&l);
                    let dist = Huffman::new(&[5u8; 30]);
                    codes(&mut bits, &mut out, &lit, &dist);
                }
                2 => {
                    let nlen = bits.need(5) as usize + 257;
                    let ndist = bits.need(5) as usize + 1;
                    let ncode = bits.need(4) as usize + 4;
                    const ORDER: [usize; 19] = [
                        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
                    ];
                    let mut cl = [0u8; 19];
                    for &o in ORDER.iter().take(ncode) {
                        cl[o] = bits.need(3) as u8;
                    }
                    let clh = Huffman::new(&cl);
                    let mut lengths = vec![0u8; nlen + ndist];
                    let mut i = 0;
                    while i < nlen + ndist {
                        let sym = clh.decode(&mut bits);
                        let (val, rep) = match sym {
                            0..=15 => (sym as u8, 1),
                            16 => (lengths[i - 1], 3 + bits.need(2) as usize),
                            17 => (0, 3 + bits.need(3) as usize),
                            _ => (0, 11 + bits.need(7) as usize),
                        };
                        for _ in 0..rep {
                            lengths[i] = val;
                            i += 1;
                        }
                    }
                    let lit = Huffman::new(&lengths[..nlen]);
                    let dist = Huffman::new(&lengths[nlen..]);
                    codes(&mut bits, &mut out, &lit, &dist);
                }
                _ => panic!("deflate: bad block type"),
            }
            if last == 1 {
                return out;
            }
        }
    }
}

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
    };
    let what = format!("{what} leaf {} keep {keep}", g["leaf"]);
    let plan = match compact::prepare(s, leaf, budget).unwrap() {
        Err(NoPlan::AlreadyCompacted | NoPlan::TooSmall) => {
            if g["result"] != "none" {
                bad.push(format!("{what}: pi has no plan, the reference has one"));
            }
            return;
        }
        Ok(p) => p,
    };
    if g["result"] != "plan" {
        bad.push(format!("{what}: pi has a plan, the reference has none"));
        return;
    }
    let path = s.path_to(leaf);
    let pos = |i: u32| path.iter().position(|&x| x == i).map_or(-1, |p| p as i64);
    let (read, modified) = plan.file_ops.lists();
    let conversation = compact::summarize::conversation(&plan.messages);
    let prefix = compact::summarize::conversation(&plan.turn_prefix);
    let mut ours = serde_json::json!({
        "firstKept": pos(plan.first_kept),
        "split": plan.split_turn,
        "turnStart": plan.turn_start.map_or(-1, pos),
        "tokensBefore": plan.tokens_before,
        "messages": plan.messages.len(),
        "prefix": plan.turn_prefix.len(),
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
