//! Data safety when writers die and other programs write: appends killed at random moments
//! (kill -9 and SIGTERM) never leave half a batch on the active path, readers never call a
//! file that is being appended to damaged, writers look at the end of the file before every
//! write (also in `pi run` and RPC mode), and the id cache is only a cache.
//!
//! The leaf and the context a file has *for the reference* are computed here with the
//! reference's own rule (session-format.md §5: the whole file split on `\n`, lines that do
//! not parse skipped, the leaf is the last entry in file order, the path follows `parentId`),
//! without Node.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::{self, signal};

/// A small deterministic random source (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One line of a session file as the reference reads it (when it parses).
#[derive(Clone, Debug)]
struct RefLine {
    ty: String,
    id: Option<String>,
    parent: Option<String>,
    /// Where the line is in the file.
    line: (usize, usize),
    /// Where its `message` value is, byte for byte.
    message: Option<(usize, usize)>,
    custom_type: Option<String>,
    /// The batch tag of a test message (`content` up to its first space).
    tag: Option<String>,
}

/// The reference's reading of a file that only grows: complete lines are parsed once.
#[derive(Default)]
struct RefReader {
    /// Bytes of complete lines already parsed.
    done: usize,
    lines: Vec<Option<RefLine>>,
    /// The file as last read (it must still start with these bytes the next time).
    seen: Vec<u8>,
}

fn parse_ref_line(bytes: &[u8], start: usize, end: usize) -> Option<RefLine> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(rename = "type")]
        ty: String,
        id: Option<String>,
        #[serde(rename = "parentId")]
        parent: Option<String>,
        #[serde(borrow)]
        message: Option<&'a serde_json::value::RawValue>,
        #[serde(rename = "customType")]
        custom_type: Option<String>,
    }
    let line = &bytes[start..end];
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let raw: Raw = serde_json::from_slice(line).ok()?;
    let message = raw.message.map(|m| {
        let at = m.get().as_ptr() as usize - bytes.as_ptr() as usize;
        (at, at + m.get().len())
    });
    let tag = raw.message.and_then(|m| {
        let m = m.get();
        let at = m.find("\"content\":\"")? + 11;
        let end = m[at..].find(' ')?;
        Some(m[at..at + end].to_owned())
    });
    Some(RefLine {
        ty: raw.ty,
        id: raw.id,
        parent: raw.parent,
        line: (start, end),
        message,
        custom_type: raw.custom_type,
        tag,
    })
}

/// What the reference makes of a file.
struct RefView {
    /// Entries (not headers) in file order.
    entries: Vec<RefLine>,
    by_id: HashMap<String, usize>,
}

impl RefReader {
    /// Reads the file again; panics if a byte seen before changed (nothing is ever
    /// truncated or rewritten).
    fn read(&mut self, path: &Path) -> RefView {
        let bytes = std::fs::read(path).unwrap();
        assert!(
            bytes.starts_with(&self.seen),
            "{}: bytes already in the file changed (it was truncated or rewritten)",
            path.display()
        );
        let mut pos = self.done;
        while let Some(nl) = memchr(&bytes[pos..]) {
            self.lines.push(parse_ref_line(&bytes, pos, pos + nl));
            pos += nl + 1;
        }
        self.done = pos;
        let tail = parse_ref_line(&bytes, pos, bytes.len());
        let mut parsed = self.lines.iter().flatten().chain(tail.iter());
        assert!(
            parsed.next().is_some_and(|h| h.ty == "session"),
            "the first parsed line is the header"
        );
        let entries: Vec<RefLine> = parsed.filter(|l| l.ty != "session").cloned().collect();
        self.seen = bytes;
        let mut by_id = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            if let Some(id) = &e.id {
                by_id.insert(id.clone(), i);
            }
        }
        RefView { entries, by_id }
    }

    fn bytes(&self, span: (usize, usize)) -> &[u8] {
        &self.seen[span.0..span.1]
    }
}

