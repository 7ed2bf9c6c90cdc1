//! `pi session gc` on generated directories (tests/cli/common/sessions.rs): several projects,
//! a fork and its parent, an empty session, a locked session.
//!
//! Modification times there, against the clock `PI_NOW` = 2026-01-02T03:04:05Z: old
//! 2025-11-15 (project other), other 2025-12-29, parser 2025-12-31, its fork 2026-01-01 12:00,
//! empty 2026-01-01 13:00 (the last three in the project).

use std::path::{Path, PathBuf};

use pi_session::append::Appender;
use serde_json::Value;

use crate::common::sessions::{Sessions, populate, session_dir};
use crate::common::{World, jsonl};

fn gc(w: &World, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["session", "gc"];
    all.extend_from_slice(args);
    jsonl(&w.ok(&all))
}

/// `action path-file-name reason` of each session record, and the total.
fn summary(recs: &[Value]) -> (Vec<String>, Value) {
    let (total, rest) = recs.split_last().expect("a total record");
    assert_eq!(total["total"], true, "{total}");
    let lines = rest
        .iter()
        .map(|r| {
            let name = Path::new(r["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            format!(
                "{} {name} {}",
                r["action"].as_str().unwrap(),
                r["reason"].as_str().unwrap()
            )
        })
        .collect();
    (lines, total.clone())
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn archived(w: &World, cwd: &Path, file: &Path) -> PathBuf {
    w.agent()
        .join("archive")
        .join(pi_base::config::encode_cwd(&cwd.to_string_lossy()))
        .join(file.file_name().unwrap())
}

fn all_files(s: &Sessions) -> [&PathBuf; 5] {
    [&s.parser, &s.fork, &s.empty, &s.other, &s.old]
}

#[test]
fn dry_run_changes_nothing_and_prints_the_records_of_the_real_run() {
    let w = World::new();
    let s = populate(&w);
    let dry = gc(&w, &["--all", "--older-than", "1d", "--dry-run"]);
    let (lines, total) = summary(&dry);
    assert_eq!(
        lines,
        [
            format!("archive {} older than 1d", name(&s.old)),
            format!("archive {} older than 1d", name(&s.other)),
            format!(
                "keep {} parent of kept session {}",
                name(&s.parser),
                s.fork.display()
            ),
        ]
    );
    assert_eq!(total["sessions"], 2);
    assert_eq!(total["kept"], 1);
    assert_eq!(total["dryRun"], true);
    assert_eq!(total["action"], "archive");
    let bytes =
        std::fs::metadata(&s.old).unwrap().len() + std::fs::metadata(&s.other).unwrap().len();
    assert_eq!(total["bytes"], bytes);
    for f in all_files(&s) {
        assert!(f.exists(), "{}", f.display());
    }
    assert!(!w.agent().join("archive").exists());

    let real = gc(&w, &["--all", "--older-than", "1d"]);
    let strip = |recs: &[Value]| -> Vec<Value> {
        recs.iter()
            .map(|r| {
                let mut r = r.clone();
                r.as_object_mut().unwrap().remove("dryRun");
                r
            })
            .collect()
    };
    assert_eq!(strip(&real), strip(&dry));
    assert_eq!(real.last().unwrap()["dryRun"], false);
    // moved with the same layout, byte for byte
    let old_to = archived(&w, &s.other_cwd, &s.old);
    assert_eq!(dry[0]["to"], old_to.to_str().unwrap());
    assert!(!s.old.exists() && !s.other.exists());
    assert!(old_to.is_file());
    assert!(archived(&w, &s.other_cwd, &s.other).is_file());
    assert!(s.parser.exists() && s.fork.exists() && s.empty.exists());
    // pi still reads them there
    let listed = jsonl(&w.ok(&[
        "--session-dir",
        old_to.parent().unwrap().to_str().unwrap(),
        "session",
        "list",
    ]));
    assert_eq!(listed.len(), 2, "{listed:?}");
    // nothing left to do: only the total
    let again = gc(&w, &["--all", "--older-than", "1d"]);
    assert_eq!(
        summary(&again).0,
        vec![format!(
            "keep {} parent of kept session {}",
            name(&s.parser),
            s.fork.display()
        )]
    );
}

#[test]
fn include_parents_takes_the_parent_of_a_kept_fork() {
    let w = World::new();
    let s = populate(&w);
    let (lines, _) = summary(&gc(&w, &["--older-than", "1d", "--include-parents"]));
    assert_eq!(
        lines,
        [format!("archive {} older than 1d", name(&s.parser))]
    );
    assert!(!s.parser.exists());
    assert!(archived(&w, &w.proj(), &s.parser).is_file());
    // the default scope is the current directory's sessions
    assert!(s.old.exists() && s.other.exists());
}

#[test]
fn criteria_must_all_hold() {
    let w = World::new();
    let s = populate(&w);
    let (lines, total) = summary(&gc(&w, &["--empty", "--all", "--dry-run"]));
    assert_eq!(lines, [format!("archive {} empty", name(&s.empty))]);
    assert_eq!(total["sessions"], 1);
    // entries but no message: empty too
    let settings_only = crate::common::sessions::write(
        &w,
        &w.proj(),
        "0193a000-0000-7000-8000-0000000000aa",
        "2025-12-01T00:00:00.000Z",
        None,
        &[
            serde_json::json!({"type":"model_change","id":"m1","parentId":null,
            "timestamp":"2025-12-01T00:00:00.000Z","provider":"anthropic","modelId":"x"}),
        ],
        "2025-12-01T00:00:00.000Z",
    );
    let (lines, _) = summary(&gc(&w, &["--empty", "--dry-run"]));
    assert_eq!(
        lines,
        [
            format!("archive {} empty", name(&settings_only)),
            format!("archive {} empty", name(&s.empty)),
        ]
    );
    std::fs::remove_file(&settings_only).unwrap();
    // the empty session is only 14 hours old
    let (lines, total) = summary(&gc(&w, &["--empty", "--older-than", "1d", "--dry-run"]));
    assert!(lines.is_empty(), "{lines:?}");
    assert_eq!(total["sessions"], 0);
    assert_eq!(total["bytes"], 0);
    // sizes: the parser session is the largest of the project
    let parser = std::fs::metadata(&s.parser).unwrap().len();
    let fork = std::fs::metadata(&s.fork).unwrap().len();
    assert!(parser > fork);
    let limit = (parser - 1).to_string();
    let (lines, _) = summary(&gc(
        &w,
        &["--larger-than", &limit, "--include-parents", "--dry-run"],
    ));
    assert_eq!(
        lines,
        [format!("archive {} larger than {limit}", name(&s.parser))]
    );
    let (lines, _) = summary(&gc(
        &w,
        &[
            "--larger-than",
            "1K",
            "--older-than",
            "12h",
            "--all",
            "--dry-run",
        ],
    ));
    assert!(
        lines
            .iter()
            .all(|l| l.ends_with("older than 12h, larger than 1K")
                || l.contains("parent of kept session")),
        "{lines:?}"
    );
    assert!(!lines.is_empty());
    // --cwd picks another project's sessions
    let (lines, _) = summary(&gc(
        &w,
        &[
            "--older-than",
            "1d",
            "--cwd",
            s.other_cwd.to_str().unwrap(),
            "--dry-run",
        ],
    ));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| l.starts_with("archive ")));
}

