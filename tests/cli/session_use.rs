//! Issue 33 point 1: the current session. A command given no session uses, in order,
//! `PI_SESSION`, the session pinned with `pi session use`, the most recently modified one;
//! a stale pin or `PI_SESSION` is an error, `resume` says which it used, and `list` marks
//! the current session and lists in the order the default picks.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;

fn status(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `pi session resume --json`, with `PI_SESSION` set when `env` is given: (path, from).
fn resume(w: &World, env: Option<&str>) -> (String, String) {
    let mut c = w.pi();
    c.args(["session", "resume", "--json"]);
    if let Some(v) = env {
        c.env("PI_SESSION", v);
    }
    let o = c.output().unwrap();
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    let r = &jsonl(&String::from_utf8_lossy(&o.stdout))[0];
    (
        r["path"].as_str().unwrap().to_owned(),
        r["from"].as_str().unwrap().to_owned(),
    )
}

/// The messages of a session, as text.
fn texts(w: &World, p: &Path) -> Vec<String> {
    w.ok(&[
        "session",
        "log",
        p.to_str().unwrap(),
        "--type",
        "message",
        "--filter",
        ".message.content",
        "-r",
    ])
    .lines()
    .map(str::to_owned)
    .collect()
}

/// Appends a user message to the session a command given none uses.
fn append_default(w: &World, env: Option<&str>, text: &str) -> Output {
    let mut c = w.pi();
    c.args(["session", "append"]).write_stdin(user(text));
    if let Some(v) = env {
        c.env("PI_SESSION", v);
    }
    c.output().unwrap()
}

fn three(w: &World) -> (PathBuf, PathBuf, PathBuf) {
    (w.new_session(), w.new_session(), w.new_session())
}

#[test]
fn each_step_of_the_order_argument_env_pin_most_recent() {
    let w = World::new();
    let (a, b, c) = three(&w);
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    // Nothing pinned: the most recent.
    assert_eq!(resume(&w, None), (s(&c), "most-recent".into()));
    // Pinned: the pin, also after another session is written to (it used to move).
    assert_eq!(w.ok(&["session", "use", &s(&a)]).trim(), s(&a));
    w.ok(&["session", "name", &s(&b), "touched"]);
    assert_eq!(resume(&w, None), (s(&a), "pin".into()));
    let o = append_default(&w, None, "to the pin");
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    assert_eq!(texts(&w, &a), ["to the pin"]);
    // PI_SESSION before the pin: by path and by short id.
    let short_b = &header_id(&b)[28..];
    assert_eq!(resume(&w, Some(&s(&b))), (s(&b), "env".into()));
    assert_eq!(resume(&w, Some(short_b)), (s(&b), "env".into()));
    let o = append_default(&w, Some(short_b), "to the env");
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    assert_eq!(texts(&w, &b), ["to the env"]);
    // An empty PI_SESSION counts as unset.
    assert_eq!(resume(&w, Some("")), (s(&a), "pin".into()));
    // The argument before both.
    let o = w
        .pi()
        .env("PI_SESSION", s(&b))
        .args(["session", "append", "-s", &s(&c)])
        .write_stdin(user("to the argument"))
        .output()
        .unwrap();
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    assert_eq!(texts(&w, &c), ["to the argument"]);
    // Readers too: log without a session reads the pinned one.
    let log = w.ok(&[
        "session",
        "log",
        "--type",
        "message",
        "--filter",
        ".message.content",
        "-r",
    ]);
    assert_eq!(log.trim(), "to the pin");
    // Cleared: the most recent again (c, written last).
    w.ok(&["session", "use", "--clear"]);
    assert_eq!(resume(&w, None), (s(&c), "most-recent".into()));
}

fn header_id(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    jsonl(text.lines().next().unwrap())[0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn use_prints_the_pin_says_none_and_clears_it() {
    let w = World::new();
    let (a, _b, _c) = three(&w);
    let o = w.pi().args(["session", "use"]).output().unwrap();
    assert_eq!(status(&o), 1);
    assert!(o.stdout.is_empty());
    assert!(
        stderr(&o).contains("no session is pinned"),
        "{}",
        stderr(&o)
    );
    // Pinned by short id; the pin holds the path.
    let short = &header_id(&a)[28..];
    assert_eq!(w.ok(&["session", "use", short]).trim(), a.to_str().unwrap());
    assert_eq!(w.ok(&["session", "use"]).trim(), a.to_str().unwrap());
    // One private file per directory.
    let pins: Vec<PathBuf> = std::fs::read_dir(w.agent().join("current-session"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(pins.len(), 1, "{pins:?}");
    assert_eq!(
        std::fs::read_to_string(&pins[0]).unwrap(),
        format!("{}\n", a.display())
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&pins[0]), 0o600);
        assert_eq!(mode(&w.agent().join("current-session")), 0o700);
    }
    // Another directory has no pin.
    std::fs::create_dir_all(w.path("other")).unwrap();
    let o = w
        .pi()
        .args(["session", "use", "--cwd"])
        .arg(w.path("other"))
        .output()
        .unwrap();
    assert_eq!(status(&o), 1);
    // A session that does not exist is refused and nothing is pinned over the old pin.
    let o = w
        .pi()
        .args(["session", "use", "nothing-like-it"])
        .output()
        .unwrap();
    assert_eq!(status(&o), 2, "{}", stderr(&o));
    assert_eq!(w.ok(&["session", "use"]).trim(), a.to_str().unwrap());
    // SESSION and --clear together are a usage error.
    let o = w
        .pi()
        .args(["session", "use", short, "--clear"])
        .output()
        .unwrap();
    assert_eq!(status(&o), 2);
    // Clear, twice: the second says there was none, both succeed.
    let o = w.pi().args(["session", "use", "--clear"]).output().unwrap();
    assert_eq!(status(&o), 0);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let o = w.pi().args(["session", "use", "--clear"]).output().unwrap();
    assert_eq!(status(&o), 0);
    assert!(
        stderr(&o).contains("no session was pinned"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_dir(w.agent().join("current-session"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn a_stale_pin_or_env_is_an_error_never_a_fall_back() {
    let w = World::new();
    let (a, b, c) = three(&w);
    w.ok(&["session", "use", a.to_str().unwrap()]);
    std::fs::remove_file(&a).unwrap();
    let before_b = std::fs::read(&b).unwrap();
    let before_c = std::fs::read(&c).unwrap();
    for args in [
        &["session", "resume"][..],
        &["session", "log"],
        &["session", "use"],
    ] {
        let o = w.pi().args(args).output().unwrap();
        assert_eq!(status(&o), 1, "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
        let e = stderr(&o);
        assert!(e.contains("the pinned session"), "{e}");
        assert!(e.contains("pi session use --clear"), "{e}");
    }
    let o = append_default(&w, None, "lost?");
    assert_eq!(status(&o), 1, "{}", stderr(&o));
    // PI_SESSION naming nothing: an error too, even with a good pin.
    w.ok(&["session", "use", b.to_str().unwrap()]);
    let o = append_default(&w, Some("0123abcd"), "lost?");
    assert_eq!(status(&o), 1, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("PI_SESSION") && e.contains("unset PI_SESSION"),
        "{e}"
    );
    // Nothing was written anywhere.
    assert_eq!(std::fs::read(&b).unwrap(), before_b);
    assert_eq!(std::fs::read(&c).unwrap(), before_c);
    // The listing goes on, with a warning and no mark.
    w.ok(&["session", "use", "--clear"]);
    w.ok(&["session", "use", c.to_str().unwrap()]);
    std::fs::remove_file(&c).unwrap();
    let o = w.pi().args(["session", "list"]).output().unwrap();
    assert_eq!(status(&o), 0);
    assert!(stderr(&o).contains("the pinned session"), "{}", stderr(&o));
    let recs = jsonl(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(recs.len(), 1);
    assert!(recs[0].get("current").is_none());
}

#[test]
fn resume_says_which_it_used_on_a_terminal_only_and_in_json() {
    let w = World::new();
    let (a, _b, _c) = three(&w);
    // Piped: the path alone, stderr quiet (a cron job's mail stays empty).
    let o = w.pi().args(["session", "resume"]).output().unwrap();
    assert_eq!(status(&o), 0);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    w.ok(&["session", "use", a.to_str().unwrap()]);
    assert_eq!(resume(&w, None).1, "pin");
    // On a terminal, the note.
    let mut cmd = w.std_cmd();
    cmd.args(["session", "resume"]);
    let (code, text) = crate::terminal::on_terminal(cmd);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("pi: note: the pinned session (pi session use)"),
        "{text}"
    );
    assert!(text.contains(a.to_str().unwrap()), "{text}");
}

#[test]
fn list_marks_the_current_session_and_sorts_as_the_default_picks() {
    let w = World::new();
    let (a, b, c) = three(&w);
    // An older session written to last (a label: no new message) is what commands given no
    // session pick, and the top row of the listing.
    std::thread::sleep(std::time::Duration::from_millis(20));
    w.ok(&["session", "name", a.to_str().unwrap(), "renamed"]);
    let (picked, from) = resume(&w, None);
    assert_eq!(
        (picked.as_str(), from.as_str()),
        (a.to_str().unwrap(), "most-recent")
    );
    let recs = jsonl(&w.ok(&["session", "list"]));
    let paths: Vec<&str> = recs.iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(paths[0], a.to_str().unwrap());
    assert_eq!(recs[0]["current"], true);
    assert!(recs[1..].iter().all(|r| r.get("current").is_none()));
    // Pinned: the mark moves to the pin, the order stays.
    w.ok(&["session", "use", b.to_str().unwrap()]);
    let recs = jsonl(&w.ok(&["session", "list"]));
    let marked: Vec<&str> = recs
        .iter()
        .filter(|r| r["current"] == true)
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(marked, [b.to_str().unwrap()]);
    assert_eq!(recs[0]["path"], a.to_str().unwrap());
    // PI_SESSION moves it again; the human view marks it with `*`.
    let o = w
        .pi()
        .env("PI_SESSION", c.to_str().unwrap())
        .args(["session", "list", "--format", "human"])
        .output()
        .unwrap();
    let human = String::from_utf8_lossy(&o.stdout).into_owned();
    let starred: Vec<&str> = human.lines().filter(|l| l.starts_with("* ")).collect();
    assert_eq!(starred.len(), 1, "{human}");
    assert!(starred[0].contains(&header_id(&c)[28..]), "{human}");
    assert!(
        human.lines().next().unwrap().starts_with("  MODIFIED"),
        "{human}"
    );
    // --all marks the current session of the current directory.
    let recs = jsonl(&w.ok(&["session", "list", "--all"]));
    assert_eq!(recs.iter().filter(|r| r["current"] == true).count(), 1);
}