fn memchr(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

impl RefView {
    fn leaf(&self) -> Option<usize> {
        self.entries.len().checked_sub(1)
    }

    /// The path from the root to `from`.
    fn path(&self, from: Option<usize>) -> Vec<usize> {
        let mut path = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = from;
        while let Some(i) = cur {
            if !seen.insert(i) {
                break;
            }
            path.push(i);
            cur = self.entries[i]
                .parent
                .as_ref()
                .and_then(|p| self.by_id.get(p).copied());
        }
        path.reverse();
        path
    }

    /// The agent messages of the leaf's path, as spans of the file (these sessions hold
    /// messages and `custom` entries only).
    fn context(&self) -> Vec<(usize, usize)> {
        self.path(self.leaf())
            .into_iter()
            .filter_map(|i| {
                let e = &self.entries[i];
                match e.ty.as_str() {
                    "message" => e.message,
                    "custom" => None,
                    other => panic!("unexpected entry type {other} on the path"),
                }
            })
            .collect()
    }
}

/// The batch of a test message's tag (`r0k3-5` → `r0k3`).
fn batch_of(tag: &str) -> &str {
    tag.rsplit_once('-').map_or(tag, |(b, _)| b)
}

/// A batch of `n` user messages of about `size` bytes, tagged `tag-i`.
fn batch(tag: &str, n: usize, size: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        out.push_str(&user(&format!("{tag}-{i} {}", "y".repeat(size))));
        out.push('\n');
    }
    out
}

fn marker_of(session: &Path) -> PathBuf {
    let real = std::fs::canonicalize(session).unwrap();
    PathBuf::from(format!("{}.pending", real.display()))
}

fn check_records(w: &World, s: &Path) -> (i32, Vec<Value>) {
    let o = w
        .pi()
        .args(["session", "check", s.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        jsonl(&String::from_utf8_lossy(&o.stdout)),
    )
}

fn kinds_of(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["severity"].as_str().unwrap(),
                r["kind"].as_str().unwrap()
            )
        })
        .collect()
}

/// The complete lines of a command's stdout (a killed command may leave half a line).
fn printed_lines(path: &Path) -> Vec<String> {
    let text = String::from_utf8(std::fs::read(path).unwrap()).unwrap();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    complete.lines().map(str::to_owned).collect()
}

/// How one killed append ended.
#[derive(Debug, Default)]
struct Tally {
    kills: usize,
    sigterm: usize,
    /// Killed with the marker in place and bytes of the batch in the file.
    interrupted: usize,
    /// ... of which the last line was incomplete.
    torn: usize,
    /// Killed before anything was written.
    nothing: usize,
    /// Acknowledged (something printed) before the kill.
    acknowledged: usize,
    /// Killed between removing the marker and printing: written whole, not acknowledged.
    ack_lost: usize,
}