#[test]
fn a_locked_session_is_never_touched_nor_its_parent() {
    let w = World::new();
    let s = populate(&w);
    let lock = Appender::open(&s.fork, None).unwrap();
    let before = std::fs::read(&s.fork).unwrap();
    let dry = summary(&gc(&w, &["--older-than", "1m", "--dry-run"])).0;
    let real = summary(&gc(&w, &["--older-than", "1m"])).0;
    let expected = [
        format!("archive {} older than 1m", name(&s.empty)),
        format!("keep {} locked (in use)", name(&s.fork)),
        format!(
            "keep {} parent of kept session {}",
            name(&s.parser),
            s.fork.display()
        ),
    ];
    let mut sorted = real.clone();
    sorted.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(sorted, want);
    assert_eq!(dry, real);
    assert_eq!(std::fs::read(&s.fork).unwrap(), before);
    assert!(s.parser.exists() && !s.empty.exists());
    // even --include-parents and --delete leave the locked one alone
    let (lines, _) = summary(&gc(
        &w,
        &["--older-than", "1m", "--include-parents", "--delete"],
    ));
    assert_eq!(
        lines,
        [
            format!("delete {} older than 1m", name(&s.parser)),
            format!("keep {} locked (in use)", name(&s.fork)),
        ]
    );
    assert!(s.fork.exists() && !s.parser.exists());
    drop(lock);
    let (lines, _) = summary(&gc(&w, &["--older-than", "1m", "--delete"]));
    assert_eq!(lines, [format!("delete {} older than 1m", name(&s.fork))]);
    assert!(!s.fork.exists());
}

