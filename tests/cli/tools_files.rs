//! read, edit, write, grep, find and ls beyond the recorded cases: the per-file order of
//! edits and writes, cancellation, large and hostile inputs (binary files, huge files,
//! invalid UTF-8, symlink loops), and the API the agent loop uses.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use pi_tools::{self as tools, CancelToken, Content, ToolName, ToolResult};

use crate::tools_support::{Tree, numbered, runtime, text};

#[test]
fn edits_to_one_file_run_in_the_order_they_were_issued() {
    let t = Tree::new();
    t.file("f.txt", "a\n");
    let ctx = Arc::new(t.ctx());
    let first = tools::prepare(
        "edit",
        &json!({"path": "f.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
    )
    .unwrap()
    .execute(Arc::clone(&ctx), CancelToken::new(), None);
    let second = tools::prepare(
        "edit",
        &json!({"path": "f.txt", "edits": [{"oldText": "b", "newText": "c"}]}),
    )
    .unwrap()
    .execute(Arc::clone(&ctx), CancelToken::new(), None);
    let write = tools::prepare("write", &json!({"path": "f.txt", "content": "c\nd\n"}))
        .unwrap()
        .execute(Arc::clone(&ctx), CancelToken::new(), None);
    // Polled in the opposite order: the queue follows the order of `execute`.
    let (w, s, f) = runtime().block_on(async { tokio::join!(write, second, first) });
    for r in [&f, &s, &w] {
        assert!(!r.is_error, "{}", r.text());
    }
    assert_eq!(t.read("f.txt"), "c\nd\n");
}

#[test]
fn cancelled_calls_report_operation_aborted() {
    let t = Tree::new();
    t.file("f.txt", "x");
    for (tool, args) in [
        ("read", json!({"path": "f.txt"})),
        ("write", json!({"path": "g.txt", "content": "x"})),
        (
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "x", "newText": "y"}]}),
        ),
        ("grep", json!({"pattern": "x"})),
        ("find", json!({"pattern": "*"})),
        ("ls", json!({})),
    ] {
        let cancel = CancelToken::new();
        cancel.cancel();
        let r = runtime().block_on(tools::execute(Arc::new(t.ctx()), tool, &args, cancel, None));
        assert!(r.is_error, "{tool}");
        assert_eq!(r.text(), "Operation aborted", "{tool}");
    }
    assert!(!t.proj().join("g.txt").exists());
    assert_eq!(t.read("f.txt"), "x");
}

#[test]
fn large_file_is_read_in_bounded_time_and_counted_whole() {
    let t = Tree::new();
    let body = numbered(400_000);
    t.file("big.txt", &body);
    let start = Instant::now();
    let r = t.call("read", json!({"path": "big.txt", "offset": 399_990}));
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(text(&r), &body[body.find("Line 399990").unwrap()..]);
    let r = t.call("read", json!({"path": "big.txt"}));
    assert!(text(&r).ends_with("[Showing lines 1-2000 of 400000. Use offset=2001 to continue.]"));
}

#[test]
fn binary_and_invalid_text_do_not_break_the_tools() {
    let t = Tree::new();
    let bytes: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
    t.file("blob.bin", &bytes);
    t.file("bad.txt", b"ok\n\xC3\x28 broken \xF0\x9F\n");
    let r = t.call("read", json!({"path": "blob.bin"}));
    assert!(!r.is_error);
    let r = t.call("read", json!({"path": "bad.txt"}));
    assert_eq!(text(&r), "ok\n\u{FFFD}( broken \u{FFFD}\n");
    // grep skips binary files found by walking, and names lines of text files.
    let r = t.call("grep", json!({"pattern": "broken"}));
    assert_eq!(text(&r), "bad.txt:2: \u{FFFD}( broken \u{FFFD}");
    // edit refuses to rewrite text that is not UTF-8.
    let r = t.call(
        "edit",
        json!({"path": "bad.txt", "edits": [{"oldText": "ok", "newText": "fine"}]}),
    );
    assert!(r.is_error);
    assert_eq!(
        std::fs::read(t.proj().join("bad.txt")).unwrap(),
        b"ok\n\xC3\x28 broken \xF0\x9F\n"
    );
}

#[test]
fn symlink_loops_are_not_followed() {
    let t = Tree::new();
    t.file("dir/a.txt", "needle\n");
    std::os::unix::fs::symlink(".", t.proj().join("dir/loop")).unwrap();
    std::os::unix::fs::symlink("self", t.proj().join("self")).unwrap();
    let r = t.call("grep", json!({"pattern": "needle"}));
    assert_eq!(text(&r), "dir/a.txt:1: needle");
    let r = t.call("find", json!({"pattern": "*"}));
    let listing = text(&r);
    let mut got: Vec<&str> = listing.lines().collect();
    got.sort_unstable();
    assert_eq!(got, vec!["dir/", "dir/a.txt", "dir/loop", "self"]);
    // ls leaves out entries it cannot stat (the self-referencing link).
    let r = t.call("ls", json!({}));
    assert_eq!(text(&r), "dir/");
    let r = t.call("read", json!({"path": "self"}));
    assert!(r.is_error && r.text().starts_with("ELOOP"), "{}", r.text());
}