/// Kills `pi session append` at random moments during large batches (kill -9, and SIGTERM
/// every fourth time), and after every kill checks, with the reference's rule on the file:
/// (a) every printed entry is in the file, byte for byte; (b) no entry of a batch that was
/// not acknowledged is on the leaf's path, then or later, nor an ancestor of any later
/// append; (c) `check` exits 0 and reports the interrupted batch as a warning, before and
/// after it is recovered; (d) `pi context build` (which recovers) prints exactly the context
/// the reference computes from the file. Bytes once in the file never change.
#[test]
fn killed_appends_never_leave_half_a_batch_on_the_path() {
    const ROUNDS: usize = 6;
    const KILLS: usize = 10;
    const ENTRIES: usize = 12;
    const SIZE: usize = 64 * 1024;
    let started = Instant::now();
    let w = World::new();
    let mut rng = Rng(0x5eed_0012);
    let mut t = Tally::default();
    for round in 0..ROUNDS {
        let s = w.new_session();
        let sp = s.to_str().unwrap().to_owned();
        let marker = marker_of(&s);
        let mut reader = RefReader::default();
        // Batches whose entries must stay off the path, and the messages acknowledged, in
        // order (as spans of the file).
        let mut unacked: HashSet<String> = HashSet::new();
        let mut expected: Vec<(usize, usize)> = Vec::new();
        // A first batch, not killed, also times a whole append.
        let first = w.write(
            &format!("r{round}first.jsonl"),
            batch(&format!("r{round}first"), ENTRIES, SIZE),
        );
        let timer = Instant::now();
        let o = w
            .std_cmd()
            .args(["session", "append", &sp])
            .stdin(File::open(&first).unwrap())
            .output()
            .unwrap();
        assert!(o.status.success());
        let whole = timer.elapsed();
        let view = reader.read(&s);
        for l in String::from_utf8(o.stdout).unwrap().lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            let e = &view.entries[view.by_id[v["id"].as_str().unwrap()]];
            expected.push(e.message.unwrap());
        }
        for k in 0..KILLS {
            let tag = format!("r{round}k{k}");
            let input = w.write(&format!("{tag}.jsonl"), batch(&tag, ENTRIES, SIZE));
            let out = w.path(&format!("{tag}.out"));
            let before = std::fs::metadata(&s).unwrap().len();
            let mut child = w
                .std_cmd()
                .args(["session", "append", &sp])
                .stdin(File::open(&input).unwrap())
                .stdout(File::create(&out).unwrap())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            // When to kill: as soon as the batch reaches the file, a little after the
            // marker appears, or at any moment of the command's life.
            let poll = |done: &dyn Fn() -> bool, child: &mut std::process::Child| {
                let t0 = Instant::now();
                while !done() && t0.elapsed() < Duration::from_secs(20) {
                    if child.try_wait().unwrap().is_some() {
                        return;
                    }
                    std::thread::sleep(Duration::from_micros(40));
                }
            };
            match rng.below(10) {
                0..=3 => poll(
                    &|| std::fs::metadata(&s).is_ok_and(|m| m.len() > before),
                    &mut child,
                ),
                4..=6 => {
                    poll(&|| marker.exists(), &mut child);
                    std::thread::sleep(Duration::from_micros(rng.below(3000)));
                }
                _ => {
                    let span = whole.as_micros() as u64 * 2;
                    std::thread::sleep(Duration::from_micros(rng.below(span)));
                }
            }
            if k % 4 == 3 {
                signal(&child, libc::SIGTERM);
                t.sigterm += 1;
            } else {
                let _ = child.kill();
            }
            let _ = child.wait().unwrap();
            t.kills += 1;
            let marked = marker.exists();
            let printed = printed_lines(&out);
            let view = reader.read(&s);
            let grew = reader.seen.len() as u64 > before;
            let in_file: Vec<&RefLine> = view
                .entries
                .iter()
                .filter(|e| e.tag.as_deref().is_some_and(|g| batch_of(g) == tag))
                .collect();
            // (a) what was printed is in the file, byte for byte.
            for p in &printed {
                let v: Value = serde_json::from_str(p).unwrap();
                let e = view
                    .by_id
                    .get(v["id"].as_str().unwrap())
                    .map(|&i| &view.entries[i]);
                assert!(
                    e.is_some_and(|e| reader.bytes(e.line) == p.as_bytes()),
                    "{tag}: printed but not in the file"
                );
            }
            let acknowledged = if !printed.is_empty() {
                assert!(!marked, "{tag}: acknowledged before its marker was removed");
                t.acknowledged += 1;
                true
            } else if marked {
                if grew {
                    t.interrupted += 1;
                    if !reader.seen.ends_with(b"\n") {
                        t.torn += 1;
                    }
                } else {
                    t.nothing += 1;
                }
                false
            } else if !grew {
                t.nothing += 1;
                false
            } else if in_file.len() == ENTRIES && reader.seen.ends_with(b"\n") {
                // The marker is gone, so the batch was written whole and synced: it is
                // committed, only its acknowledgement was lost.
                t.ack_lost += 1;
                true
            } else {
                // Part of a batch and no marker: never with pi, whose marker outlives the
                // write; the checks below say what that leads to.
                t.interrupted += 1;
                false
            };
            if acknowledged {
                assert_eq!(in_file.len(), ENTRIES, "{tag}: committed batches are whole");
                expected.extend(in_file.iter().filter_map(|e| e.message));
            } else {
                unacked.insert(tag.clone());
            }
            // (c) check, before recovery.
            let (code, records) = check_records(&w, &s);
            let kinds = kinds_of(&records);
            assert_eq!(code, 0, "{tag}: check before recovery: {records:?}");
            assert!(
                !kinds.iter().any(|k| k.starts_with("error")),
                "{tag}: {kinds:?}"
            );
            if grew && !acknowledged {
                assert!(
                    records.iter().any(|r| r["kind"] == "interrupted-append"
                        && r["message"]
                            .as_str()
                            .unwrap()
                            .contains("its writer is gone")),
                    "{tag}: the interrupted batch is reported: {records:?}"
                );
            }
            // (d) the context pi prints (it recovers first) is the reference's context of
            // the file as it then is.
            let o = w.pi().args(["context", "build", &sp]).output().unwrap();
            assert!(
                o.status.success(),
                "{tag}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(!marker.exists(), "{tag}: the reader recovered the file");
            let view = reader.read(&s);
            let context = view.context();
            let shown: Vec<&[u8]> = o.stdout.split(|&b| b == b'\n').collect();
            assert_eq!(shown.len(), context.len() + 1, "{tag}: context length");
            assert!(
                context
                    .iter()
                    .zip(&shown)
                    .all(|(&c, a)| reader.bytes(c) == *a),
                "{tag}: pi's context differs from the reference's"
            );
            // (b) the context is the acknowledged conversation: nothing unacknowledged is
            // on the path.
            assert!(
                context == expected,
                "{tag}: the context is the acknowledged messages"
            );
            for i in view.path(view.leaf()) {
                if let Some(g) = &view.entries[i].tag {
                    assert!(!unacked.contains(batch_of(g)), "{tag}: {g} is on the path");
                }
            }
            if grew && !acknowledged {
                let leaf = &view.entries[view.leaf().unwrap()];
                assert_eq!(leaf.custom_type.as_deref(), Some("interrupted-append"));
            }
            // (c) check, after recovery.
            let (code, records) = check_records(&w, &s);
            assert_eq!(code, 0, "{tag}: check after recovery: {records:?}");
            let kinds = kinds_of(&records);
            assert!(
                kinds.iter().all(|k| k == "warning:interrupted-append"),
                "{tag}: {kinds:?}"
            );
            let _ = std::fs::remove_file(&input);
        }
        // A later append continues the acknowledged conversation.
        let last = w.ok_in(
            &["session", "append", &sp],
            &user(&format!("r{round}last-0 end")),
        );
        let last: Value = serde_json::from_str(last.trim()).unwrap();
        let view = reader.read(&s);
        expected.push(
            view.entries[view.by_id[last["id"].as_str().unwrap()]]
                .message
                .unwrap(),
        );
        assert!(
            view.context() == expected,
            "round {round}: the final context"
        );
        // No entry of an unacknowledged batch is an ancestor of anything acknowledged.
        for (i, e) in view.entries.iter().enumerate() {
            let acked = match e.tag.as_deref() {
                Some(g) => !unacked.contains(batch_of(g)),
                None => false,
            };
            if !acked {
                continue;
            }
            for a in view.path(Some(i)) {
                if let Some(g) = &view.entries[a].tag {
                    assert!(
                        !unacked.contains(batch_of(g)),
                        "{g} is an ancestor of {:?}",
                        e.tag
                    );
                }
            }
        }
        let (code, records) = check_records(&w, &s);
        assert_eq!(code, 0, "{records:?}");
    }
    eprintln!("{t:?} in {:?}", started.elapsed());
    assert!(t.kills >= 50 && t.sigterm >= 10);
    assert!(
        t.interrupted >= 10,
        "too few kills landed while a batch was being written: {t:?}"
    );
}

