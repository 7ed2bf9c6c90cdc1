//! `pi run` details the other run tests leave out: context files and `--no-context-files`,
//! exit statuses in both views, where the key and headers of a request come from, and a
//! retry wait cut short by Ctrl-C.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::model_server::{ModelServer, Reply};
use crate::run_support::*;

fn system_prompt(server: &ModelServer, k: usize) -> String {
    server.requests()[k].json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn context_files_are_sent_unless_left_out() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "proj/AGENTS.md",
        "Always run `make check` before answering.\n",
    );
    w.write("agent/AGENTS.md", "The user's name is Ada.\n");
    server.push(Reply::openai_text(&["ok"]));
    server.push(Reply::openai_text(&["ok"]));
    status(&run(&w, &["--no-session", "-p", "hi"]), 0);
    status(
        &run(&w, &["--no-session", "--no-context-files", "-p", "hi"]),
        0,
    );
    let with = system_prompt(&server, 0);
    let without = system_prompt(&server, 1);
    for text in [
        "Always run `make check` before answering.",
        "The user's name is Ada.",
    ] {
        assert!(with.contains(text), "{with}");
        assert!(!without.contains(text), "{without}");
    }
}

/// The exit status is the same with and without `--json`: 2 for bad input (nothing
/// written), 1 for a failed run, 130 for Ctrl-C.
#[test]
fn exit_statuses_are_the_same_in_both_views() {
    let server = ModelServer::start();
    let w = world(&server);
    for view in [&[][..], &["--json"][..]] {
        let mut args = view.to_vec();
        args.extend(["--thinking", "huge", "-p", "x"]);
        status(&run(&w, &args), 2);
        let mut args = view.to_vec();
        args.extend(["-p", "/skill:missing"]);
        status(&run(&w, &args), 2);
        let mut args = view.to_vec();
        args.extend(["--rpc", "-p", "x"]);
        status(&run(&w, &args), 2);
    }
    assert!(!w.agent().join("sessions").exists());
    assert!(server.requests().is_empty());
    for view in [&[][..], &["--json"][..]] {
        server.push(Reply::status(400, r#"{"error":{"message":"bad request"}}"#));
        let mut args = view.to_vec();
        args.extend(["--no-session", "-p", "x"]);
        let o = run(&w, &args);
        status(&o, 1);
        assert!(err(&o).contains("400 bad request"), "{}", err(&o));
    }
    // Ctrl-C in the text view (the JSON view is tested in run_signals).
    server.push(
        Reply::openai_text(&["Some ", "words ", "and the rest"])
            .stall_at("and the rest", Duration::from_secs(20)),
    );
    let (child, mut out) = spawn(&w, &["-p", "talk"]);
    let mut buf = [0u8; 5];
    std::io::Read::read_exact(&mut out, &mut buf).unwrap();
    assert_eq!(&buf, b"Some ");
    signal(&child, libc::SIGINT);
    let (code, rest) = finish_text(child, out);
    assert_eq!(code, 130, "{rest}");
    let f = session_file(&w);
    let ms = messages(&f);
    assert_eq!(ms[1]["stopReason"], "aborted");
    assert_eq!(text(&ms[1]), "Some words ");
    check(&w, &f);
}

/// Keys from `auth.json` and from the provider's environment variable are sent; headers of
/// `models.json` (literal, `$ENV` and `!command` values) arrive on the request.
#[test]
fn keys_and_headers_reach_the_request() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "agent/models.json",
        json!({"providers": {
            "keyed": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "sk-from-models-json",
                      "headers": {"x-team": "blue", "x-from-env": "TEAM_TOKEN", "x-from-cmd": "!echo computed"},
                      "models": [{"id": "k1"}]},
            "openai": {"baseUrl": format!("{}/v1", server.url())}
        }})
        .to_string(),
    );
    w.write(
        "agent/auth.json",
        json!({"keyed": {"type": "api_key", "key": "sk-from-auth-json"}}).to_string(),
    );
    server.push(Reply::openai_text(&["one"]));
    let o = w
        .pi()
        .env("TEAM_TOKEN", "tok-42")
        .args(["run", "--no-session", "--model", "keyed/k1", "-p", "x"])
        .output()
        .unwrap();
    status(&o, 0);
    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), Some("Bearer sk-from-auth-json"));
    assert_eq!(r.header("x-team"), Some("blue"));
    assert_eq!(r.header("x-from-env"), Some("tok-42"));
    assert_eq!(r.header("x-from-cmd"), Some("computed"));
    // The built-in openai provider (the Responses API), its key from OPENAI_API_KEY.
    server.push(Reply::responses_text(&["two"]));
    let o = w
        .pi()
        .env("OPENAI_API_KEY", "sk-from-env-var")
        .args(["run", "--no-session", "--model", "openai/gpt-4o", "-p", "x"])
        .output()
        .unwrap();
    status(&o, 0);
    let r = &server.requests()[1];
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.header("authorization"), Some("Bearer sk-from-env-var"));
    assert_eq!(r.json()["model"], "gpt-4o");
    assert!(!out(&o).contains("sk-from"));
    assert!(!err(&o).contains("sk-from"));
}

