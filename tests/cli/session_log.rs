//! `pi session log`

use std::io::Read;
use std::process::Stdio;

use crate::common::*;

/// A session with a branch: u1 a1 u2 a2, then back to a1: u3 a3 (the leaf).
fn branched(w: &World) -> (String, Vec<String>) {
    let s = w.new_session();
    let s = s.to_str().unwrap().to_owned();
    let first = jsonl(&w.ok_in(
        &["session", "append", &s],
        &[user("u1"), assistant("a1"), user("u2"), assistant("a2")].join("\n"),
    ));
    let mut ids: Vec<String> = first
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    let second = jsonl(&w.ok_in(
        &["session", "append", &s, "--parent", &ids[1]],
        &[user("u3"), assistant("a3")].join("\n"),
    ));
    ids.extend(second.iter().map(|r| r["id"].as_str().unwrap().to_owned()));
    (s, ids)
}

fn sel(id: &[String], k: &[usize]) -> Vec<String> {
    k.iter().map(|&i| id[i].clone()).collect()
}

fn ids(out: &str) -> Vec<String> {
    jsonl(out)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn log_prints_the_active_path_byte_for_byte() {
    let w = World::new();
    let (s, id) = branched(&w);
    let out = w.ok(&["session", "log", &s]);
    assert_eq!(ids(&out), sel(&id, &[0, 1, 4, 5]));
    let file = std::fs::read_to_string(&s).unwrap();
    for line in out.lines() {
        assert!(file.lines().any(|l| l == line), "not a file line: {line}");
    }
    // --leaf (with a unique prefix) follows another branch.
    let out = w.ok(&["session", "log", &s, "--leaf", &id[3][..6]]);
    assert_eq!(ids(&out), sel(&id, &[0, 1, 2, 3]));
    // --all: file order, header excluded.
    assert_eq!(ids(&w.ok(&["session", "log", &s, "--all"])), id);
    assert_eq!(
        w.ok(&["session", "log", &s, "--all"]),
        file.lines()
            .skip(1)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
}

#[test]
fn log_options_compose() {
    let w = World::new();
    let (s, id) = branched(&w);
    assert_eq!(
        ids(&w.ok(&["session", "log", &s, "--reverse"])),
        sel(&id, &[5, 4, 1, 0])
    );
    assert_eq!(
        ids(&w.ok(&["session", "log", &s, "-n", "2"])),
        sel(&id, &[4, 5])
    );
    assert_eq!(
        ids(&w.ok(&["session", "log", &s, "-n", "2", "--reverse"])),
        sel(&id, &[5, 4])
    );
    assert_eq!(
        ids(&w.ok(&["session", "log", &s, "-n", "0"])),
        Vec::<String>::new()
    );
    w.ok(&["session", "label", &s, &id[0], "start"]);
    assert_eq!(
        ids(&w.ok(&["session", "log", &s, "--type", "label"])).len(),
        1
    );
    assert_eq!(
        ids(&w.ok(&["session", "log", &s, "--type", "message,label"])).len(),
        5
    );
    // --filter: jq on each entry; -r prints raw strings.
    let roles = w.ok(&[
        "session",
        "log",
        &s,
        "--filter",
        "select(.type == \"message\") | .message.role",
        "-r",
    ]);
    assert_eq!(roles, "user\nassistant\nuser\nassistant\n");
    let texts = w.ok(&[
        "session",
        "log",
        &s,
        "-n",
        "1",
        "--type",
        "message",
        "--filter",
        ".message.content[0].text",
    ]);
    assert_eq!(texts, "\"a3\"\n");
    // A filter that keeps entries whole prints the original bytes.
    let kept = w.ok(&[
        "session",
        "log",
        &s,
        "--filter",
        "select(.message.role == \"user\")",
    ]);
    let plain = w.ok(&["session", "log", &s, "--type", "message"]);
    let users: Vec<&str> = plain
        .lines()
        .filter(|l| l.contains("\"role\":\"user\""))
        .collect();
    assert_eq!(kept.lines().collect::<Vec<_>>(), users);
}

#[test]
fn unknown_types_can_be_selected() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap();
    w.ok_in(
        &["session", "append", s],
        r#"{"type":"future_thing","payload":{"x":[1,2.50,"é"]},"extra":true}"#,
    );
    let out = w.ok(&["session", "log", s, "--type", "future_thing"]);
    assert!(
        out.contains(r#""payload":{"x":[1,2.50,"é"]},"extra":true"#),
        "{out}"
    );
}

#[test]
fn log_errors() {
    let w = World::new();
    let (s, _) = branched(&w);
    let shown = w.snaps(&[
        &["session", "log", &s, "--leaf", "ffffffff"],
        &["session", "log", &s, "--filter", ".a |"],
        &["session", "log", &s, "--filter", "nosuchfn"],
        &["session", "log", &s, "--all", "--leaf", "x"],
    ]);
    insta::assert_snapshot!(shown, @"
    $ pi session log [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl --leaf ffffffff
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: no entry with id 'ffffffff'

    $ pi session log [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl --filter '.a |'
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid --filter program: expected term at line 1, column 5, found the end of the program

    $ pi session log [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl --filter nosuchfn
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid --filter program: undefined filter 'nosuchfn' at line 1, column 1

    $ pi session log [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl --all --leaf x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the argument '--all' cannot be used with '--leaf <ID>'
      usage: pi session log --all <SESSION>
      hint: for more information, try '--help'
    ");
    // A runtime error in the filter: reported per entry, exit 1, other output kept.
    let out = w
        .pi()
        .args([
            "session",
            "log",
            &s,
            "--filter",
            ".message.content | length",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = w
        .pi()
        .args(["session", "log", &s, "--filter", "error(\"boom\")"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("boom"));
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let w = World::new();
    let s = w.new_session();
    let lines: Vec<String> = (0..3000)
        .map(|i| user(&format!("message {i} {}", "x".repeat(200))))
        .collect();
    w.ok_in(
        &["session", "append", s.to_str().unwrap()],
        &lines.join("\n"),
    );
    let mut child = w
        .std_cmd()
        .args(["session", "log", s.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn torn_last_line_is_reported_and_skipped() {
    let w = World::new();
    let (s, id) = branched(&w);
    let mut f = std::fs::OpenOptions::new().append(true).open(&s).unwrap();
    std::io::Write::write_all(&mut f, br#"{"type":"message","id":"torn","par"#).unwrap();
    let out = w.pi().args(["session", "log", &s]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        ids(&String::from_utf8_lossy(&out.stdout)).last().unwrap(),
        &id[5]
    );
    insta::assert_snapshot!(w.redact(&String::from_utf8_lossy(&out.stderr)), @r#"pi: warning: [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl:8: skipped: the last line is incomplete (an interrupted write?): expected '"' to close the string at column 35"#);
}

#[test]
fn output_to_a_file_or_a_pipe_is_the_same() {
    let w = World::new();
    let (s, _) = branched(&w);
    let piped = w.ok(&["session", "log", &s]);
    let file = w.path("out.jsonl");
    let status = w
        .std_cmd()
        .args(["session", "log", &s])
        .stdout(std::fs::File::create(&file).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), piped);
    let status = w
        .std_cmd()
        .args(["session", "log", &s, "--all", "-n", "3"])
        .stdout(std::fs::File::create(&file).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        w.ok(&["session", "log", &s, "--all", "-n", "3", "--filter", "."])
    );
}

/// `--filter` as jq: --arg, --argjson, $ENV, $ARGS, the format strings, -c accepted, and
/// --slurp over the selected entries (after --type and -n).
#[test]
fn filters_take_jq_arguments_formats_and_slurp() {
    let w = World::new();
    let (s, ids) = branched(&w);
    let log = |args: &[&str]| w.ok(&[&["session", "log", &s], args].concat());
    // --arg is a string, --argjson a JSON value; $ARGS.named has both.
    assert_eq!(
        log(&[
            "--type",
            "message",
            "-n",
            "1",
            "-c",
            "--arg",
            "who",
            "-me",
            "--argjson",
            "n",
            "{\"k\": [1]}",
            "--filter",
            "[$who, $n.k[0], $ARGS.named.who]"
        ]),
        "[\"-me\",1,\"-me\"]\n"
    );
    let o = w
        .pi()
        .env("PI_TEST_WHO", "from the environment")
        .args([
            "session",
            "log",
            &s,
            "-n",
            "1",
            "-r",
            "--filter",
            "$ENV.PI_TEST_WHO",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "from the environment\n");
    // The format strings.
    let f = |filter: &str| log(&["--type", "message", "-r", "-n", "1", "--filter", filter]);
    assert_eq!(
        f("[.id, .message.role, 1, null, true] | @csv"),
        format!("\"{}\",\"assistant\",1,,true\n", ids[5])
    );
    assert_eq!(f("[.message.role, \"a\\tb\"] | @tsv"), "assistant\ta\\tb\n");
    assert_eq!(
        f("[.message.role, \"it's\"] | @sh"),
        "'assistant' 'it'\\''s'\n"
    );
    assert_eq!(f(".message.role | @base64"), "YXNzaXN0YW50\n");
    assert_eq!(f("\"YXNzaXN0YW50\" | @base64d"), "assistant\n");
    assert_eq!(f("\"a b&c\" | @uri"), "a%20b%26c\n");
    assert_eq!(f("\"<b>\" | @html"), "&lt;b&gt;\n");
    assert_eq!(f("{a: 1} | @json"), "{\"a\":1}\n");
    assert_eq!(f("[1] | @text"), "[1]\n");
    assert_eq!(f("@text \"role=\\(.message.role)\""), "role=assistant\n");
    // --slurp: one array of the selected entries; -n keeps those nearest the leaf.
    assert_eq!(
        log(&["--type", "message", "--slurp", "-c", "--filter", "map(.id)"]),
        format!(
            "[\"{}\",\"{}\",\"{}\",\"{}\"]\n",
            ids[0], ids[1], ids[4], ids[5]
        )
    );
    assert_eq!(
        log(&[
            "--type", "message", "-n", "2", "--slurp", "--filter", "length"
        ]),
        "2\n"
    );
    assert_eq!(
        log(&[
            "--all", "--type", "message", "--slurp", "--filter", "length"
        ]),
        "6\n"
    );
    // Usage errors: --argjson must be JSON, a variable must be defined, --arg needs --filter.
    insta::assert_snapshot!(w.redact(&w.snaps(&[
        &["session", "log", &s, "--argjson", "x", "{", "--filter", "$x"],
        &["session", "log", &s, "--filter", "$nope"],
        &["session", "log", &s, "--arg", "a", "b"],
    ])), @"
    $ pi session log [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl --argjson x { --filter '$x'
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: --argjson x: invalid JSON: byte offset 1: value or end of sequence expected

    $ pi session log [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl --filter '$nope'
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid --filter program: undefined variable '$nope' at line 1, column 1

    $ pi session log [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl --arg a b
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the following required arguments were not provided: --filter <JQ>
      usage: pi session log --filter <JQ> --arg <NAME> <VALUE> <SESSION>
      hint: for more information, try '--help'
    ");
}