#[test]
fn grep_results_come_in_path_order() {
    let t = Tree::new();
    for name in ["b/z.txt", "a.txt", "b/a.txt", "c.txt", "B.txt"] {
        t.file(name, "hit\n");
    }
    let r = t.call("grep", json!({"pattern": "hit"}));
    assert_eq!(
        text(&r),
        "B.txt:1: hit\na.txt:1: hit\nb/a.txt:1: hit\nb/z.txt:1: hit\nc.txt:1: hit"
    );
}

#[test]
fn unknown_tools_and_bad_arguments_give_immediate_results() {
    let r = tools::prepare("nope", &json!({})).unwrap_err();
    assert_eq!(r.text(), "Tool nope not found");
    assert!(r.is_error);
    let r = tools::prepare("ls", &json!({"limit": "many"})).unwrap_err();
    assert!(
        r.text()
            .starts_with("Validation failed for tool \"ls\":\n  - limit: must be number")
    );
    let p = tools::prepare("ls", &json!({"limit": "7"})).unwrap();
    assert_eq!(p.args, json!({"limit": 7}));
    assert_eq!(p.tool, ToolName::Ls);
}

#[test]
fn legacy_edit_arguments_are_converted_before_validation() {
    let a = tools::prepare_arguments(
        ToolName::Edit,
        &json!({"path": "f", "oldText": "a", "newText": "b", "edits": "[{\"oldText\":\"c\",\"newText\":\"d\"}]"}),
    );
    assert_eq!(
        a,
        json!({"path": "f", "edits": [{"oldText": "c", "newText": "d"}, {"oldText": "a", "newText": "b"}]})
    );
    // Other tools' arguments are left alone.
    let raw = json!({"path": "f", "oldText": "a"});
    assert_eq!(tools::prepare_arguments(ToolName::Read, &raw), raw);
}

#[test]
fn results_become_tool_result_messages() {
    let ok = ToolResult {
        content: vec![
            Content::text("hi"),
            Content::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
            },
        ],
        details: None,
        is_error: false,
    };
    assert_eq!(
        ok.to_message("call_1", "read", 1_700_000_000_000),
        json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
               "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
               "isError": false, "timestamp": 1_700_000_000_000_i64})
    );
    let e = ToolResult::error("boom");
    assert_eq!(
        e.to_json(),
        json!({"content": [{"type": "text", "text": "boom"}], "details": {}})
    );
}

#[test]
fn every_tool_is_declared_and_listed_in_the_system_prompt() {
    let names: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
    assert_eq!(
        names,
        ["read", "bash", "edit", "write", "grep", "find", "ls"]
    );
    assert_eq!(
        ToolName::DEFAULT.map(ToolName::as_str),
        ["read", "bash", "edit", "write"]
    );
    for t in ToolName::ALL {
        let d = t.definition();
        assert_eq!(d.name, t.as_str());
        assert!(d.description.len() > 40, "{t}");
        assert_eq!(d.parameters["type"], json!("object"));
        let p = t.prompt();
        assert_eq!(p.name, t.as_str());
        assert!(p.snippet.is_some_and(|s| !s.is_empty()), "{t}");
        assert_eq!(t.as_str().parse::<ToolName>(), Ok(t));
    }
    assert_eq!(ToolName::Edit.prompt().guidelines.len(), 4);
}

#[test]
fn endless_files_do_not_hang_or_exhaust_memory() {
    let t = Tree::new();
    // read: cancellation stops it.
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        c2.cancel();
    });
    let start = Instant::now();
    let r = runtime().block_on(tools::execute(
        Arc::new(t.ctx()),
        "read",
        &json!({"path": "/dev/zero"}),
        cancel,
        None,
    ));
    stopper.join().unwrap();
    assert_eq!(r.text(), "Operation aborted");
    assert!(start.elapsed() < Duration::from_secs(5));
    // edit: only regular files.
    let r = t.call(
        "edit",
        json!({"path": "/dev/null", "edits": [{"oldText": "a", "newText": "b"}]}),
    );
    assert_eq!(
        r.text(),
        "Could not edit file: /dev/null. It is not a regular file."
    );
    // grep: a line without end stops at the memory limit.
    let r = t.call("grep", json!({"pattern": "x", "path": "/dev/zero"}));
    assert_eq!(r.text(), "No matches found");
}

#[test]
fn tool_selection_follows_the_flags() {
    use pi_tools::select_tools;
    let names = |v: Vec<ToolName>| v.into_iter().map(ToolName::as_str).collect::<Vec<_>>();
    assert_eq!(
        names(select_tools(None, false, false)),
        ["read", "bash", "edit", "write"]
    );
    assert_eq!(names(select_tools(None, true, false)), Vec::<&str>::new());
    assert_eq!(names(select_tools(None, false, true)), Vec::<&str>::new());
    assert_eq!(
        names(select_tools(Some(" ls, ,grep,nope,ls,read "), true, false)),
        ["ls", "grep", "read"]
    );
}