/// Ctrl-C during the wait before an automatic retry ends it: `auto_retry_end` with
/// `Retry cancelled`, exit 130, and the failed answer stays recorded.
#[test]
fn ctrl_c_cancels_a_pending_retry() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"retry": {"baseDelayMs": 30000}}));
    server.push(Reply::status(
        503,
        r#"{"error":{"message":"service unavailable"}}"#,
    ));
    let (child, mut out) = spawn(&w, &["--json", "-p", "x"]);
    let seen = read_until(&mut out, |e| e["type"] == "auto_retry_start");
    assert_eq!(seen.last().unwrap()["delayMs"], 30000);
    let t = Instant::now();
    signal(&child, libc::SIGINT);
    let (code, rest) = finish(child, out);
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(code, 130);
    let end = rest
        .iter()
        .find(|e| e["type"] == "auto_retry_end")
        .expect("auto_retry_end");
    assert_eq!(end["success"], false);
    assert_eq!(end["finalError"], "Retry cancelled");
    assert_eq!(end["attempt"], 1);
    assert_eq!(server.requests().len(), 1);
    let f = session_file(&w);
    let ms = messages(&f);
    assert_eq!(ms[1]["stopReason"], "error");
    check(&w, &f);
}

/// The tools a request declares.
fn tool_names(server: &ModelServer, k: usize) -> Vec<String> {
    server.requests()[k].json()["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A session whose system messages record its tool loadout (the reference 1.6 writes them)
/// continues with those tools, as 1.6 restores them; tools named on the command line win.
#[test]
fn a_session_continues_with_the_tools_it_records() {
    let server = ModelServer::start();
    let w = world(&server);
    let f = w.new_session();
    let f = f.to_str().unwrap();
    let decl = |n: &str| json!({"name": n, "description": n, "parameters": {"type": "object"}});
    let system = [
        json!({"role": "system", "content": "", "sections": {"preamble": "Hi."},
               "toolsAdded": [decl("read"), decl("bash"), decl("grep"), decl("nosuch")]}),
        json!({"role": "system", "content": "", "toolsRemoved": [{"name": "bash"}]}),
    ];
    let body: Vec<String> = system.iter().map(|m| m.to_string()).collect();
    w.ok_in(&["session", "append", f], &body.join("\n"));
    server.push(answer_with_usage("ok", 100));
    status(&run(&w, &[f, "-p", "go"]), 0);
    // read and grep, in their order; bash was removed; nosuch is not a tool pi has.
    assert_eq!(tool_names(&server, 0), ["read", "grep"]);
    let prompt = system_prompt(&server, 0);
    assert!(prompt.contains("grep"), "{prompt}");
    server.push(answer_with_usage("ok", 100));
    status(&run(&w, &[f, "-p", "again", "--tools", "bash"]), 0);
    assert_eq!(tool_names(&server, 1), ["bash"]);
    // A session without system messages keeps the default tools.
    let g = w.new_session();
    w.ok_in(
        &["session", "append", g.to_str().unwrap()],
        &crate::common::user("q"),
    );
    server.push(answer_with_usage("ok", 100));
    status(&run(&w, &[g.to_str().unwrap(), "-p", "go"]), 0);
    assert_eq!(tool_names(&server, 2), ["read", "bash", "edit", "write"]);
}