#[test]
fn delete_unlinks_and_archive_dir_is_taken() {
    let w = World::new();
    let s = populate(&w);
    let recs = gc(&w, &["--empty", "--delete"]);
    assert_eq!(recs[0]["action"], "delete");
    assert!(recs[0].get("to").is_none());
    assert_eq!(recs[1]["action"], "delete");
    assert!(recs[1].get("to").is_none());
    assert!(!s.empty.exists());
    assert!(!w.agent().join("archive").exists());
    // --archive DIR, relative to the current directory
    let recs = gc(
        &w,
        &["--all", "--older-than", "30d", "--archive", "../attic"],
    );
    let to = w
        .proj()
        .parent()
        .unwrap()
        .join("attic")
        .join(pi_base::config::encode_cwd(&s.other_cwd.to_string_lossy()))
        .join(s.old.file_name().unwrap());
    assert_eq!(recs[0]["to"], to.to_str().unwrap());
    assert!(to.is_file() && !s.old.exists());
}

#[test]
fn a_file_in_the_archive_is_never_replaced() {
    let w = World::new();
    let s = populate(&w);
    let dest = archived(&w, &s.other_cwd, &s.old);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(&dest, "already here\n").unwrap();
    for dry in [true, false] {
        let mut args = vec!["--all", "--older-than", "30d"];
        if dry {
            args.push("--dry-run");
        }
        let (lines, total) = summary(&gc(&w, &args));
        assert_eq!(
            lines,
            [format!(
                "keep {} {} already exists",
                name(&s.old),
                dest.display()
            )]
        );
        assert_eq!(total["kept"], 1);
    }
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "already here\n");
    assert!(s.old.exists());
}

#[test]
fn files_that_are_not_sessions_are_never_picked() {
    let w = World::new();
    let _s = populate(&w);
    let dir = session_dir(&w, &w.proj());
    let junk = dir.join("notes.jsonl");
    std::fs::write(&junk, "not json\n").unwrap();
    crate::common::sessions::set_mtime(&junk, "2020-01-01T00:00:00.000Z");
    let zero = dir.join("zero.jsonl");
    std::fs::write(&zero, "").unwrap();
    let (lines, _) = summary(&gc(
        &w,
        &["--older-than", "1d", "--empty", "--include-parents"],
    ));
    assert!(lines.is_empty(), "{lines:?}");
    gc(&w, &["--older-than", "1d", "--include-parents", "--delete"]);
    assert!(junk.exists() && zero.exists());
}

