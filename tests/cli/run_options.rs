//! `pi run` details the other run tests leave out: context files and `--no-context-files`,
//! exit statuses in both views, where the key and headers of a request come from, and a
//! retry wait cut short by Ctrl-C.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

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
                      "headers": {"x-team": "blue", "x-from-env": "$TEAM_TOKEN", "x-literal": "TEAM_TOKEN", "x-from-cmd": "!echo computed"},
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
    // A bare name is literal text (the reference 1.6); only `$NAME` reads the environment.
    assert_eq!(r.header("x-literal"), Some("TEAM_TOKEN"));
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

/// `apiKey` in models.json as the reference 1.6 documents it: a literal, `$NAME` /
/// `${NAME}` interpolation, or a `!command`'s output, each arriving as the bearer key; the
/// models.json key comes before the provider's environment variable; a variable that is
/// not set is an error naming it, and no key appears in any output.
#[test]
fn api_key_forms_of_models_json() {
    let server = ModelServer::start();
    let w = world(&server);
    let base = format!("{}/v1", server.url());
    w.write(
        "agent/models.json",
        json!({"providers": {
            "lit": {"baseUrl": base, "api": "openai-completions", "apiKey": "sk-literal-1234", "models": [{"id": "m"}]},
            "env": {"baseUrl": base, "api": "openai-completions", "apiKey": "$ACME_SECRET", "models": [{"id": "m"}]},
            "tmpl": {"baseUrl": base, "api": "openai-completions", "apiKey": "sk-${ACME_SECRET}-$$x", "models": [{"id": "m"}]},
            "cmd": {"baseUrl": base, "api": "openai-completions", "apiKey": "!printf 'sk-%s' from-command", "models": [{"id": "m"}]},
            "unset": {"baseUrl": base, "api": "openai-completions", "apiKey": "$ACME_UNSET_VAR", "models": [{"id": "m"}]},
            "openai": {"baseUrl": base, "apiKey": "$ACME_SECRET"}
        }})
        .to_string(),
    );
    let expected = [
        ("lit/m", "Bearer sk-literal-1234"),
        ("env/m", "Bearer sk-env-secret-99"),
        ("tmpl/m", "Bearer sk-sk-env-secret-99-$x"),
        ("cmd/m", "Bearer sk-from-command"),
    ];
    for (k, (model, auth)) in expected.iter().enumerate() {
        server.push(Reply::openai_text(&["ok"]));
        let o = w
            .pi()
            .env("ACME_SECRET", "sk-env-secret-99")
            .env_remove("ACME_UNSET_VAR")
            .args(["run", "--no-session", "--model", model, "-p", "x"])
            .output()
            .unwrap();
        status(&o, 0);
        assert_eq!(server.requests()[k].header("authorization"), Some(*auth));
        for secret in ["sk-literal", "sk-env-secret", "sk-from-command"] {
            assert!(!out(&o).contains(secret) && !err(&o).contains(secret));
        }
    }
    // models.json's key wins over OPENAI_API_KEY for the built-in provider.
    server.push(Reply::responses_text(&["ok"]));
    let o = w
        .pi()
        .env("ACME_SECRET", "sk-env-secret-99")
        .env("OPENAI_API_KEY", "sk-openai-env-77")
        .args(["run", "--no-session", "--model", "openai/gpt-4o", "-p", "x"])
        .output()
        .unwrap();
    status(&o, 0);
    assert_eq!(
        server.requests()[4].header("authorization"),
        Some("Bearer sk-env-secret-99")
    );
    // A variable that is not set: an error naming it (not the key), nothing sent.
    let o = w
        .pi()
        .env_remove("ACME_UNSET_VAR")
        .args(["run", "--no-session", "--model", "unset/m", "-p", "x"])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(
        err(&o).contains("environment variable ACME_UNSET_VAR is not set"),
        "{}",
        err(&o)
    );
    assert_eq!(server.requests().len(), 5);
    // `pi models` counts a key only when its variables are set, and shows no key.
    let o = w
        .pi()
        .env("ACME_SECRET", "sk-env-secret-99")
        .env_remove("ACME_UNSET_VAR")
        .args(["models", "--all", "--json"])
        .output()
        .unwrap();
    status(&o, 0);
    let listed = out(&o);
    assert!(!listed.contains("sk-env-secret") && !listed.contains("sk-literal"));
    let key_of = |id: &str| {
        listed
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|m| m["provider"] == id)
            .map(|m| m["key"].clone())
            .unwrap()
    };
    assert_eq!(key_of("env"), "models.json");
    assert_eq!(key_of("unset"), serde_json::Value::Null);
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

