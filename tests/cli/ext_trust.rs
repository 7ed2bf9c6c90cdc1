//! A project's own code (hooks in `.pi/settings.json`, programs in `.pi/tools/`) runs only
//! after `pi trust`, bound to the content of its files; a session file never decides which
//! project's code runs. Global hooks and tools, and those of the command line, always run.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::ext_hooks::script;
use crate::run_support::*;

/// The marks hooks and tools left, one per line, in order.
fn marks(w: &World) -> Vec<String> {
    std::fs::read_to_string(w.path("marks.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A shell command that records `name` in the marks and reads its input.
fn mark(w: &World, name: &str) -> String {
    format!(
        "cat > /dev/null; echo {name} >> '{}'",
        w.path("marks.log").display()
    )
}

/// A project in `dir` (under the world's root) whose hooks and tool mark every use, as a
/// hostile repository would run its own code. Returns its canonical path.
fn project(w: &World, dir: &str) -> PathBuf {
    w.write(
        &format!("{dir}/.pi/settings.json"),
        json!({"hooks": {
            "session_before_compact": mark(w, "project-compact"),
            "session_before_tree": mark(w, "project-tree"),
            "input": mark(w, "project-input"),
        }})
        .to_string(),
    );
    script(
        w,
        &format!("{dir}/.pi/tools/evil"),
        &format!(
            r#"echo project-tool-$1 >> '{}'
if [ "$1" = --describe ]; then echo '{{"name": "evil", "description": "Does harm"}}'; fi"#,
            w.path("marks.log").display()
        ),
    );
    std::fs::canonicalize(w.path(dir)).unwrap()
}

/// A compactable session (tests/fixtures/compact/cases/co-c1) whose header names `cwd`:
/// the way a crafted file would point pi at a project of its choosing.
fn session_in(w: &World, cwd: &Path, rel: &str) -> PathBuf {
    let text = std::fs::read_to_string(fixture("compact/cases/co-c1.jsonl"))
        .unwrap()
        .replacen(
            r#""cwd":"/tmp/proj""#,
            &format!(r#""cwd":{}"#, json!(cwd.to_str().unwrap())),
            1,
        );
    w.write(rel, text)
}

fn compact_with_summary(w: &World, s: &Path) -> std::process::Output {
    w.pi()
        .args([
            "compact",
            s.to_str().unwrap(),
            "--keep-recent-tokens",
            "15",
            "--summary-file",
            "-",
        ])
        .write_stdin("A summary written elsewhere.")
        .output()
        .unwrap()
}

/// The warnings of a command's stderr about untrusted projects.
fn refusals(o: &std::process::Output) -> Vec<String> {
    err(o)
        .lines()
        .filter(|l| l.contains("pi trust"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_crafted_session_runs_no_project_code_until_the_project_is_trusted() {
    let w = World::new();
    let evil = project(&w, "evil");
    // compact and branch take the project from the session's header.
    let s = session_in(&w, &evil, "s/a.jsonl");
    let o = compact_with_summary(&w, &s);
    status(&o, 0);
    assert_eq!(lines(&s).last().unwrap()["type"], "compaction");
    let o = w
        .pi()
        .args(["session", "branch", s.to_str().unwrap(), "e2"])
        .output()
        .unwrap();
    status(&o, 0);
    assert_eq!(marks(&w), Vec::<String>::new(), "project code ran");
    let r = refusals(&o);
    assert_eq!(r.len(), 1, "{}", err(&o));
    assert_eq!(
        w.redact(&r[0]),
        "pi: warning: [ROOT]/evil is not a trusted project: its hooks and tools (.pi/) were not run; review them, then run `pi trust [ROOT]/evil`"
    );
    // The hooks given on the command line run all the same.
    let s = session_in(&w, &evil, "s/b.jsonl");
    let o = w
        .pi()
        .args(["session", "branch", s.to_str().unwrap(), "e2", "--hook"])
        .arg(format!("session_before_tree={}", mark(&w, "flag")))
        .output()
        .unwrap();
    status(&o, 0);
    assert_eq!(marks(&w), ["flag"]);

    // Trusted, the same kind of file runs the project's hooks.
    w.ok(&["trust", evil.to_str().unwrap()]);
    let s = session_in(&w, &evil, "s/c.jsonl");
    let o = compact_with_summary(&w, &s);
    status(&o, 0);
    assert!(refusals(&o).is_empty(), "{}", err(&o));
    let o = w
        .pi()
        .args(["session", "branch", s.to_str().unwrap(), "e2"])
        .output()
        .unwrap();
    status(&o, 0);
    assert_eq!(marks(&w), ["flag", "project-compact", "project-tree"]);
}

/// The README's cron line: `compact --all` passes over an untrusted project's hooks (one
/// warning for all its sessions) and runs a trusted one's.
#[test]
fn compact_all_runs_only_trusted_projects_hooks() {
    let server = ModelServer::start();
    let w = world(&server);
    let evil = project(&w, "evil");
    let good = w.proj();
    w.write(
        "proj/.pi/settings.json",
        json!({"hooks": {"session_before_compact":
            format!("{}; echo '{{\"summary\": \"from the trusted hook\"}}'", mark(&w, "good-compact"))}})
        .to_string(),
    );
    w.ok(&["trust"]);
    let dir = w.agent().join("sessions").join("--crafted--");
    for name in ["e1", "e2"] {
        session_in(
            &w,
            &evil,
            dir.join(format!("{name}.jsonl")).to_str().unwrap(),
        );
    }
    let g = session_in(&w, &good, dir.join("g.jsonl").to_str().unwrap());
    server.push(Reply::openai_text(&["a model's summary"]));
    server.push(Reply::openai_text(&["a model's summary"]));
    let o = w
        .pi()
        .args([
            "compact",
            "--all",
            "--if-needed",
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
            "--context-window",
            "1000",
            "--reserve-tokens",
            "600",
        ])
        .output()
        .unwrap();
    status(&o, 0);
    let mut recs = jsonl(&out(&o));
    assert_eq!(recs.len(), 4, "{}", out(&o));
    assert_eq!(recs.pop().unwrap()["compacted"], 3, "the summary record");
    assert!(recs.iter().all(|r| r["compacted"] == true), "{}", out(&o));
    assert_eq!(marks(&w), ["good-compact"]);
    assert_eq!(refusals(&o).len(), 1, "{}", err(&o));
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        lines(&g).last().unwrap()["summary"],
        "from the trusted hook"
    );
}

/// Trust is bound to the content of `.pi/settings.json` and the files under `.pi/tools/`
/// and `.pi/hooks/`: a change to any of them untrusts the project until `pi trust` again.
#[test]
fn trust_is_bound_to_the_projects_files() {
    let w = World::new();
    let proj = w.proj();
    let hook = script(
        &w,
        "proj/.pi/hooks/compact.sh",
        &mark(&w, "hook-v1").replace("cat > /dev/null; ", "cat > /dev/null\n"),
    );
    w.write(
        "proj/.pi/settings.json",
        r#"{"hooks": {"session_before_compact": ".pi/hooks/compact.sh"}}"#,
    );
    let compact = |name: &str| {
        let s = session_in(&w, &proj, &format!("s/{name}.jsonl"));
        compact_with_summary(&w, &s)
    };
    let o = compact("1");
    status(&o, 0);
    assert_eq!(refusals(&o).len(), 1);
    assert!(marks(&w).is_empty());

    let rec: Value = serde_json::from_str(&w.ok(&["trust"])).unwrap();
    assert_eq!(rec["state"], "trusted");
    assert_eq!(rec["dir"], proj.to_str().unwrap());
    assert_eq!(
        rec["files"],
        json!([".pi/hooks", ".pi/hooks/compact.sh", ".pi/settings.json"])
    );
    status(&compact("2"), 0);
    assert_eq!(marks(&w), ["hook-v1"]);

    // The hook's program changes (a `git pull`, say): the project is untrusted again.
    std::fs::write(&hook, format!("#!/bin/sh\n{}\n", mark(&w, "hook-v2"))).unwrap();
    let o = compact("3");
    status(&o, 0);
    assert_eq!(marks(&w), ["hook-v1"]);
    assert_eq!(
        w.redact(&refusals(&o)[0]),
        "pi: warning: [PROJ] changed since it was trusted (.pi/hooks/compact.sh): its hooks and tools were not run; review them, then run `pi trust [PROJ]`"
    );
    let list = jsonl(&w.ok(&["trust", "--list"]));
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["state"], "changed");
    assert_eq!(list[0]["changed"], json!([".pi/hooks/compact.sh"]));

    w.ok(&["trust", "."]);
    status(&compact("4"), 0);
    assert_eq!(marks(&w), ["hook-v1", "hook-v2"]);

    // A new file under .pi/hooks/ counts too, and so does the executable bit.
    w.write("proj/.pi/hooks/helper.py", "print('x')\n");
    assert_eq!(
        jsonl(&w.ok(&["trust", "--list"]))[0]["changed"],
        json!([".pi/hooks/helper.py"])
    );
    w.ok(&["trust"]);
    std::fs::set_permissions(
        w.path("proj/.pi/hooks/helper.py"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert_eq!(jsonl(&w.ok(&["trust", "--list"]))[0]["state"], "changed");
    w.ok(&["trust"]);

    // Other settings of the project are not code: a project without hooks or tools needs
    // no trust, and its model defaults apply untrusted.
    let plain = w.path("plain");
    w.write(
        "plain/.pi/settings.json",
        r#"{"compaction": {"keepRecentTokens": 15}}"#,
    );
    let s = session_in(&w, &plain, "s/plain.jsonl");
    let o = compact_with_summary(&w, &s);
    status(&o, 0);
    assert!(err(&o).is_empty(), "{}", err(&o));
}

#[test]
fn list_and_revoke() {
    let w = World::new();
    let a = project(&w, "a");
    let b = project(&w, "b");
    assert_eq!(w.ok(&["trust", "--list"]), "");
    w.ok(&["trust", a.to_str().unwrap()]);
    // A path through a symbolic link is the same project.
    std::os::unix::fs::symlink(&b, w.path("link-to-b")).unwrap();
    let rec: Value =
        serde_json::from_str(&w.ok(&["trust", w.path("link-to-b").to_str().unwrap()])).unwrap();
    assert_eq!(rec["dir"], b.to_str().unwrap());
    let list = jsonl(&w.ok(&["trust", "--list"]));
    let dirs: Vec<&str> = list.iter().map(|r| r["dir"].as_str().unwrap()).collect();
    assert_eq!(dirs, [a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(list.iter().all(|r| r["state"] == "trusted"));
    let mode = std::fs::metadata(w.agent().join("trust.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let rec: Value =
        serde_json::from_str(&w.ok(&["trust", "--revoke", a.to_str().unwrap()])).unwrap();
    assert_eq!(
        rec,
        json!({"dir": a.to_str().unwrap(), "state": "untrusted", "revoked": true})
    );
    let rec: Value =
        serde_json::from_str(&w.ok(&["trust", "--revoke", a.to_str().unwrap()])).unwrap();
    assert_eq!(rec["revoked"], false);
    let list = jsonl(&w.ok(&["trust", "--list"]));
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["dir"], b.to_str().unwrap());
    // A trusted project that is gone is listed as missing.
    std::fs::remove_dir_all(&b).unwrap();
    assert_eq!(jsonl(&w.ok(&["trust", "--list"]))[0]["state"], "missing");

    let shown = w.snaps(&[&["trust", "no/such/dir"], &["trust", "--list", "a"]]);
    insta::assert_snapshot!(shown, @"
    $ pi trust no/such/dir
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: [PROJ]/no/such/dir: not a directory

    $ pi trust --list a
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the argument '--list' cannot be used with '[DIR]'
      usage: pi trust --list [DIR]
      hint: for more information, try '--help'
    ");
    // A damaged store is an error for `pi trust`, and trusts nothing elsewhere.
    w.write("agent/trust.json", "{not json");
    let o = w
        .pi()
        .args(["trust", a.to_str().unwrap()])
        .output()
        .unwrap();
    status(&o, 1);
    assert!(err(&o).contains("is not a trust store"), "{}", err(&o));
    assert_eq!(w.path("agent/trust.json").metadata().unwrap().len(), 9);
}

/// `pi run`: an untrusted project's hooks and tools are skipped with one warning and an
/// `extension_error`; global hooks and tools and those of the command line run.
#[test]
fn run_skips_an_untrusted_projects_hooks_and_tools() {
    let server = ModelServer::start();
    let w = world(&server);
    project(&w, "proj");
    settings(&w, json!({"hooks": {"agent_end": mark(&w, "global")}}));
    script(
        &w,
        "agent/tools/helper",
        r#"if [ "$1" = --describe ]; then echo '{"name": "helper", "description": "Helps"}'; fi"#,
    );
    server.push(Reply::openai_text(&["hi"]));
    let o = run(
        &w,
        &[
            "--json",
            "--hook",
            &format!("agent_end={}", mark(&w, "flag")),
            "-p",
            "x",
        ],
    );
    status(&o, 0);
    assert_eq!(marks(&w), ["global", "flag"]);
    assert_eq!(refusals(&o).len(), 1, "{}", err(&o));
    let evs = events(&o);
    let errors: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "extension_error")
        .collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["event"], "trust");
    assert_eq!(
        w.redact(errors[0]["extensionPath"].as_str().unwrap()),
        "[PROJ]/.pi"
    );
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("is not a trusted project")
    );
    let tools: Vec<String> = server.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.contains(&"helper".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"evil".to_owned()), "{tools:?}");

    w.ok(&["trust"]);
    std::fs::remove_file(w.path("marks.log")).unwrap();
    server.push(Reply::openai_text(&["hi"]));
    let o = run(&w, &["--json", "-p", "x"]);
    status(&o, 0);
    assert!(refusals(&o).is_empty(), "{}", err(&o));
    assert!(!out(&o).contains("extension_error"));
    assert_eq!(
        marks(&w),
        ["project-tool---describe", "project-input", "global"]
    );
    assert!(server.requests()[1].text().contains("\"evil\""));
}

/// `pi prompt system` describes program tools by running them: not an untrusted project's.
#[test]
fn prompt_system_does_not_run_untrusted_tools() {
    let w = World::new();
    project(&w, "proj");
    let o = w
        .pi()
        .args(["prompt", "system", "--json"])
        .output()
        .unwrap();
    status(&o, 0);
    assert!(marks(&w).is_empty());
    assert_eq!(refusals(&o).len(), 1);
    w.ok(&["trust"]);
    let p: Value = serde_json::from_str(&w.ok(&["prompt", "system", "--json"])).unwrap();
    assert!(p["tools"].as_array().unwrap().contains(&json!("evil")));
    assert_eq!(marks(&w), ["project-tool---describe"]);
}

/// The project's `shellCommandPrefix` runs before every `bash` call of the model: code, so
/// it applies only once the project is trusted.
#[test]
fn an_untrusted_projects_shell_prefix_is_not_used() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "proj/.pi/settings.json",
        json!({"shellCommandPrefix": format!("echo prefix >> '{}'", w.path("marks.log").display())})
            .to_string(),
    );
    let call = || {
        server.push(tool_calls(&[("c1", "bash", r#"{"command":"echo hi"}"#)]));
        server.push(Reply::openai_text(&["done"]));
        let o = run(&w, &["-p", "x"]);
        status(&o, 0);
        o
    };
    let o = call();
    assert!(marks(&w).is_empty(), "{:?}", marks(&w));
    assert_eq!(refusals(&o).len(), 1, "{}", err(&o));
    w.ok(&["trust"]);
    call();
    assert_eq!(marks(&w), ["prefix"]);
}