#[test]
fn usage_errors() {
    let w = World::new();
    populate(&w);
    for args in [
        &["session", "gc"][..],
        &["session", "gc", "--dry-run"],
        &["session", "gc", "--empty", "--delete", "--archive", "x"],
        &["session", "gc", "--older-than", "soon"],
        &["session", "gc", "--larger-than", "big"],
        &["session", "gc", "--empty", "--all", "--cwd", "."],
    ] {
        let o = w.pi().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty());
    }
    assert!(!w.agent().join("archive").exists());
}

#[test]
fn human_view() {
    let w = World::new();
    let s = populate(&w);
    let _lock = Appender::open(&s.other, None).unwrap();
    let shown = w.snaps(&[
        &[
            "session",
            "gc",
            "--all",
            "--older-than",
            "1d",
            "--dry-run",
            "--format",
            "human",
        ],
        &["session", "gc", "--empty", "--delete", "--format", "human"],
    ]);
    // Sizes below 1 KB depend on the length of the temporary paths in the headers.
    let shown = regex::Regex::new(r"\b\d+ B\b")
        .unwrap()
        .replace_all(&shown, "[N] B");
    insta::assert_snapshot!(shown, @"
    $ pi session gc --all --older-than 1d --dry-run --format human
    status: 0
    ----- stdout -----
    archive     [N] B  2025-11-15  [AGENT]/sessions/--[ROOT]-other--/2025-11-15T08-00-00-000Z_0193a000-0000-7000-8000-000000000005.jsonl
             older than 1d
    keep         2 KB      3d ago  [AGENT]/sessions/--[ROOT]-other--/2025-12-29T08-00-00-000Z_0193a000-0000-7000-8000-000000000004.jsonl
             locked (in use)
    keep         3 KB      1d ago  [SESSIONS]/2025-12-30T10-00-00-000Z_0193a000-0000-7000-8000-000000000001.jsonl
             parent of kept session [SESSIONS]/2026-01-01T12-00-00-000Z_0193a000-0000-7000-8000-000000000002.jsonl
    would archive 1 session ([N] B) to [AGENT]/archive; kept 2 sessions (dry run: nothing changed)
    ----- stderr -----

    $ pi session gc --empty --delete --format human
    status: 0
    ----- stdout -----
    delete      [N] B     14h ago  [SESSIONS]/2026-01-01T13-00-00-000Z_0193a000-0000-7000-8000-000000000003.jsonl
             empty
    deleted 1 session ([N] B)
    ----- stderr -----
    ");
}

#[test]
fn a_failed_move_keeps_the_session_and_exits_1() {
    let w = World::new();
    let s = populate(&w);
    // the archive "directory" is a file: nothing can be moved into it
    let blocked = w.write("attic", "a file\n");
    let o = w
        .pi()
        .args(["session", "gc", "--empty", "--archive"])
        .arg(&blocked)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let recs = jsonl(&String::from_utf8(o.stdout).unwrap());
    assert_eq!(recs[0]["action"], "keep");
    assert!(
        recs[0]["reason"].as_str().unwrap().starts_with("failed: "),
        "{recs:?}"
    );
    assert_eq!(recs[1]["sessions"], 0);
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("pi: error: 1 session could not be archived"),
        "{err}"
    );
    assert!(s.empty.exists());
}

/// `--empty` answers from the session summaries `pi session list` leaves (the count it
/// shows), and a summary that an append made stale is extended before it is believed.
#[test]
fn empty_uses_the_listing_summaries_and_never_a_stale_one() {
    let w = World::new();
    let s = populate(&w);
    let listed = jsonl(&w.ok(&["session", "list", "--all", "--json"]));
    let empty_row = listed
        .iter()
        .find(|r| r["path"].as_str() == s.empty.to_str())
        .unwrap();
    assert_eq!(empty_row["messageCount"], 0);
    let log = w
        .agent()
        .join("cache")
        .join("session-summaries")
        .join("records.jsonl");
    assert!(std::fs::read_to_string(log).unwrap().lines().count() >= 5);
    let (lines, _) = summary(&gc(&w, &["--empty", "--all", "--dry-run"]));
    assert_eq!(lines, [format!("archive {} empty", name(&s.empty))]);

    // A message appended after the listing: the record is stale, the session not empty.
    let mut text = std::fs::read_to_string(&s.empty).unwrap();
    text += &serde_json::json!({"type":"message","id":"late0001","parentId":null,
        "timestamp":"2026-01-01T13:30:00.000Z",
        "message":{"role":"user","content":"now it has one","timestamp":1}})
    .to_string();
    text.push('\n');
    std::fs::write(&s.empty, text).unwrap();
    let (lines, total) = summary(&gc(&w, &["--empty", "--all", "--dry-run"]));
    assert!(lines.is_empty(), "{lines:?}");
    assert_eq!(total["sessions"], 0);
}

