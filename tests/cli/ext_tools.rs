//! Program tools: executables that describe themselves with `--describe` and take a call's
//! arguments as JSON on stdin. They are offered to the model and listed in the system prompt
//! like built-in tools, take part in `--tools` allowlists, and are found in `tools/`
//! folders of the agent and project directories.

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::ext_hooks::script;
use crate::run_support::*;

/// A to-do list tool: `add` appends an item to `todo.txt` in the working directory and
/// prints the list.
fn todo_tool(w: &World, rel: &str) -> std::path::PathBuf {
    script(
        w,
        rel,
        r#"if [ "$1" = --describe ]; then
  cat <<'EOF'
{"name": "todo", "description": "Add an item to the project's to-do list",
 "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]},
 "promptSnippet": "Keep the project's to-do list",
 "promptGuidelines": ["Add follow-up work to the to-do list with todo."]}
EOF
  exit 0
fi
input=$(cat)
item=${input#*\"item\":\"}
item=${item%%\"*}
echo "$item" >> todo.txt
echo "to-do list ($PI_TOOL_NAME):"
cat todo.txt"#,
    )
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_program_tool_is_offered_called_and_recorded() {
    let server = ModelServer::start();
    let w = world(&server);
    let tool = todo_tool(&w, "tools/todo.sh");
    server.push(tool_calls(&[(
        "t1",
        "todo",
        r#"{"item":"write the docs"}"#,
    )]));
    server.push(Reply::openai_text(&["Added."]));
    let o = run(
        &w,
        &[
            "--json",
            "--tool",
            tool.to_str().unwrap(),
            "-p",
            "remember the docs",
        ],
    );
    status(&o, 0);
    let req = server.requests()[0].json();
    assert_eq!(tool_names(&req), ["read", "bash", "edit", "write", "todo"]);
    let def = &req["tools"][4]["function"];
    assert_eq!(
        def["description"],
        "Add an item to the project's to-do list"
    );
    assert_eq!(def["parameters"]["required"], json!(["item"]));
    let system = req["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- todo: Keep the project's to-do list"),
        "{system}"
    );
    assert!(system.contains("Add follow-up work to the to-do list with todo."));
    // It ran in the session's directory with the arguments on stdin.
    assert_eq!(
        std::fs::read_to_string(w.path("proj/todo.txt")).unwrap(),
        "write the docs\n"
    );
    let f = session_file(&w);
    let r = &tool_results(&f)[0];
    assert_eq!(r["toolName"], "todo");
    assert_eq!(text(r), "to-do list (todo):\nwrite the docs\n");
    assert_eq!(r["isError"], false);
    let end = events(&o)
        .into_iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["toolName"], "todo");
    check(&w, &f);
}

#[test]
fn program_tools_take_part_in_allowlists() {
    let server = ModelServer::start();
    let w = world(&server);
    todo_tool(&w, "agent/tools/todo");
    for (args, want) in [
        (vec!["--tools", "todo,read"], vec!["todo", "read"]),
        (vec!["--no-builtin-tools"], vec!["todo"]),
        (vec!["--no-tools"], vec![]),
        (vec![], vec!["read", "bash", "edit", "write", "todo"]),
    ] {
        server.push(Reply::openai_text(&["ok"]));
        let n = server.requests().len();
        let mut all = args.clone();
        all.extend(["--no-session", "-p", "hi"]);
        let o = run(&w, &all);
        status(&o, 0);
        let req = server.requests()[n].json();
        assert_eq!(tool_names(&req), want, "{args:?}");
    }
    // A call of a tool left out is refused like any unknown tool.
    server.push(tool_calls(&[("t1", "todo", r#"{"item":"x"}"#)]));
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--tools", "read", "-p", "hi"]);
    status(&o, 0);
    assert_eq!(
        text(&tool_results(&session_file(&w))[0]),
        "Tool todo not found"
    );
    assert!(!w.path("proj/todo.txt").exists());
}

/// Folders: the project's tool of a name takes the place of the global one; `--tool` wins
/// over both; a folder tool that cannot describe itself is skipped with a warning, a
/// `--tool` one is an error.
#[test]
fn tool_folders_and_precedence() {
    let server = ModelServer::start();
    let w = world(&server);
    let describe = |desc: &str| {
        format!(
            r#"if [ "$1" = --describe ]; then echo '{{"name": "where", "description": "{desc}"}}'; exit 0; fi
cat > /dev/null; echo "{desc}""#
        )
    };
    script(&w, "agent/tools/where", &describe("global"));
    script(&w, "proj/.pi/tools/where", &describe("project"));
    script(&w, "proj/.pi/tools/broken", "echo 'not a description'");
    w.write("proj/.pi/tools/README.md", "notes, not a tool");
    w.ok(&["trust"]);
    server.push(tool_calls(&[("t1", "where", "{}")]));
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["-p", "where am I"]);
    status(&o, 0);
    assert_eq!(text(&tool_results(&session_file(&w))[0]), "project\n");
    insta::assert_snapshot!(w.redact(&err(&o)), @"
    pi: warning: ignoring [PROJ]/.pi/tools/README.md: not an executable file (chmod +x it to make it a tool)
    pi: warning: ignoring tool [PROJ]/.pi/tools/broken: `--describe` did not print a JSON object: expected ident at line 1 column 2
    ");

    let explicit = script(&w, "elsewhere/where", &describe("explicit"));
    server.push(tool_calls(&[("t1", "where", "{}")]));
    server.push(Reply::openai_text(&["ok"]));
    let o = run(
        &w,
        &[
            "--no-session",
            "--tool",
            explicit.to_str().unwrap(),
            "-p",
            "x",
        ],
    );
    status(&o, 0);
    let last = server.requests().last().unwrap().text();
    assert!(last.contains("explicit"), "{last}");

    let broken = w.path("proj/.pi/tools/broken");
    let shown = w.snaps(&[
        &["run", "--tool", broken.to_str().unwrap(), "-p", "x"],
        &["run", "--tool", "no/such/tool", "-p", "x"],
    ]);
    insta::assert_snapshot!(shown, @"
    $ pi run --tool [PROJ]/.pi/tools/broken -p x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: --tool [PROJ]/.pi/tools/broken: `--describe` did not print a JSON object: expected ident at line 1 column 2

    $ pi run --tool no/such/tool -p x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: --tool [PROJ]/no/such/tool: not an executable file
    ");
}

/// Arguments are checked against the tool's schema before it runs; a failing program
/// gives an error result with its stderr and status; a JSON answer sets content, details
/// and the error flag.
#[test]
fn validation_failures_and_json_results() {
    let server = ModelServer::start();
    let w = world(&server);
    let ran = w.path("ran.log");
    let tool = script(
        &w,
        "tools/calc",
        &format!(
            r#"if [ "$1" = --describe ]; then
  echo '{{"name":"calc","description":"Add two numbers","parameters":{{"type":"object","properties":{{"a":{{"type":"number"}},"b":{{"type":"number"}}}},"required":["a","b"]}}}}'
  exit 0
fi
input=$(cat)
echo "$input" >> {ran}
case "$input" in
  *'"a":0'*) echo 'division trouble' >&2; exit 3 ;;
esac
echo '{{"content":[{{"type":"text","text":"sum computed"}}],"details":{{"sum":5}}}}'"#,
            ran = ran.display()
        ),
    );
    server.push(tool_calls(&[
        ("t1", "calc", r#"{"a":2}"#),
        ("t2", "calc", r#"{"a":"2","b":3}"#),
        ("t3", "calc", r#"{"a":0,"b":1}"#),
    ]));
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--tool", tool.to_str().unwrap(), "-p", "add"]);
    status(&o, 0);
    let rs = tool_results(&session_file(&w));
    assert_eq!(rs[0]["isError"], true);
    assert!(
        text(&rs[0]).starts_with(
            "Validation failed for tool \"calc\":\n  - b: must have required properties b"
        ),
        "{}",
        text(&rs[0])
    );
    // "2" was converted to a number, as for built-in tools.
    assert_eq!(text(&rs[1]), "sum computed");
    assert_eq!(rs[1]["details"], json!({"sum": 5}));
    assert_eq!(rs[1]["isError"], false);
    assert_eq!(rs[2]["isError"], true);
    assert_eq!(text(&rs[2]), "division trouble\n\nTool exited with code 3");
    let calls = std::fs::read_to_string(&ran).unwrap();
    assert_eq!(calls.lines().count(), 2, "the invalid call ran: {calls}");
    assert!(calls.contains(r#"{"a":2,"b":3}"#), "{calls}");
}

#[test]
fn prompt_system_lists_program_tools() {
    let w = World::new();
    todo_tool(&w, "proj/.pi/tools/todo");
    w.ok(&["trust"]);
    let text = w.ok(&["prompt", "system"]);
    assert!(
        text.contains("- todo: Keep the project's to-do list"),
        "{text}"
    );
    let text = w.ok(&["prompt", "system", "--tools", "read"]);
    assert!(!text.contains("todo"));
}

/// SP9 (test-cases.md): a tool added from outside with a snippet and guidelines is listed,
/// active, and its guideline is in the system prompt, as the reference does for an
/// extension's tool.
#[test]
fn sp9_an_added_tool_is_listed_with_its_guidelines() {
    let server = ModelServer::start();
    let w = world(&server);
    script(
        &w,
        "agent/tools/dynamic_tool",
        r#"if [ "$1" = --describe ]; then
  echo '{"name":"dynamic_tool","description":"Dynamic test behaviour","promptSnippet":"Run dynamic test behavior","promptGuidelines":["Use dynamic_tool when the user asks for dynamic behavior tests."]}'
  exit 0
fi
cat > /dev/null; echo dynamic"#,
    );
    let text = w.ok(&["prompt", "system"]);
    assert!(
        text.contains("- dynamic_tool: Run dynamic test behavior"),
        "{text}"
    );
    assert!(text.contains("- Use dynamic_tool when the user asks for dynamic behavior tests."));
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--no-session", "-p", "x"]);
    status(&o, 0);
    let req = server.requests()[0].json();
    assert!(tool_names(&req).contains(&"dynamic_tool".to_owned()));
    assert_eq!(req["messages"][0]["content"].as_str().unwrap(), {
        // The run's system prompt is `pi prompt system`'s, date and all.
        text.trim_end_matches('\n')
    });
}