/// A session continued after a compaction sends what 1.6 sends for it: the compaction's
/// checkpoint replayed (its prompt text kept, its sections brought to pi's, a section pi does
/// not have removed) as the one leading prompt, and the tools the branch declares; the run
/// records only what changed.
#[test]
fn a_compacted_session_continues_from_its_checkpoint() {
    let server = ModelServer::start();
    let w = world(&server);
    let f = w.new_session();
    let fs = f.to_str().unwrap();
    let decl = |n: &str| json!({"name": n, "description": n, "parameters": {"type": "object"}});
    let before = [
        json!({"role": "system", "content": "", "sections": {"preamble": "Old."},
               "toolsAdded": [decl("read"), decl("bash")]}),
        json!({"role": "user", "content": "first question"}),
    ];
    let body: Vec<String> = before.iter().map(|m| m.to_string()).collect();
    w.ok_in(&["session", "append", fs], &body.join("\n"));
    let first = lines(&f).last().unwrap()["id"].as_str().unwrap().to_owned();
    let compaction = json!({"type": "compaction", "summary": "Talked about X.",
        "firstKeptEntryId": first, "tokensBefore": 1000,
        "systemMessage": {"role": "system", "content": "Answer in French.",
            "sections": {"preamble": "Old.", "mcp": "<mcp>\nservers\n</mcp>"},
            "toolsAdded": [decl("read"), decl("grep")], "timestamp": 1}});
    w.ok_in(&["session", "append", fs], &compaction.to_string());
    server.push(answer_with_usage("ok", 100));
    status(&run(&w, &[fs, "-p", "go on"]), 0);
    let prompt = system_prompt(&server, 0);
    assert!(
        prompt.starts_with("Answer in French.\n\nYou are a coding assistant"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("<mcp>") && !prompt.contains("Old."),
        "{prompt}"
    );
    // The loadout is the one the branch's system messages declare (read, bash), as 1.6
    // restores it; the checkpoint (read, grep) is what the request's declarations replace.
    assert!(
        prompt.contains("<tools>\n- read: ") && prompt.contains("\n- bash: "),
        "{prompt}"
    );
    assert!(!prompt.contains("\n- grep: "), "{prompt}");
    assert_eq!(tool_names(&server, 0), ["read", "bash"]);
    // Only one system message is sent: the replayed one, first.
    let sent = server.requests()[0].json();
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.iter().filter(|r| **r == "system").count(), 1);
    assert_eq!(roles[0], "system");
    // The run recorded the change: pi's sections, the section it lacks removed.
    let recorded = system_messages(&f);
    let patch = recorded.last().unwrap();
    assert_eq!(patch["sections"]["mcp"], Value::Null);
    assert!(
        patch["sections"]["preamble"]
            .as_str()
            .unwrap()
            .starts_with("You are")
    );
    assert_eq!(patch["content"], "");
    let removed: Vec<&str> = patch["toolsRemoved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(removed, ["read", "grep"]);
    // The branch now declares bash, then read (read was declared again after its first
    // declaration was removed, as 1.6's replay orders them), so the next run lists them in
    // that order; after that, nothing changes and nothing more is recorded.
    server.push(answer_with_usage("ok", 100));
    status(&run(&w, &[fs, "-p", "more"]), 0);
    assert_eq!(tool_names(&server, 1), ["bash", "read"]);
    let settled = system_messages(&f).len();
    server.push(answer_with_usage("ok", 100));
    status(&run(&w, &[fs, "-p", "and more"]), 0);
    assert_eq!(system_messages(&f).len(), settled);
    assert_eq!(system_prompt(&server, 2), system_prompt(&server, 1));
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
    // The run recorded what changed: pi's sections and declarations replace the session's
    // (the names stay), and the tool pi does not have is removed.
    let recorded = system_messages(Path::new(f));
    assert_eq!(recorded.len(), 3);
    assert_eq!(
        recorded[2]["toolsRemoved"],
        json!([{"name": "read"}, {"name": "grep"}, {"name": "nosuch"}])
    );
    let added: Vec<&str> = recorded[2]["toolsAdded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(added, ["read", "grep"]);
    assert!(!prompt.contains("Hi."), "the preamble is pi's: {prompt}");
    server.push(answer_with_usage("ok", 100));
    status(&run(&w, &[f, "-p", "again", "--tools", "bash"]), 0);
    assert_eq!(tool_names(&server, 1), ["bash"]);
    // +name/-name entries adjust the restored loadout.
    server.push(answer_with_usage("ok", 100));
    status(&run(&w, &[f, "-p", "more", "--tools", "+ls,-read"]), 0);
    // The second run recorded its loadout (bash only), so that is what the third restores.
    assert_eq!(tool_names(&server, 2), ["bash", "ls"]);
    // A session without system messages keeps the default tools.
    let g = w.new_session();
    w.ok_in(
        &["session", "append", g.to_str().unwrap()],
        &crate::common::user("q"),
    );
    server.push(answer_with_usage("ok", 100));
    status(&run(&w, &[g.to_str().unwrap(), "-p", "go"]), 0);
    assert_eq!(tool_names(&server, 3), ["read", "bash", "edit", "write"]);
}

/// `defaultTools` (the reference 1.6): names replace the default tools, `+name`/`-name`
/// change them, `[]` is none; a project list of only `+`/`-` entries changes the user's;
/// `--tools` names override it, `--tools` `+`/`-` entries change it, and both kinds mixed
/// are a usage error.
#[test]
fn default_tools_setting_and_tools_modifiers() {
    let server = ModelServer::start();
    let w = world(&server);
    let tools_of =
        |w: &crate::common::World, extra: &[&str], user: Value, project: Option<Value>| {
            settings(w, user);
            match project {
                Some(p) => {
                    w.write("proj/.pi/settings.json", p.to_string());
                }
                None => {
                    let _ = std::fs::remove_file(w.path("proj/.pi/settings.json"));
                }
            }
            server.push(Reply::openai_text(&["ok"]));
            let mut args = vec!["--no-session"];
            args.extend_from_slice(extra);
            args.extend(["-p", "x"]);
            let o = run(w, &args);
            status(&o, 0);
            let body = server.requests().last().unwrap().json();
            let names: Vec<String> = body["tools"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            (names, err(&o))
        };
    let none = json!({});
    assert_eq!(
        tools_of(&w, &[], none.clone(), None).0,
        ["read", "bash", "edit", "write"]
    );
    let (names, warnings) = tools_of(
        &w,
        &[],
        json!({"defaultTools": ["+grep", "-bash", "+codemode"]}),
        None,
    );
    assert_eq!(names, ["read", "edit", "write", "grep"]);
    assert!(
        warnings.contains("settings.json: defaultTools: unknown tool 'codemode' ignored"),
        "{warnings}"
    );
    assert_eq!(
        tools_of(&w, &[], json!({"defaultTools": ["ls", "+find"]}), None).0,
        ["ls", "find"]
    );
    assert!(
        tools_of(&w, &[], json!({"defaultTools": []}), None)
            .0
            .is_empty()
    );
    let user = json!({"defaultTools": ["read", "bash"]});
    assert_eq!(
        tools_of(
            &w,
            &[],
            user.clone(),
            Some(json!({"defaultTools": ["+ls", "-bash"]}))
        )
        .0,
        ["read", "ls"]
    );
    assert_eq!(
        tools_of(
            &w,
            &[],
            user.clone(),
            Some(json!({"defaultTools": ["find"]}))
        )
        .0,
        ["find"]
    );
    assert_eq!(
        tools_of(&w, &["--tools", "+write,-read"], user.clone(), None).0,
        ["bash", "write"]
    );
    assert_eq!(
        tools_of(&w, &["--tools", "-bash"], user.clone(), None).0,
        ["read"]
    );
    assert_eq!(
        tools_of(&w, &["--tools", "grep"], user.clone(), None).0,
        ["grep"]
    );
    assert_eq!(
        tools_of(
            &w,
            &["--no-builtin-tools", "--tools", "+ls"],
            user.clone(),
            None
        )
        .0,
        ["ls"]
    );
    assert!(
        tools_of(&w, &["--no-builtin-tools"], user.clone(), None)
            .0
            .is_empty()
    );
    // Names and +/- entries mixed, or a pattern in a +/- entry: a usage error, nothing sent.
    let before = server.requests().len();
    for list in ["read,+grep", "+gr*"] {
        let o = run(&w, &["--no-session", "--tools", list, "-p", "x"]);
        status(&o, 2);
        assert!(err(&o).contains("--tools: "), "{}", err(&o));
    }
    assert_eq!(server.requests().len(), before);
}

/// `samplingParams` and `samplingParamsByThinkingLevel` of models.json (the reference 1.6)
/// are merged into the body of OpenAI-compatible requests, the level's over the model's and
/// both over pi's own fields; a `modelOverrides` entry gives them to a built-in model.
#[test]
fn sampling_params_reach_openai_compatible_requests() {
    let server = ModelServer::start();
    let w = world(&server);
    let base = format!("{}/v1", server.url());
    w.write(
        "agent/models.json",
        json!({"providers": {
            "local": {"baseUrl": base, "api": "openai-completions", "apiKey": "k",
                      "models": [{"id": "qwen", "reasoning": true,
                                  "samplingParams": {"top_k": 20, "temperature": 0.6, "min_p": 0},
                                  "samplingParamsByThinkingLevel": {"high": {"top_k": 5, "temperature": 1}}},
                                 {"id": "plain"}]},
            "openai": {"baseUrl": base, "apiKey": "k",
                       "modelOverrides": {"gpt-4o": {"samplingParams": {"top_p": 0.5}}}}
        }})
        .to_string(),
    );
    let body = |k: usize| server.requests()[k].json();
    for level in ["off", "high"] {
        server.push(Reply::openai_text(&["ok"]));
        let o = run(
            &w,
            &[
                "--no-session",
                "--model",
                "local/qwen",
                "--thinking",
                level,
                "-p",
                "x",
            ],
        );
        status(&o, 0);
    }
    assert_eq!(
        (
            body(0)["top_k"].clone(),
            body(0)["temperature"].clone(),
            body(0)["min_p"].clone()
        ),
        (json!(20), json!(0.6), json!(0))
    );
    assert_eq!(
        (body(1)["top_k"].clone(), body(1)["temperature"].clone()),
        (json!(5), json!(1))
    );
    assert_eq!(body(1)["model"], "qwen");
    server.push(Reply::responses_text(&["ok"]));
    let o = run(&w, &["--no-session", "--model", "openai/gpt-4o", "-p", "x"]);
    status(&o, 0);
    assert_eq!(server.requests()[2].path, "/v1/responses");
    assert_eq!(body(2)["top_p"], 0.5);
    // Without them, nothing is added.
    server.push(Reply::openai_text(&["ok"]));
    status(
        &run(&w, &["--no-session", "--model", "local/plain", "-p", "x"]),
        0,
    );
    assert!(body(3).get("top_k").is_none() && body(3).get("top_p").is_none());
}