/// Writes what a writer killed during its write leaves: the marker, `whole` complete
/// lines of a batch and half of the next one. Returns the batch's start offset.
fn interrupt_by_hand(s: &Path, whole: usize) -> u64 {
    let meta = std::fs::metadata(s).unwrap();
    let start = meta.len();
    let lines: Vec<String> = (0..=whole)
        .map(|i| {
            json!({"type": "message", "id": format!("dead{i:04}"),
                   "parentId": if i == 0 { Value::Null } else { json!(format!("dead{:04}", i - 1)) },
                   "timestamp": "2026-01-02T03:04:05.678Z",
                   "message": {"role": "user", "content": format!("orphan {i}"), "timestamp": 1}})
            .to_string()
        })
        .collect();
    let mut bytes = String::new();
    for l in &lines[..whole] {
        bytes.push_str(l);
        bytes.push('\n');
    }
    let last = &lines[whole];
    bytes.push_str(&last[..last.len() / 2]);
    let end = start + (lines.iter().map(|l| l.len() + 1).sum::<usize>()) as u64;
    std::fs::write(
        marker_of(s),
        json!({"pid": 1, "dev": meta.dev(), "ino": meta.ino(), "start": start, "end": end})
            .to_string(),
    )
    .unwrap();
    let mut f = OpenOptions::new().append(true).open(s).unwrap();
    f.write_all(bytes.as_bytes()).unwrap();
    start
}

