//! `pi session new`, `pi session resume`, `pi session list`

use serde_json::Value;

use crate::common::*;

fn header(path: &str) -> Value {
    let text = std::fs::read_to_string(path.trim()).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

#[test]
fn new_writes_the_header_at_once_under_the_encoded_cwd() {
    let w = World::new();
    let out = w.ok(&["session", "new"]);
    let path = out.trim();
    let dir = format!(
        "--{}--",
        w.proj()
            .to_str()
            .unwrap()
            .trim_start_matches('/')
            .replace('/', "-")
    );
    assert!(
        path.starts_with(w.agent().join("sessions").join(&dir).to_str().unwrap()),
        "{path}"
    );
    let h = header(path);
    assert_eq!(h["type"], "session");
    assert_eq!(h["version"], 3);
    assert_eq!(h["cwd"], w.proj().to_str().unwrap());
    let id = h["id"].as_str().unwrap();
    // A v7 UUID, named in the file name after the creation time.
    assert_eq!(id.len(), 36);
    assert_eq!(&id[14..15], "7");
    let ts = h["timestamp"].as_str().unwrap();
    assert!(ts.ends_with('Z') && ts.len() == 24, "{ts}");
    let name = std::path::Path::new(path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    assert_eq!(name, format!("{}_{id}.jsonl", ts.replace([':', '.'], "-")));
    assert_eq!(std::fs::read_to_string(path).unwrap().lines().count(), 1);
}

#[test]
fn new_with_options() {
    let w = World::new();
    let parent = w.new_session();
    std::fs::create_dir_all(w.path("other")).unwrap();
    let other = std::fs::canonicalize(w.path("other")).unwrap();
    let out = w.ok(&[
        "session",
        "new",
        "--cwd",
        other.to_str().unwrap(),
        "--id",
        "my-custom-id",
        "--name",
        "  Demo  ",
        "--parent-session",
        parent.to_str().unwrap(),
    ]);
    let path = out.trim();
    assert!(path.ends_with("_my-custom-id.jsonl"), "{path}");
    let text = std::fs::read_to_string(path).unwrap();
    let lines = jsonl(&text);
    assert_eq!(lines[0]["id"], "my-custom-id");
    assert_eq!(lines[0]["cwd"], other.to_str().unwrap());
    assert_eq!(lines[0]["parentSession"], parent.to_str().unwrap());
    assert_eq!(lines[1]["type"], "session_info");
    assert_eq!(lines[1]["name"], "Demo");
    assert_eq!(lines[1]["parentId"], Value::Null);
    // The id is taken now.
    let again = w
        .pi()
        .args([
            "session",
            "new",
            "--cwd",
            other.to_str().unwrap(),
            "--id",
            "my-custom-id",
        ])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already used"));
}

#[test]
fn new_rejects_bad_ids_and_missing_parents() {
    let w = World::new();
    for (args, needle) in [
        (vec!["--id", "a/b"], "invalid session id"),
        (vec!["--id", ""], "invalid session id"),
        (
            vec!["--parent-session", "nope"],
            "no session matches 'nope'",
        ),
    ] {
        let out = w
            .pi()
            .args(["session", "new"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("pi: error: "), "{err}");
        assert!(err.contains(needle), "{err}");
    }
    assert!(!w.agent().join("sessions").exists() || walk(&w.agent()).is_empty());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn resume_prints_the_most_recent_session_or_fails() {
    let w = World::new();
    let out = w.pi().args(["session", "resume"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no session found for"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    let a = w.new_session();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let b = w.new_session();
    assert_eq!(w.ok(&["session", "resume"]).trim(), b.to_str().unwrap());
    // Touching the older one makes it the most recent.
    w.ok_in(&["session", "append", a.to_str().unwrap()], &user("later"));
    assert_eq!(w.ok(&["session", "resume"]).trim(), a.to_str().unwrap());
    // It composes: pass the result to another command.
    let out = w
        .pi()
        .arg("session")
        .arg("log")
        .arg(w.ok(&["session", "resume"]).trim())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("later"));
    // Another directory has none.
    std::fs::create_dir_all(w.path("elsewhere")).unwrap();
    let out = w
        .pi()
        .args([
            "session",
            "resume",
            "--cwd",
            w.path("elsewhere").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn omitted_session_means_the_most_recent_one_of_the_cwd() {
    let w = World::new();
    let _a = w.new_session();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let b = w.new_session();
    w.ok_in(&["session", "append"], &user("goes to b"));
    assert!(std::fs::read_to_string(&b).unwrap().contains("goes to b"));
}

#[test]
fn sessions_are_found_by_id_and_unique_prefix() {
    let w = World::new();
    let a = w
        .ok(&["session", "new", "--id", "abc-111"])
        .trim()
        .to_owned();
    let b = w
        .ok(&["session", "new", "--id", "abc-222"])
        .trim()
        .to_owned();
    assert_eq!(w.ok(&["session", "log", "abc-111"]), "");
    w.ok_in(&["session", "append", "abc-2"], &user("to b"));
    assert!(std::fs::read_to_string(&b).unwrap().contains("to b"));
    assert!(!std::fs::read_to_string(&a).unwrap().contains("to b"));
    let out = w.pi().args(["session", "log", "abc"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ambiguous") && err.contains("abc-111") && err.contains("abc-222"),
        "{err}"
    );
    // Other projects are searched after the current one.
    std::fs::create_dir_all(w.path("p2")).unwrap();
    let c = w
        .ok(&[
            "session",
            "new",
            "--cwd",
            w.path("p2").to_str().unwrap(),
            "--id",
            "zzz-333",
        ])
        .trim()
        .to_owned();
    w.ok_in(&["session", "append", "zzz"], &user("to c"));
    assert!(std::fs::read_to_string(&c).unwrap().contains("to c"));
    let out = w
        .pi()
        .args(["session", "log", "nothing-like-it"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = w
        .pi()
        .args(["session", "log", "missing/file.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session file at"));
}

#[test]
fn list_reports_sessions_newest_first() {
    let w = World::new();
    let a = w
        .ok(&["session", "new", "--name", "first one"])
        .trim()
        .to_owned();
    std::thread::sleep(std::time::Duration::from_millis(10));
    let b = w.new_session();
    w.ok_in(
        &["session", "append", b.to_str().unwrap()],
        &format!(
            "{}\n{}\n{}\n",
            r#"{"role":"user","content":[{"type":"text","text":"hello"},{"type":"text","text":"there"}],"timestamp":2000000000000}"#,
            assistant("hi"),
            r#"{"role":"toolResult","toolCallId":"t","toolName":"ls","content":[],"isError":false}"#
        ),
    );
    std::fs::write(
        w.agent()
            .join("sessions")
            .join(
                std::path::Path::new(&a)
                    .parent()
                    .unwrap()
                    .file_name()
                    .unwrap(),
            )
            .join("junk.jsonl"),
        "not json\n",
    )
    .unwrap();
    let recs = jsonl(&w.ok(&["session", "list"]));
    assert_eq!(recs.len(), 2, "non-session files are skipped");
    assert_eq!(recs[0]["path"], b.to_str().unwrap());
    assert_eq!(recs[0]["messageCount"], 3);
    assert_eq!(recs[0]["firstMessage"], "hello there");
    assert_eq!(recs[0]["modified"], "2033-05-18T03:33:20.000Z");
    assert_eq!(recs[1]["path"], a.as_str());
    assert_eq!(recs[1]["name"], "first one");
    assert_eq!(recs[1]["messageCount"], 0);
    assert_eq!(recs[1]["firstMessage"], "(no messages)");
    assert_eq!(recs[1]["modified"], recs[1]["created"]);
    for k in ["id", "cwd", "created"] {
        assert!(recs[0][k].is_string(), "{k}");
    }
    // An empty name clears it (0.73 semantics).
    w.ok(&["session", "name", &a, ""]);
    let recs = jsonl(&w.ok(&["session", "list"]));
    let ra = recs.iter().find(|r| r["path"] == a.as_str()).unwrap();
    assert!(ra.get("name").is_none(), "{ra}");
    // Human table, newest file first (the one renamed last), the current session marked;
    // the ID column shows the random ends of the ids.
    insta::assert_snapshot!(w.snap(&["session", "list", "--format", "human"]), @"
    status: 0
    ----- stdout -----
      MODIFIED     MSGS     SIZE    COST  ID        NAME / FIRST MESSAGE
    * just now        0    368 B          e4594b0f  (no messages)
      just now        3   1005 B          ee8f30f2  hello there
    ----- stderr -----
    ");
}

#[test]
fn list_all_and_cwd() {
    let w = World::new();
    w.new_session();
    std::fs::create_dir_all(w.path("p2")).unwrap();
    let p2 = w.path("p2");
    w.ok(&["session", "new", "--cwd", p2.to_str().unwrap()]);
    assert_eq!(jsonl(&w.ok(&["session", "list"])).len(), 1);
    let other = jsonl(&w.ok(&["session", "list", "--cwd", p2.to_str().unwrap()]));
    assert_eq!(other.len(), 1);
    assert_eq!(
        other[0]["cwd"],
        std::fs::canonicalize(&p2).unwrap().to_str().unwrap()
    );
    assert_eq!(jsonl(&w.ok(&["session", "list", "--all"])).len(), 2);
    assert_eq!(
        w.ok(&["session", "list", "--cwd", w.path("home").to_str().unwrap()]),
        ""
    );
}

#[test]
fn session_dir_overrides() {
    let w = World::new();
    let d = w.path("custom");
    let out = w.ok(&["--session-dir", d.to_str().unwrap(), "session", "new"]);
    assert!(out.starts_with(d.to_str().unwrap()), "{out}");
    let out = w
        .pi()
        .env("PI_CODING_AGENT_SESSION_DIR", w.path("env"))
        .args(["session", "new"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(w.path("env").to_str().unwrap()));
    std::fs::create_dir_all(w.proj().join(".pi")).unwrap();
    std::fs::write(
        w.proj().join(".pi/settings.json"),
        format!("{{\"sessionDir\":\"{}\"}}", w.path("set").display()),
    )
    .unwrap();
    // A project's sessionDir applies once the project is trusted.
    w.ok(&["trust"]);
    let out = w.ok(&["session", "new"]);
    assert!(out.starts_with(w.path("set").to_str().unwrap()), "{out}");
    assert_eq!(w.ok(&["session", "resume"]), out);
}

/// An untrusted project's `sessionDir` is ignored with a one-line warning (issue 30): a
/// cloned repository cannot make pi record your conversations inside itself. The global
/// setting, trust, and a change after trust behave as for hooks.
#[test]
fn an_untrusted_projects_session_dir_is_ignored() {
    let w = World::new();
    let inside = w.proj().join("captured");
    w.write(
        "proj/.pi/settings.json",
        format!("{{\"sessionDir\":\"{}\"}}", inside.display()),
    );
    let o = w.pi().args(["session", "new"]).output().unwrap();
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    let default = w.agent().join("sessions");
    assert!(out.starts_with(default.to_str().unwrap()), "{out}");
    assert!(!inside.exists(), "nothing is written into the project");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("pi: warning: ignoring sessionDir in ")
            && err.contains("the project is not trusted")
            && err.contains("pi trust"),
        "{err}"
    );
    // The global setting still applies.
    let global = w.path("global-sessions");
    w.write(
        "agent/settings.json",
        format!("{{\"sessionDir\":\"{}\"}}", global.display()),
    );
    let out = w.ok(&["session", "new"]);
    assert!(out.starts_with(global.to_str().unwrap()), "{out}");
    // Trusted: the project decides.
    w.ok(&["trust"]);
    let o = w.pi().args(["session", "new"]).output().unwrap();
    assert!(o.status.success() && o.stderr.is_empty());
    assert!(
        String::from_utf8(o.stdout)
            .unwrap()
            .starts_with(inside.to_str().unwrap())
    );
    // Changed since: ignored again.
    w.write(
        "proj/.pi/settings.json",
        format!("{{\"sessionDir\":\"{}/x\"}}", inside.display()),
    );
    let o = w.pi().args(["session", "new"]).output().unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.starts_with(global.to_str().unwrap()), "{out}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("ignoring sessionDir"));
}