/// A real run removes the cache records of the sessions that are gone, and only those: the
/// usage facts' and session indexes' files and the summaries' lines in their log (and the
/// summary files of the layout before the log).
#[test]
fn a_real_run_drops_the_cache_records_of_removed_sessions() {
    use std::os::unix::fs::MetadataExt;
    let w = World::new();
    let s = populate(&w);
    w.ok(&["session", "list", "--all", "--json"]);
    w.ok(&["usage", "--all", "--json"]);
    let summaries = w.agent().join("cache").join("session-summaries");
    let old_layout = summaries.join("801-4242.json");
    std::fs::write(&old_layout, "{}").unwrap();
    let facts = |w: &World| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(w.agent().join("cache").join("usage-facts"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    // The files the summaries' log has records of, by device and inode.
    let summarized = || -> Vec<(u64, u64)> {
        let log = std::fs::read_to_string(summaries.join("records.jsonl")).unwrap();
        let mut keys: Vec<(u64, u64)> = jsonl(&log)
            .iter()
            .map(|r| {
                let st = &r["stamp"];
                (st["dev"].as_u64().unwrap(), st["ino"].as_u64().unwrap())
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys
    };
    let (facts_before, summarized_before) = (facts(&w), summarized());
    let m = std::fs::metadata(&s.empty).unwrap();
    let gone = format!("{:x}-{:x}.", m.dev(), m.ino());
    assert_eq!(
        facts_before.iter().filter(|n| n.starts_with(&gone)).count(),
        1
    );
    assert!(summarized_before.contains(&(m.dev(), m.ino())));
    // Session indexes (kept for large files): one of the session that goes, one of a
    // session that stays.
    let index = w.agent().join("cache").join("session-index");
    std::fs::create_dir_all(&index).unwrap();
    let kept = summarized_before
        .iter()
        .find(|&&k| k != (m.dev(), m.ino()))
        .unwrap();
    let (gone_index, kept_index) = (
        index.join(format!("{gone}idx")),
        index.join(format!("{:x}-{:x}.idx", kept.0, kept.1)),
    );
    std::fs::write(&gone_index, "x").unwrap();
    std::fs::write(&kept_index, "x").unwrap();
    // A dry run removes nothing.
    gc(&w, &["--empty", "--all", "--delete", "--dry-run"]);
    assert_eq!(
        (facts(&w), summarized()),
        (facts_before.clone(), summarized_before.clone())
    );
    assert!(old_layout.exists());
    assert!(gone_index.exists());
    gc(&w, &["--empty", "--all", "--delete"]);
    assert!(!s.empty.exists());
    assert!(!gone_index.exists());
    assert!(kept_index.exists());
    let expected: Vec<String> = facts_before
        .iter()
        .filter(|n| !n.starts_with(&gone))
        .cloned()
        .collect();
    assert_eq!(facts(&w), expected);
    assert!(expected.len() >= 4, "{expected:?}");
    let expected: Vec<(u64, u64)> = summarized_before
        .iter()
        .filter(|&&k| k != (m.dev(), m.ino()))
        .copied()
        .collect();
    assert_eq!(summarized(), expected);
    assert!(expected.len() >= 4, "{expected:?}");
    assert!(!old_layout.exists());
}
