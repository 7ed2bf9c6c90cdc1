//! Naming a session: short ids that tell sessions apart (and resolve), `-s/--session` on
//! every command that takes a session next to the old positional forms, and `-` for a
//! session read from stdin by the commands that only read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

fn header_id(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    jsonl(text.lines().next().unwrap())[0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn status(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

// ---------------------------------------------------------------------------------------
// Short ids

#[test]
fn list_shows_short_ids_that_tell_300_scripted_sessions_apart() {
    let w = World::new();
    // A script making sessions: same clock, so every v7 id starts with the same time.
    let paths: Vec<PathBuf> = (0..300).map(|_| w.new_session()).collect();
    let recs = jsonl(&w.ok(&["session", "list", "--json"]));
    assert_eq!(recs.len(), 300);
    let ids: Vec<&str> = recs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let shorts: Vec<&str> = recs
        .iter()
        .map(|r| r["shortId"].as_str().unwrap())
        .collect();
    // All of them share the first 8 characters: the old ID column named no session.
    assert!(ids.iter().all(|id| id[..8] == ids[0][..8]));
    let o = w
        .pi()
        .args(["session", "log", &ids[0][..8]])
        .output()
        .unwrap();
    assert_eq!(status(&o), 2);
    assert!(stderr(&o).contains("is ambiguous"), "{}", stderr(&o));
    // Each short id is the end of its own id's random tail, which no other id ends with or
    // begins with, and one digit less would not be.
    for (id, short) in ids.iter().zip(&shorts) {
        assert!(
            (8..=12).contains(&short.len()) && id.ends_with(short),
            "{short} of {id}"
        );
        let owners = ids
            .iter()
            .filter(|i| i.ends_with(short) || i.replace('-', "").starts_with(short))
            .count();
        assert_eq!(owners, 1, "{short} names {owners} sessions");
        let shorter = &short[1..];
        if shorter.len() >= 8 {
            let owners = ids
                .iter()
                .filter(|i| i.ends_with(shorter) || i.replace('-', "").starts_with(shorter))
                .count();
            assert!(owners > 1, "{short} could be {shorter}");
        }
    }
    // The human view shows the same ids, in a column as wide as the longest.
    let human = w.ok(&["session", "list", "--format", "human"]);
    let column: Vec<&str> = human
        .lines()
        .skip(1)
        // After the current session's mark (`*`) or its blank.
        .map(|l| l[2..].split_whitespace().nth(5).unwrap())
        .collect();
    assert_eq!(column, shorts);
    let widest = shorts.iter().map(|s| s.len()).max().unwrap();
    let head = human.lines().next().unwrap();
    assert_eq!(
        head.find("NAME").unwrap() - head.find("ID").unwrap(),
        widest + 2
    );
    // Every short id resolves to its session: as SESSION, with -s and with --session.
    for (k, (short, rec)) in shorts.iter().zip(&recs).enumerate() {
        let arg: Vec<&str> = match k % 3 {
            0 => vec![short],
            1 => vec!["-s", short],
            _ => vec!["--session", short],
        };
        let o = w
            .pi()
            .args(["session", "check", "--json"])
            .args(&arg)
            .output()
            .unwrap();
        assert_eq!(status(&o), 0, "{arg:?}: {}", stderr(&o));
        // The path in a migrate record says which file was resolved.
        if k % 30 == 0 {
            let o = jsonl(&w.ok(&[&["session", "migrate"][..], &arg].concat()));
            assert_eq!(o[0]["path"], rec["path"], "{arg:?}");
        }
    }
    // A long prefix resolves too, with its dashes or without.
    let target = &paths[7];
    let id = header_id(target);
    let out = w.ok(&["session", "migrate", &id[..20]]);
    assert_eq!(jsonl(&out)[0]["path"], target.to_str().unwrap());
    let out = w.ok(&["session", "migrate", &id.replace('-', "")[..24]]);
    assert_eq!(jsonl(&out)[0]["path"], target.to_str().unwrap());
}

/// Issue 33: a short id once printed keeps naming its session however many sessions are made
/// after it, also sessions made in the same millisecond (here at the fixed clock of the tests)
/// and every short id a usage table shows tells its session from the others.
#[test]
fn short_ids_printed_once_keep_naming_their_sessions_as_more_are_made() {
    let w = World::new();
    let first: Vec<PathBuf> = (0..100).map(|_| w.new_session()).collect();
    for (i, p) in first.iter().enumerate() {
        // Usage figures of its own, so that no call counts as a copy of another.
        let mut reply: Value = serde_json::from_str(&assistant("a")).unwrap();
        reply["usage"]["input"] = (i + 1).into();
        w.ok_in(
            &["session", "append", p.to_str().unwrap()],
            &format!("{}\n{reply}\n", user("q")),
        );
    }
    let printed: Vec<(String, Value)> = jsonl(&w.ok(&["session", "list"]))
        .into_iter()
        .map(|r| (r["shortId"].as_str().unwrap().to_owned(), r["path"].clone()))
        .collect();
    assert_eq!(printed.len(), 100);
    // The usage table names each session by its short id: 100 different labels.
    let table = w.ok(&["usage", "session", "--format", "human"]);
    let labels: std::collections::BTreeSet<&str> = table
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|s| printed.iter().any(|(short, _)| short == s))
        .collect();
    assert_eq!(labels.len(), 100, "{table}");
    // 200 more sessions at the same time, and 20 on the real clock.
    for _ in 0..200 {
        w.new_session();
    }
    w.real_clock("sessions made later, on the real clock");
    for _ in 0..20 {
        w.new_session();
    }
    let now = jsonl(&w.ok(&["session", "list"]));
    assert_eq!(now.len(), 320);
    for (short, path) in &printed {
        let got = jsonl(&w.ok(&["session", "migrate", "-s", short]));
        assert_eq!(&got[0]["path"], path, "{short}");
        // And the listing still shows the same short id for it.
        let listed = now.iter().find(|r| r["path"] == *path).unwrap();
        assert_eq!(listed["shortId"], short.as_str());
    }
}

#[test]
fn short_ids_are_unique_among_the_sessions_of_every_directory() {
    let w = World::new();
    let here = w.new_session();
    let id = header_id(&here);
    // A session of another directory whose id differs from this one's only at the start:
    // the same random tail.
    let mut twin = id.clone();
    let first = twin.remove(0);
    twin.insert(0, if first == '0' { '1' } else { '0' });
    std::fs::create_dir_all(w.path("elsewhere")).unwrap();
    w.ok(&[
        "session",
        "new",
        "--cwd",
        w.path("elsewhere").to_str().unwrap(),
        "--id",
        &twin,
    ]);
    // Listing only this directory still tells it from the other one.
    let recs = jsonl(&w.ok(&["session", "list"]));
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["shortId"], id.as_str());
    let all = jsonl(&w.ok(&["session", "list", "--all"]));
    let shorts: Vec<&str> = all.iter().map(|r| r["shortId"].as_str().unwrap()).collect();
    assert!(shorts.contains(&id.as_str()) && shorts.contains(&twin.as_str()));
    // With a single session, the last eight digits are enough.
    let w2 = World::new();
    let p = w2.new_session();
    let recs = jsonl(&w2.ok(&["session", "list"]));
    assert_eq!(recs[0]["shortId"], &header_id(&p)[28..]);
}

// ---------------------------------------------------------------------------------------
// -s/--session

/// Two sessions, `a` (older, with two messages) and `b` (the most recent of the
/// directory, with one message), and the entry ids of `a`.
struct Two {
    a: PathBuf,
    b: PathBuf,
    a_entries: Vec<String>,
}

fn two(w: &World) -> Two {
    let a = w.new_session();
    w.ok_in(
        &["session", "append", a.to_str().unwrap()],
        &format!("{}\n{}\n", user("first in a"), assistant("answer in a")),
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    let b = w.new_session();
    w.ok_in(
        &["session", "append", b.to_str().unwrap()],
        &format!("{}\n", user("first in b")),
    );
    // b is the most recently modified.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .append(true)
        .open(&b)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let a_entries = w
        .ok(&[
            "session",
            "log",
            a.to_str().unwrap(),
            "--filter",
            ".id",
            "-r",
        ])
        .lines()
        .map(str::to_owned)
        .collect();
    Two { a, b, a_entries }
}

fn last_line(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

fn line_count(p: &Path) -> usize {
    std::fs::read_to_string(p).unwrap().lines().count()
}

#[test]
fn every_command_takes_the_session_as_an_option() {
    let w = World::new();
    let t = two(&w);
    let a = t.a.to_str().unwrap();
    let a_short = jsonl(&w.ok(&["session", "list"]))
        .into_iter()
        .find(|r| r["path"] == a)
        .unwrap()["shortId"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = t.a_entries[0].as_str();
    let b_lines = line_count(&t.b);

    // Readers: the same output as with SESSION, and not the most recent session's.
    for cmd in [
        &["session", "log"][..],
        &["session", "tree", "--json"],
        &["session", "check", "--json"],
        &["context", "build"],
        &["context", "stats", "--json", "--context-window", "100000"],
        &["session", "show", "--no-pager"],
        &["session", "export", "--format", "md"],
    ] {
        let positional = w.ok(&[cmd, &[a]].concat());
        let option = w.ok(&[cmd, &["-s", &a_short]].concat());
        let long = w.ok(&[cmd, &["--session", a]].concat());
        let default = w.ok(cmd);
        assert_eq!(option, positional, "{cmd:?}");
        assert_eq!(long, positional, "{cmd:?}");
        if cmd[1] != "check" {
            assert_ne!(default, positional, "{cmd:?}");
        }
    }
    // The option can come first, before the command's other arguments.
    let o = w.ok(&[
        "session", "log", "-s", a, "-n", "1", "--filter", ".id", "-r",
    ]);
    assert_eq!(o.trim(), t.a_entries[1]);

    // Writers write to the session named by -s.
    w.ok_in(
        &["session", "append", "-s", a],
        &format!("{}\n", user("via -s")),
    );
    assert_eq!(last_line(&t.a)["message"]["content"], "via -s");
    let out = jsonl(&w.ok(&["session", "branch", first, "-s", a]));
    assert_eq!(out[0]["parentId"], first);
    assert_eq!(last_line(&t.a)["parentId"], first);
    let out = jsonl(&w.ok(&["session", "branch", "-s", a, first, "--summary", "s"]));
    assert_eq!(out[0]["type"], "branch_summary");
    w.ok(&["session", "label", "-s", a, first, "checkpoint"]);
    assert_eq!(last_line(&t.a)["label"], "checkpoint");
    w.ok(&["session", "label", first, "--clear", "--session", a]);
    assert_eq!(last_line(&t.a)["type"], "label");
    assert!(last_line(&t.a).get("label").is_none());
    w.ok(&["session", "name", "Named with -s", "-s", a]);
    assert_eq!(last_line(&t.a)["name"], "Named with -s");
    let fork = w.ok(&["session", "fork", "-s", a, first]);
    let fork = PathBuf::from(fork.trim());
    assert_eq!(line_count(&fork), 2, "the header and the first entry");
    assert_eq!(
        jsonl(&std::fs::read_to_string(&fork).unwrap())[0]["parentSession"],
        a
    );
    let o = jsonl(&w.ok(&["session", "migrate", "-s", a]));
    assert_eq!(o[0]["migrated"], false);
    // A turn or two more, so that compaction has an earlier part to summarize.
    w.ok_in(
        &["session", "append", "-s", a],
        &format!(
            "{}\n{}\n{}\n{}\n",
            user("second in a"),
            assistant("second answer"),
            user("third in a"),
            assistant("third answer")
        ),
    );
    let summary = w.write("summary.md", "What happened.\n");
    let o = jsonl(&w.ok(&[
        "compact",
        "-s",
        a,
        "--summary-file",
        summary.to_str().unwrap(),
        "--keep-recent-tokens",
        "1",
    ]));
    assert_eq!(o[0]["type"], "compaction", "{o:?}");
    assert_eq!(last_line(&t.a)["type"], "compaction");
    // The most recent session was left alone throughout.
    assert_eq!(line_count(&t.b), b_lines);
}

#[test]
fn without_a_session_every_command_takes_the_most_recent_one() {
    let w = World::new();
    let t = two(&w);
    let b = t.b.to_str().unwrap();
    let a_lines = line_count(&t.a);
    let b_first = w.ok(&["session", "log", "--filter", ".id", "-r"]);
    let b_first = b_first.trim();
    // The commands that used to require SESSION.
    w.ok(&["session", "branch", b_first]);
    assert_eq!(last_line(&t.b)["parentId"], b_first);
    w.ok(&["session", "label", b_first, "first"]);
    assert_eq!(last_line(&t.b)["label"], "first");
    w.ok(&["session", "label", b_first, "--clear"]);
    assert!(last_line(&t.b).get("label").is_none());
    w.ok(&["session", "name", "The most recent"]);
    assert_eq!(last_line(&t.b)["name"], "The most recent");
    let fork = PathBuf::from(w.ok(&["session", "fork"]).trim());
    assert_eq!(
        jsonl(&std::fs::read_to_string(&fork).unwrap())[0]["parentSession"],
        b
    );
    // The fork is now the most recent session; name b's entry with --leaf.
    std::fs::File::options()
        .append(true)
        .open(&t.b)
        .unwrap()
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
    let fork = PathBuf::from(w.ok(&["session", "fork", "--leaf", b_first]).trim());
    assert_eq!(line_count(&fork), 2);
    assert_eq!(
        jsonl(&std::fs::read_to_string(&fork).unwrap())[0]["parentSession"],
        b
    );
    let o = jsonl(&w.ok(&["session", "migrate"]));
    assert_eq!(o[0]["path"], b);
    assert_eq!(line_count(&t.a), a_lines);
}

#[test]
fn the_positional_forms_keep_working() {
    let w = World::new();
    let t = two(&w);
    let a = t.a.to_str().unwrap();
    let first = t.a_entries[0].as_str();
    w.ok(&["session", "branch", a, first]);
    assert_eq!(last_line(&t.a)["parentId"], first);
    w.ok(&["session", "label", a, first, "old form"]);
    assert_eq!(last_line(&t.a)["label"], "old form");
    w.ok(&["session", "label", a, first, ""]);
    assert!(last_line(&t.a).get("label").is_none());
    w.ok(&["session", "label", a, first, "again"]);
    w.ok(&["session", "label", a, first, "--clear"]);
    assert!(last_line(&t.a).get("label").is_none());
    w.ok(&["session", "name", a, "old name"]);
    assert_eq!(last_line(&t.a)["name"], "old name");
    // fork with one value: the session, copied to its leaf.
    let fork = PathBuf::from(w.ok(&["session", "fork", a]).trim());
    assert_eq!(
        jsonl(&std::fs::read_to_string(&fork).unwrap())[0]["parentSession"],
        a
    );
    let fork = PathBuf::from(w.ok(&["session", "fork", a, first]).trim());
    assert_eq!(line_count(&fork), 2);
}

#[test]
fn a_session_named_twice_or_arguments_missing_are_usage_errors() {
    let w = World::new();
    let t = two(&w);
    let a = t.a.to_str().unwrap();
    let b = t.b.to_str().unwrap();
    let first = t.a_entries[0].as_str();
    let before = (std::fs::read(&t.a).unwrap(), std::fs::read(&t.b).unwrap());
    let runs: &[&[&str]] = &[
        &["session", "log", a, "-s", b],
        &["session", "branch", a, first, "-s", b],
        &["session", "label", "-s", a, first, "x", "y"],
        &["session", "label", "-s", a, first],
        &["session", "label", first],
        &["session", "label", "-s", a, first, "x", "--clear"],
        &["session", "name", a, "n", "-s", b],
        &["session", "fork", a, first, "-s", b],
        &["session", "fork", a, first, "--leaf", first],
        &["compact", a, "--all"],
        &["compact", "-s", a, "--all"],
    ];
    let shown = w
        .snaps(runs)
        .replace(&w.redact(a), "[A]")
        .replace(&w.redact(b), "[B]")
        .replace(first, "[FIRST]");
    insta::assert_snapshot!(shown, @"
    $ pi session log [A] -s [B]
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the session is given twice: as SESSION and with --session

    $ pi session branch [A] [FIRST] -s [B]
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the session is given twice: as SESSION and with --session

    $ pi session label -s [A] [FIRST] x y
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the session is given twice: as SESSION and with --session

    $ pi session label -s [A] [FIRST]
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the label is missing (--clear removes a label)

    $ pi session label [FIRST]
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the label is missing (--clear removes a label)

    $ pi session label -s [A] [FIRST] x --clear
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: give a label or --clear, not both

    $ pi session name [A] n -s [B]
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the session is given twice: as SESSION and with --session

    $ pi session fork [A] [FIRST] -s [B]
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the session is given twice: as SESSION and with --session

    $ pi session fork [A] [FIRST] --leaf [FIRST]
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the entry is given twice: as ENTRY and with --leaf

    $ pi compact [A] --all
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the argument '[SESSION]' cannot be used with '--all'
      usage: pi compact <SESSION>
      hint: for more information, try '--help'

    $ pi compact -s [A] --all
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the argument '--session <SESSION>' cannot be used with '--all'
      usage: pi compact --session <SESSION> [SESSION]
      hint: for more information, try '--help'
    ");
    assert_eq!(
        (std::fs::read(&t.a).unwrap(), std::fs::read(&t.b).unwrap()),
        before,
        "nothing was written"
    );
}

#[test]
fn run_continues_the_session_given_with_the_option() {
    use crate::common::model_server::{ModelServer, Reply};
    let server = ModelServer::start();
    let w = crate::run_support::world(&server);
    let s = w.new_session();
    w.new_session();
    server.push(Reply::openai_text(&["Continued."]));
    let o = crate::run_support::run(&w, &["-s", &header_id(&s)[..16], "-p", "Go on"]);
    crate::run_support::status(&o, 0);
    let m = crate::run_support::messages(&s);
    assert_eq!(crate::run_support::roles(&m), ["user", "assistant"]);
    let o = crate::run_support::run(&w, &[s.to_str().unwrap(), "-s", "x", "-p", "Go on"]);
    crate::run_support::status(&o, 2);
    assert!(crate::run_support::err(&o).contains("given twice"));
}

// ---------------------------------------------------------------------------------------
// `-`: stdin

/// A session with a branch, a label and a name, to read back from stdin.
fn rich(w: &World) -> PathBuf {
    let s = w.new_session();
    let p = s.to_str().unwrap();
    w.ok_in(
        &["session", "append", p],
        &format!(
            "{}\n{}\n{}\n",
            user("Cache parsed sessions?"),
            assistant("Yes."),
            user("Invalidation?")
        ),
    );
    let ids: Vec<String> = w
        .ok(&["session", "log", p, "--filter", ".id", "-r"])
        .lines()
        .map(str::to_owned)
        .collect();
    w.ok(&["session", "branch", p, &ids[1], "--summary", "Dead end."]);
    w.ok(&["session", "label", p, &ids[0], "start"]);
    w.ok(&["session", "name", p, "Rich"]);
    s
}

/// Runs `pi ARGS` with `input` on stdin.
fn piped(w: &World, args: &[&str], input: &[u8]) -> Output {
    w.pi()
        .env("COLUMNS", COLUMNS)
        .args(args)
        .write_stdin(input.to_vec())
        .output()
        .unwrap()
}

/// Every file under `dir` with its contents.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn dash_reads_the_session_from_stdin_for_every_reading_command() {
    let w = World::new();
    let s = rich(&w);
    let p = s.to_str().unwrap();
    let bytes = std::fs::read(&s).unwrap();
    let tmp = w.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let before = contents(&w.agent());
    for cmd in [
        &["session", "log"][..],
        &["session", "log", "--all", "--filter", ".type", "-r"],
        &["session", "tree", "--json"],
        &["session", "tree", "--format", "human"],
        &["context", "build"],
        &[
            "context",
            "build",
            "--format",
            "openai",
            "--model",
            "openai/gpt-4o",
        ],
        &["context", "stats", "--json", "--context-window", "100000"],
        &["session", "show", "--no-pager"],
        &["session", "show", "--format", "md", "--thinking"],
        &["session", "export"],
        &["session", "export", "--format", "md", "--all"],
        &["session", "export", "--format", "jsonl", "--redact"],
    ] {
        let from_file = w.ok(&[cmd, &[p]].concat());
        let o = w
            .pi()
            .env("COLUMNS", COLUMNS)
            .env("TMPDIR", &tmp)
            .args(cmd)
            .arg("-")
            .write_stdin(bytes.clone())
            .output()
            .unwrap();
        assert_eq!(status(&o), 0, "{cmd:?}: {}", stderr(&o));
        assert_eq!(String::from_utf8(o.stdout).unwrap(), from_file, "{cmd:?}");
        // `-s -` is the same.
        let o = piped(&w, &[cmd, &["-s", "-"]].concat(), &bytes);
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            from_file,
            "{cmd:?} -s -"
        );
    }
    // check names it (stdin).
    let o = piped(&w, &["session", "check", "--format", "human", "-"], &bytes);
    insta::assert_snapshot!(w.shown(&o), @"
    status: 0
    ----- stdout -----
    (stdin): ok (6 entries)
    ----- stderr -----
    ");
    // Nothing was written: no recovery, no id cache, no copy left behind.
    assert_eq!(contents(&w.agent()), before);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

#[test]
fn dash_reads_compressed_sessions_through_a_pipe() {
    let w = World::new();
    let s = rich(&w);
    let gz = w.path("archive/s.jsonl.gz");
    std::fs::create_dir_all(gz.parent().unwrap()).unwrap();
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    enc.write_all(&std::fs::read(&s).unwrap()).unwrap();
    enc.finish().unwrap();
    let sh = |line: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(w.proj())
            .env_clear()
            .envs(w.envs())
            .env("COLUMNS", COLUMNS)
            .output()
            .unwrap()
    };
    let pi = bin();
    let pi = pi.to_str().unwrap();
    let gz = gz.to_str().unwrap();
    let o = sh(&format!(
        "gzip -dc '{gz}' | '{pi}' session tree --format human -"
    ));
    insta::assert_snapshot!(w.shown(&o), @"
    status: 0
    ----- stdout -----
    • bfc84610 [start] user: Cache parsed sessions?
    • 987bbcbf assistant: Yes.
      └─ c3f2827a user: Invalidation?
    • e8ea9e94 [branch summary]: Dead end.
    • a2df7737 [label: start]
    • a842e5e2 [title: Rich]  ← leaf
    ----- stderr -----
    ");
    let o = sh(&format!("gzip -dc '{gz}' | '{pi}' context build -"));
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        w.ok(&["context", "build", s.to_str().unwrap()])
    );
    let o = sh(&format!("gzip -dc '{gz}' | '{pi}' session check --json -"));
    assert_eq!((status(&o), o.stdout.len()), (0, 0), "{}", stderr(&o));
}

#[test]
fn stdin_sessions_are_reported_as_stdin() {
    let w = World::new();
    let s = rich(&w);
    let mut bytes = std::fs::read(&s).unwrap();
    // A line that is not JSON, and a torn last line.
    let at = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    bytes.splice(at..at, b"not json\n".iter().copied());
    bytes.extend_from_slice(b"{\"type\":\"message\",\"id\":\"torn");
    let o = piped(
        &w,
        &["session", "log", "--filter", ".type", "-r", "-"],
        &bytes,
    );
    insta::assert_snapshot!(w.shown(&o), @r#"
    status: 0
    ----- stdout -----
    message
    message
    branch_summary
    label
    session_info
    ----- stderr -----
    pi: warning: (stdin):2: skipped: not valid JSON: expected 'null' at column 1
    pi: warning: (stdin):9: skipped: the last line is incomplete (an interrupted write?): expected '"' to close the string at column 29
    "#);
    let o = piped(&w, &["session", "check", "--format", "human", "-"], &bytes);
    insta::assert_snapshot!(w.shown(&o), @r#"
    status: 1
    ----- stdout -----
    (stdin):2:1: error[invalid-json]: not valid JSON: expected 'null' at column 1
    (stdin):9:29: error[torn-line]: the last line is incomplete (an interrupted write?): expected '"' to close the string at column 29
    (stdin): 2 errors, 0 warnings (6 entries)
    ----- stderr -----
    "#);
    let o = piped(&w, &["session", "tree", "-"], b"");
    insta::assert_snapshot!(w.shown(&o), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: (stdin) is not a session file: the file is empty
    ");
    let o = piped(&w, &["context", "build", "-"], b"{\"type\":\"message\"}\n");
    insta::assert_snapshot!(w.shown(&o), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: (stdin) is not a session file: the first entry (line 1) comes before any session header line
    ");
}

#[test]
fn a_version_1_session_from_stdin_is_read_as_version_3() {
    let w = World::new();
    let f = fixture("before-compaction.jsonl");
    let bytes = std::fs::read(&f).unwrap();
    for cmd in [&["session", "log"][..], &["context", "build"]] {
        let o = piped(&w, &[cmd, &["-"]].concat(), &bytes);
        assert_eq!(status(&o), 0, "{cmd:?}: {}", stderr(&o));
        let from_file = w.ok(&[cmd, &[f.to_str().unwrap()]].concat());
        assert_eq!(String::from_utf8(o.stdout).unwrap(), from_file, "{cmd:?}");
    }
    assert_eq!(std::fs::read(&f).unwrap(), bytes);
    // stdin holds one of the two.
    let o = piped(
        &w,
        &[
            "context",
            "build",
            "-",
            "--with-settings",
            "--system-prompt-file",
            "-",
        ],
        &bytes,
    );
    assert_eq!(status(&o), 2);
    assert!(stderr(&o).contains("`-` twice"), "{}", stderr(&o));
}

#[test]
fn commands_that_write_refuse_stdin() {
    let w = World::new();
    let s = rich(&w);
    let bytes = std::fs::read(&s).unwrap();
    let runs: &[&[&str]] = &[
        &["session", "append", "-"],
        &["session", "branch", "-", "root"],
        &["session", "label", "-s", "-", "abc", "x"],
        &["session", "name", "-", "x"],
        &["session", "fork", "-"],
        &["session", "migrate", "-"],
        &["compact", "-", "--dry-run"],
        &["run", "-s", "-", "-p", "hi"],
    ];
    let mut shown = String::new();
    for args in runs {
        let o = piped(&w, args, &bytes);
        assert_eq!(status(&o), 2, "{args:?}");
        shown.push_str(&format!("$ pi {}\n{}", args.join(" "), stderr(&o)));
    }
    insta::assert_snapshot!(shown, @"
    $ pi session append -
    pi: error: a session from stdin ('-') can only be read: this command needs a session file
      hint: save the session to a file and name that file
    $ pi session branch - root
    pi: error: a session from stdin ('-') can only be read: this command needs a session file
      hint: save the session to a file and name that file
    $ pi session label -s - abc x
    pi: error: a session from stdin ('-') can only be read: this command needs a session file
      hint: save the session to a file and name that file
    $ pi session name - x
    pi: error: a session from stdin ('-') can only be read: this command needs a session file
      hint: save the session to a file and name that file
    $ pi session fork -
    pi: error: a session from stdin ('-') can only be read: this command needs a session file
      hint: save the session to a file and name that file
    $ pi session migrate -
    pi: error: a session from stdin ('-') can only be read: this command needs a session file
      hint: save the session to a file and name that file
    $ pi compact - --dry-run
    pi: error: a session from stdin ('-') can only be read: this command needs a session file
      hint: save the session to a file and name that file
    $ pi run -s - -p hi
    pi: error: a session from stdin ('-') can only be read: this command needs a session file
      hint: save the session to a file and name that file
    ");
    assert_eq!(std::fs::read(&s).unwrap(), bytes);
}

#[test]
fn an_ambiguous_prefix_lists_its_candidates() {
    let w = World::new();
    let ids: Vec<String> = (1..=12)
        .map(|n| format!("0199aaaa-{:04x}-7{:03x}-8000-{n:012}", n / 4, n * 0x111))
        .collect();
    for id in &ids {
        w.ok(&["session", "new", "--id", id]);
    }
    let o = w
        .pi()
        .args(["session", "log", "0199aaaa-0000"])
        .output()
        .unwrap();
    insta::assert_snapshot!(w.shown(&o), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: session id prefix '0199aaaa-0000' is ambiguous: it matches 3 sessions
        00000001  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0000-7111-8000-000000000001.jsonl
        00000002  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0000-7222-8000-000000000002.jsonl
        00000003  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0000-7333-8000-000000000003.jsonl
      hint: give more characters of the id, or one of the short ids above or of `pi session list`
    ");
    let o = w
        .pi()
        .args(["session", "tree", "-s", "0199aaaa"])
        .output()
        .unwrap();
    insta::assert_snapshot!(w.shown(&o), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: session id prefix '0199aaaa' is ambiguous: it matches 12 sessions
        00000001  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0000-7111-8000-000000000001.jsonl
        00000002  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0000-7222-8000-000000000002.jsonl
        00000003  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0000-7333-8000-000000000003.jsonl
        00000004  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0001-7444-8000-000000000004.jsonl
        00000005  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0001-7555-8000-000000000005.jsonl
        00000006  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0001-7666-8000-000000000006.jsonl
        00000007  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0001-7777-8000-000000000007.jsonl
        00000008  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0002-7888-8000-000000000008.jsonl
        00000009  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0002-7999-8000-000000000009.jsonl
        00000010  [SESSIONS]/2026-01-02T03-04-05-678Z_0199aaaa-0002-7aaa-8000-000000000010.jsonl
        … and 2 more
      hint: give more characters of the id, or one of the short ids above or of `pi session list`
    ");
    // Each candidate listed resolves to its session.
    let shown = stderr(&o);
    for line in shown.lines().skip(1).take(10) {
        let short = line.split_whitespace().next().unwrap();
        let path = line.split_whitespace().nth(1).unwrap();
        let got = jsonl(&w.ok(&["session", "migrate", short]));
        assert_eq!(got[0]["path"], path, "{short}");
    }
    // The short ids of the listing resolve too.
    for r in jsonl(&w.ok(&["session", "list"])) {
        let short = r["shortId"].as_str().unwrap();
        let got = jsonl(&w.ok(&["session", "migrate", "-s", short]));
        assert_eq!(got[0]["path"], r["path"], "{short}");
    }
}