/// An interrupted batch, found by a reader that can write: recovered (a note says so),
/// the leaf back where it was; `check` warns before and after, and exits 0; the next
/// append continues the acknowledged conversation; nothing is truncated.
#[test]
fn an_interrupted_batch_is_recovered_by_the_next_reader_or_writer() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    let a = jsonl(&w.ok_in(
        &["session", "append", sp],
        &format!("{}\n{}", user("one"), user("two")),
    ));
    let leaf = a[1]["id"].as_str().unwrap().to_owned();
    interrupt_by_hand(&s, 2);
    let size = std::fs::metadata(&s).unwrap().len();
    let (code, records) = check_records(&w, &s);
    assert_eq!(code, 0, "{records:?}");
    assert_eq!(kinds_of(&records), ["warning:interrupted-append"]);
    assert_eq!(records[0]["line"], 4);
    assert!(
        records[0]["message"]
            .as_str()
            .unwrap()
            .contains("2 entries and an incomplete line (lines 4–6)"),
        "{records:?}"
    );
    assert_eq!(
        std::fs::metadata(&s).unwrap().len(),
        size,
        "check writes nothing"
    );
    insta::assert_snapshot!(w.snap(&["session", "check", sp, "--format", "human"]), @"
    status: 0
    ----- stdout -----
    [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl:4: warning[interrupted-append]: an append was interrupted (its writer is gone) and left 2 entries and an incomplete line (lines 4–6), never acknowledged; the next `pi` command that can write the file moves the leaf back before them
    [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl: 0 errors, 1 warning (4 entries)
    ----- stderr -----
    ");
    // A reader recovers it.
    let o = w.pi().args(["session", "log", sp]).output().unwrap();
    assert!(o.status.success());
    let log = jsonl(&String::from_utf8_lossy(&o.stdout));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("recovered an interrupted append"),
        "{stderr}"
    );
    assert!(!marker_of(&s).exists());
    let ids: Vec<&str> = log.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids[..2], [a[0]["id"].as_str().unwrap(), leaf.as_str()]);
    let rec = &log[2];
    assert_eq!(rec["type"], "custom");
    assert_eq!(rec["customType"], "interrupted-append");
    assert_eq!(rec["parentId"], leaf.as_str());
    assert_eq!(rec["data"]["from"], "dead0001");
    assert_eq!(rec["data"]["entries"], 2);
    assert_eq!(rec["data"]["end"], size + 1);
    let bytes = std::fs::read(&s).unwrap();
    assert_eq!(bytes[size as usize], b'\n', "the incomplete line was ended");
    // The reference's rule agrees.
    let view = RefReader::default().read(&s);
    let leaf_entry = &view.entries[view.leaf().unwrap()];
    assert_eq!(leaf_entry.parent.as_deref(), Some(leaf.as_str()));
    assert_eq!(view.context().len(), 2);
    // check: recovered, a warning.
    let (code, records) = check_records(&w, &s);
    assert_eq!(code, 0, "{records:?}");
    assert_eq!(kinds_of(&records), ["warning:interrupted-append"]);
    assert_eq!(records[0]["line"], 7);
    // The next writer continues from the recovery entry.
    let b = jsonl(&w.ok_in(&["session", "append", sp], &user("three")));
    assert_eq!(b[0]["parentId"], rec["id"]);
    let ctx = jsonl(&w.ok(&["context", "build", sp]));
    let texts: Vec<&str> = ctx.iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(texts, ["one", "two", "three"]);
    // A writer recovers too, before its own entry: label, with a batch that left only an
    // incomplete line.
    interrupt_by_hand(&s, 0);
    let l = jsonl(&w.ok(&["session", "label", sp, &leaf, "kept"]));
    let view = RefReader::default().read(&s);
    let n = view.entries.len();
    assert_eq!(
        view.entries[n - 2].custom_type.as_deref(),
        Some("interrupted-append")
    );
    assert_eq!(view.entries[n - 2].parent.as_deref(), b[0]["id"].as_str());
    assert_eq!(l[0]["parentId"].as_str(), view.entries[n - 2].id.as_deref());
    let (code, records) = check_records(&w, &s);
    assert_eq!(code, 0, "{records:?}");
    assert_eq!(
        kinds_of(&records),
        ["warning:interrupted-append", "warning:interrupted-append"]
    );
    insta::assert_snapshot!(w.snap(&["session", "check", sp, "--format", "human"]), @"
    status: 0
    ----- stdout -----
    [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl:7: warning[interrupted-append]: an append was interrupted; entry 'a2df7737' recovered it: what it left, 2 entries and an incomplete line (lines 4–6), is an abandoned branch, and the conversation continues from '987bbcbf'
    [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl:10: warning[interrupted-append]: an append was interrupted; entry '07347ff6' recovered it: what it left, an incomplete line (line 9), is an abandoned branch, and the conversation continues from '85e7bb0f'
    [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl: 0 errors, 2 warnings (8 entries)
    ----- stderr -----
    ");
    // A marker whose writer died before writing anything is just removed.
    let meta = std::fs::metadata(&s).unwrap();
    std::fs::write(
        marker_of(&s),
        json!({"pid": 1, "dev": meta.dev(), "ino": meta.ino(), "start": meta.len(), "end": meta.len() + 10}).to_string(),
    )
    .unwrap();
    let (code, records) = check_records(&w, &s);
    assert_eq!((code, records.len()), (0, 2));
    w.ok(&["session", "log", sp]);
    assert!(!marker_of(&s).exists());
    assert_eq!(std::fs::metadata(&s).unwrap().len(), meta.len());
}

/// A session that cannot be written is read as recovery would leave it: the leaf and the
/// context are those from before the interrupted batch, with a warning.
#[test]
fn an_interrupted_batch_in_a_read_only_file_is_left_out() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: permissions do not stop root");
        return;
    }
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    w.ok_in(&["session", "append", sp], &user("kept"));
    interrupt_by_hand(&s, 3);
    let mut perms = std::fs::metadata(&s).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o444);
    std::fs::set_permissions(&s, perms).unwrap();
    let o = w.pi().args(["context", "build", sp]).output().unwrap();
    assert!(o.status.success());
    let ctx = jsonl(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(ctx.len(), 1);
    assert_eq!(ctx[0]["content"], "kept");
    assert!(String::from_utf8_lossy(&o.stderr).contains("could not be recovered"));
    assert!(marker_of(&s).exists());
    let (code, records) = check_records(&w, &s);
    assert_eq!(code, 0, "{records:?}");
    assert_eq!(kinds_of(&records), ["warning:interrupted-append"]);
}

/// An append in progress is not damage: while a writer holds the lock with its batch half
/// written, `check` exits 0 with a note and readers see the file without the batch; once
/// the writer is gone, the batch is an interrupted one (a warning).
#[test]
fn an_append_in_progress_is_not_damage() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    let a = jsonl(&w.ok_in(&["session", "append", sp], &user("one")));
    let lock = OpenOptions::new().read(true).append(true).open(&s).unwrap();
    lock.lock().unwrap();
    interrupt_by_hand(&s, 2);
    let (code, records) = check_records(&w, &s);
    assert_eq!(code, 0, "{records:?}");
    assert_eq!(kinds_of(&records), ["note:append-in-progress"]);
    let o = w
        .pi()
        .args(["session", "check", sp, "--format", "human"])
        .output()
        .unwrap();
    assert!(o.status.success());
    insta::assert_snapshot!(w.shown(&o), @"
    status: 0
    ----- stdout -----
    [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl:3: note[append-in-progress]: another process is appending to the file (from byte 301); what it writes was not read
    [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl: ok (1 entries)
    ----- stderr -----
    ");
    let log = jsonl(&w.ok(&["session", "log", sp, "--all"]));
    assert_eq!(log.len(), 1, "what is being written is not read");
    assert_eq!(log[0]["id"], a[0]["id"]);
    assert!(
        marker_of(&s).exists(),
        "the live writer's marker is left alone"
    );
    drop(lock);
    let (code, records) = check_records(&w, &s);
    assert_eq!(code, 0);
    assert_eq!(kinds_of(&records), ["warning:interrupted-append"]);
}

/// `check` run over and over while large batches are appended never reports damage.
#[test]
fn check_during_large_appends_exits_0() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap().to_owned();
    let input = w.write("big.jsonl", batch("big", 24, 256 * 1024));
    let mut runs = 0;
    let mut notes = 0;
    for _ in 0..3 {
        let mut child = w
            .std_cmd()
            .args(["session", "append", &sp])
            .stdin(File::open(&input).unwrap())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        while child.try_wait().unwrap().is_none() {
            let (code, records) = check_records(&w, &s);
            runs += 1;
            assert_eq!(code, 0, "check during an append: {records:?}");
            assert!(
                kinds_of(&records)
                    .iter()
                    .all(|k| k == "note:append-in-progress"),
                "{records:?}"
            );
            notes += records.len();
        }
        assert!(child.wait().unwrap().success());
    }
    let (code, records) = check_records(&w, &s);
    assert_eq!((code, records.len()), (0, 0));
    eprintln!("{runs} checks during appends, {notes} saw one in progress");
}

/// A line another program leaves incomplete between pi's writes (a hook doing
/// `printf X >> "$PI_SESSION_FILE"`) is ended before pi's next entry, in `pi run` and in
/// RPC mode: no recorded message is glued to it.
#[test]
fn writers_look_at_the_end_of_the_file_before_every_write() {
    let server = ModelServer::start();
    let w = run_support::world(&server);
    let hook = crate::ext_hooks::script(
        &w,
        "hooks/scribble.sh",
        r#"cat > /dev/null; printf X >> "$PI_SESSION_FILE""#,
    );
    let s = w.new_session();
    let sp = s.to_str().unwrap().to_owned();
    let arg = format!("message_end={}", hook.display());
    server.push(Reply::openai_text(&["first answer"]));
    let o = run_support::run(&w, &[&sp, "--hook", &arg, "-p", "hello"]);
    run_support::status(&o, 0);
    // RPC mode, on the same session.
    server.push(Reply::openai_text(&["second answer"]));
    let o = w
        .pi()
        .args(["run", "--rpc", &sp, "--hook", &arg])
        .write_stdin(format!(
            "{}\n",
            json!({"type": "prompt", "message": "again"})
        ))
        .output()
        .unwrap();
    run_support::status(&o, 0);
    let log = jsonl(&w.ok(&["session", "log", &sp, "--type", "message"]));
    let texts: Vec<String> = log
        .iter()
        .filter(|e| e["message"]["role"] != "system")
        .map(|e| run_support::text(&e["message"]))
        .collect();
    assert_eq!(texts, ["hello", "first answer", "again", "second answer"]);
    // Each X is a line of its own.
    let text = std::fs::read_to_string(&s).unwrap();
    let xs = text.lines().filter(|l| *l == "X").count();
    // One per message recorded: the first run's system message (its prompt and tools) too.
    assert_eq!(xs, 5, "{text}");
    assert!(!text.lines().any(|l| l.starts_with('X') && l.len() > 1));
}

/// The id cache is a cache: after an edit in the middle of a file that keeps its size and
/// inode (which the cache's validation cannot see), an id that is in the file is found.
#[test]
fn an_id_the_cache_misses_is_looked_up_in_the_file() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    let input: Vec<String> = (0..6)
        .map(|i| user(&format!("{i} {}", "z".repeat(6000))))
        .collect();
    let a = jsonl(&w.ok_in(&["session", "append", sp], &input.join("\n")));
    // Cache the index (a label writes it).
    w.ok(&[
        "session",
        "label",
        sp,
        a[0]["id"].as_str().unwrap(),
        "start",
    ]);
    // Rewrite the id of the middle entry in place: same size, same inode.
    let old = a[3]["id"].as_str().unwrap();
    let bytes = std::fs::read(&s).unwrap();
    let needle = format!("\"id\":\"{old}\"");
    let at = bytes
        .windows(needle.len())
        .position(|win| win == needle.as_bytes())
        .unwrap();
    assert!(at > 4096 && at + 4096 < bytes.len(), "in the middle");
    let f = OpenOptions::new().write(true).open(&s).unwrap();
    f.write_all_at(b"abcdef12", (at + 6) as u64).unwrap();
    drop(f);
    for target in ["abcdef1", "abcdef12"] {
        let l = jsonl(&w.ok(&["session", "label", sp, target, "found"]));
        assert_eq!(l[0]["targetId"], "abcdef12", "{target}");
    }
    // An id that is in no line is still an error, and the old id is gone.
    for target in [old, "12345678"] {
        let o = w
            .pi()
            .args(["session", "label", sp, target, "x"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{target}");
    }
    // A reference to it in appended input is found as well.
    let o = w.ok_in(
        &["session", "append", sp],
        &json!({"type": "label", "targetId": "abcdef12", "label": "again"}).to_string(),
    );
    assert_eq!(jsonl(&o)[0]["targetId"], "abcdef12");
}
