//! The tool cases of the behaviour spec (test-cases.md, section TL), one test each, with the
//! expectations written there. (tools_goldens.rs replays the same calls against upstream's
//! recorded results; these check the spec's statements independently of the recording.)

use serde_json::json;

use pi_tools::path::{expand_path, resolve_read_path, resolve_to_cwd};
use pi_tools::{Content, ToolResult};

use crate::tools_support::{Tree, call, ctx_in, numbered, text};

fn ok(r: &ToolResult) -> String {
    assert!(!r.is_error, "unexpected error: {}", r.text());
    text(r)
}

fn err(r: &ToolResult) -> String {
    assert!(r.is_error, "expected an error, got: {}", r.text());
    assert_eq!(r.details, Some(json!({})));
    text(r)
}

// read ------------------------------------------------------------------------------------

#[test]
fn tl01_read_small_file() {
    let t = Tree::new();
    t.file("test.txt", "Hello, world!\nLine 2\nLine 3");
    let r = t.call("read", json!({"path": "test.txt"}));
    assert_eq!(ok(&r), "Hello, world!\nLine 2\nLine 3");
    assert!(!text(&r).contains("Use offset="));
    assert_eq!(r.details, None);
}

#[test]
fn tl02_read_missing_file() {
    let t = Tree::new();
    let msg = err(&t.call("read", json!({"path": "nope.txt"})));
    assert!(msg.contains("ENOENT"), "{msg}");
}

#[test]
fn tl03_read_line_limit() {
    let t = Tree::new();
    t.file("large.txt", numbered(2500));
    let r = t.call("read", json!({"path": "large.txt"}));
    let out = ok(&r);
    assert!(out.contains("Line 1\n") && out.contains("Line 2000"));
    assert!(!out.contains("Line 2001"));
    assert!(out.ends_with("[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"));
    let tr = &r.details.as_ref().unwrap()["truncation"];
    assert_eq!(tr["truncated"], json!(true));
    assert_eq!(tr["truncatedBy"], json!("lines"));
    assert_eq!(tr["totalLines"], json!(2500));
    assert_eq!(tr["outputLines"], json!(2000));
}

#[test]
fn tl04_read_byte_limit() {
    let t = Tree::new();
    let body: Vec<String> = (1..=500)
        .map(|i| format!("Line {i}: {}", "x".repeat(200)))
        .collect();
    t.file("large.txt", body.join("\n"));
    let out = ok(&t.call("read", json!({"path": "large.txt"})));
    let notice = out.rsplit("\n\n").next().unwrap();
    assert!(notice.starts_with("[Showing lines 1-"), "{notice}");
    assert!(
        notice.contains(" of 500 (50.0KB limit). Use offset="),
        "{notice}"
    );
}

#[test]
fn tl05_read_offset() {
    let t = Tree::new();
    t.file("f.txt", numbered(100));
    let out = ok(&t.call("read", json!({"path": "f.txt", "offset": 51})));
    assert!(out.starts_with("Line 51\n") && out.ends_with("Line 100"));
    assert!(!out.contains("Line 50\n"));
    assert!(!out.contains('['));
}

#[test]
fn tl06_read_limit() {
    let t = Tree::new();
    t.file("f.txt", numbered(100));
    let out = ok(&t.call("read", json!({"path": "f.txt", "limit": 10})));
    assert!(out.starts_with("Line 1\n") && out.contains("Line 10\n"));
    assert!(!out.contains("Line 11"));
    assert!(out.ends_with("[90 more lines in file. Use offset=11 to continue.]"));
}

#[test]
fn tl07_read_offset_and_limit() {
    let t = Tree::new();
    t.file("f.txt", numbered(100));
    let out = ok(&t.call("read", json!({"path": "f.txt", "offset": 41, "limit": 20})));
    assert!(out.starts_with("Line 41\n") && out.contains("Line 60\n"));
    assert!(!out.contains("Line 61") && !out.contains("Line 40"));
    assert!(out.ends_with("[40 more lines in file. Use offset=61 to continue.]"));
}

#[test]
fn tl08_read_offset_beyond_end() {
    let t = Tree::new();
    t.file("f.txt", "a\nb\nc");
    let msg = err(&t.call("read", json!({"path": "f.txt", "offset": 100})));
    assert_eq!(msg, "Offset 100 is beyond end of file (3 lines total)");
}

/// A 1×1 PNG.
pub const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

pub fn png_1x1() -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(PNG_1X1)
        .unwrap()
}

#[test]
fn tl09_read_image_by_content() {
    let t = Tree::new();
    t.file("image.txt", png_1x1());
    let r = t.call("read", json!({"path": "image.txt"}));
    assert!(!r.is_error);
    assert!(
        matches!(&r.content[0], Content::Text { text } if text.contains("Read image file [image/png]"))
    );
    match &r.content[1] {
        Content::Image { data, mime_type } => {
            assert_eq!(mime_type, "image/png");
            assert!(!data.is_empty());
        }
        other => panic!("not an image: {other:?}"),
    }
}

#[test]
fn tl10_read_png_name_with_text() {
    let t = Tree::new();
    t.file("not-an-image.png", "just text\n");
    let r = t.call("read", json!({"path": "not-an-image.png"}));
    assert_eq!(ok(&r), "just text\n");
    assert_eq!(r.content.len(), 1);
}

// write / edit ----------------------------------------------------------------------------

#[test]
fn tl11_write() {
    let t = Tree::new();
    let r = t.call(
        "write",
        json!({"path": "test.txt", "content": "Test content"}),
    );
    let out = ok(&r);
    assert!(out.contains("Successfully wrote") && out.contains("test.txt"));
    assert_eq!(r.details, None);
    assert_eq!(t.read("test.txt"), "Test content");
}

#[test]
fn tl12_write_nested() {
    let t = Tree::new();
    ok(&t.call("write", json!({"path": "a/b/c/test.txt", "content": "x"})));
    assert_eq!(t.read("a/b/c/test.txt"), "x");
}

fn edit1(t: &Tree, file: &str, old: &str, new: &str) -> ToolResult {
    t.call(
        "edit",
        json!({"path": file, "edits": [{"oldText": old, "newText": new}]}),
    )
}

#[test]
fn tl13_edit() {
    let t = Tree::new();
    t.file("f.txt", "Hello, world!");
    let r = edit1(&t, "f.txt", "world", "testing");
    assert!(ok(&r).contains("Successfully replaced"));
    let diff = r.details.as_ref().unwrap()["diff"].as_str().unwrap();
    assert!(diff.contains("testing"));
    assert_eq!(t.read("f.txt"), "Hello, testing!");
}

#[test]
fn tl14_edit_missing_text() {
    let t = Tree::new();
    t.file("f.txt", "Hello, world!");
    assert!(err(&edit1(&t, "f.txt", "nope", "x")).contains("Could not find the exact text"));
}

#[test]
fn tl15_edit_not_unique() {
    let t = Tree::new();
    t.file("f.txt", "foo foo foo");
    assert!(err(&edit1(&t, "f.txt", "foo", "bar")).contains("Found 3 occurrences"));
    assert_eq!(t.read("f.txt"), "foo foo foo");
}

#[test]
fn tl16_edit_trailing_whitespace() {
    let t = Tree::new();
    t.file("f.txt", "line one   \nline two  \nline three\n");
    ok(&edit1(&t, "f.txt", "line one\nline two\n", "replaced\n"));
    assert_eq!(t.read("f.txt"), "replaced\nline three\n");
}

#[test]
fn tl17_edit_fullwidth_punctuation() {
    let t = Tree::new();
    t.file("f.txt", "你好，世界\n你好（世界）\n");
    ok(&edit1(
        &t,
        "f.txt",
        "你好,世界\n你好(世界)\n",
        "你好，pi\n你好(pi)\n",
    ));
    assert_eq!(t.read("f.txt"), "你好，pi\n你好(pi)\n");
}

#[test]
fn tl18_edit_compatibility_forms() {
    let t = Tree::new();
    t.file("f.txt", "ＡＢＣ１２３\ncafe\u{301}\n");
    ok(&edit1(&t, "f.txt", "ABC123\ncafé\n", "XYZ789\ncoffee\n"));
    assert_eq!(t.read("f.txt"), "XYZ789\ncoffee\n");
}

#[test]
fn tl19_edit_smart_single_quotes() {
    let t = Tree::new();
    t.file("f.txt", "console.log(\u{2018}hello\u{2019});\n");
    ok(&edit1(
        &t,
        "f.txt",
        "console.log('hello');",
        "console.log('world');",
    ));
    assert!(t.read("f.txt").contains("world"));
}

#[test]
fn tl20_edit_smart_double_quotes() {
    let t = Tree::new();
    t.file("f.txt", "say \u{201C}hi\u{201D}\n");
    ok(&edit1(&t, "f.txt", "say \"hi\"", "say \"bye\""));
    assert!(t.read("f.txt").contains("bye"));
}

#[test]
fn tl21_edit_dashes() {
    let t = Tree::new();
    t.file("f.txt", "range: 1\u{2013}5\nbreak\u{2014}here\n");
    ok(&edit1(
        &t,
        "f.txt",
        "range: 1-5\nbreak-here",
        "range: 10-50\nbreak-here",
    ));
    assert!(t.read("f.txt").contains("10-50"));
}

#[test]
fn tl22_edit_nbsp() {
    let t = Tree::new();
    t.file("f.txt", "hello\u{A0}world\n");
    ok(&edit1(&t, "f.txt", "hello world", "hello there"));
    assert_eq!(t.read("f.txt"), "hello there\n");
}

#[test]
fn tl23_edit_exact_keeps_the_rest() {
    let t = Tree::new();
    t.file("f.txt", "const x = 'exact';\nconst y = 'other';\n");
    ok(&edit1(
        &t,
        "f.txt",
        "const x = 'exact';",
        "const x = 'changed';",
    ));
    assert_eq!(
        t.read("f.txt"),
        "const x = 'changed';\nconst y = 'other';\n"
    );
}

#[test]
fn tl24_edit_no_loose_match() {
    let t = Tree::new();
    t.file("f.txt", "completely different content\n");
    assert!(
        err(&edit1(&t, "f.txt", "something else", "x")).contains("Could not find the exact text")
    );
}

#[test]
fn tl25_edit_loose_duplicates() {
    let t = Tree::new();
    t.file("f.txt", "hello world   \nhello world\n");
    assert!(err(&edit1(&t, "f.txt", "hello world", "x")).contains("Found 2 occurrences"));
}

#[test]
fn tl26_edit_crlf_with_lf_old_text() {
    let t = Tree::new();
    t.file("f.txt", "line one\r\nline two\r\nline three\r\n");
    ok(&edit1(&t, "f.txt", "line two\n", "changed\n"));
    assert_eq!(t.read("f.txt"), "line one\r\nchanged\r\nline three\r\n");
}

#[test]
fn tl27_edit_keeps_crlf() {
    let t = Tree::new();
    t.file("f.txt", "first\r\nsecond\r\nthird\r\n");
    ok(&edit1(&t, "f.txt", "second", "REPLACED"));
    assert_eq!(t.read("f.txt"), "first\r\nREPLACED\r\nthird\r\n");
}

#[test]
fn tl28_edit_keeps_lf() {
    let t = Tree::new();
    t.file("f.txt", "first\nsecond\nthird\n");
    ok(&edit1(&t, "f.txt", "second", "REPLACED"));
    assert_eq!(t.read("f.txt"), "first\nREPLACED\nthird\n");
}

#[test]
fn tl29_edit_mixed_endings_count_after_normalizing() {
    let t = Tree::new();
    t.file("f.txt", "hello\r\nworld\r\n---\r\nhello\nworld\n");
    assert!(err(&edit1(&t, "f.txt", "hello\nworld\n", "x\n")).contains("Found 2 occurrences"));
}

#[test]
fn tl30_edit_keeps_bom_and_crlf() {
    let t = Tree::new();
    t.file("f.txt", "\u{FEFF}first\r\nsecond\r\nthird\r\n");
    ok(&edit1(&t, "f.txt", "second", "2nd"));
    assert_eq!(t.read("f.txt"), "\u{FEFF}first\r\n2nd\r\nthird\r\n");
}

// bash ------------------------------------------------------------------------------------

#[test]
fn tl31_bash_echo() {
    let t = Tree::new();
    let r = t.call("bash", json!({"command": "echo 'test output'"}));
    assert!(ok(&r).contains("test output"));
    assert_eq!(r.details, None);
}

#[test]
fn tl32_bash_exit_code() {
    let t = Tree::new();
    let msg = err(&t.call("bash", json!({"command": "exit 1"})));
    assert!(msg.contains("code 1"), "{msg}");
}

#[test]
fn tl33_bash_timeout() {
    let t = Tree::new();
    let start = std::time::Instant::now();
    let msg = err(&t.call("bash", json!({"command": "sleep 5", "timeout": 1})));
    assert!(msg.to_lowercase().contains("timed out"), "{msg}");
    assert!(start.elapsed() < std::time::Duration::from_secs(4));
}

#[test]
fn tl34_bash_missing_cwd() {
    let t = Tree::new();
    let ctx = ctx_in(&t.root.join("missing"), &t.root.join("tmp"));
    let msg = err(&call(ctx, "bash", &json!({"command": "echo hi"})));
    assert!(msg.starts_with("Working directory does not exist"), "{msg}");
}

#[test]
fn tl35_bash_missing_shell() {
    // 0.73 checks the configured shell before spawning (0.58 reported ENOENT from spawn).
    let t = Tree::new();
    let mut ctx = t.ctx();
    ctx.shell_path = Some("/nonexistent/shell".into());
    let msg = err(&call(ctx, "bash", &json!({"command": "echo hi"})));
    assert_eq!(msg, "Custom shell path not found: /nonexistent/shell");
}

fn with_prefix(prefix: Option<&str>, command: &str) -> String {
    let t = Tree::new();
    let mut ctx = t.ctx();
    ctx.shell_command_prefix = prefix.map(str::to_owned);
    ok(&call(ctx, "bash", &json!({ "command": command })))
}

#[test]
fn tl36_bash_prefix_sets_environment() {
    assert_eq!(
        with_prefix(Some("export TEST_VAR=hello"), "echo $TEST_VAR").trim(),
        "hello"
    );
}

#[test]
fn tl37_bash_prefix_output_first() {
    assert_eq!(
        with_prefix(Some("echo prefix-output"), "echo command-output").trim(),
        "prefix-output\ncommand-output"
    );
}

#[test]
fn tl38_bash_without_prefix() {
    assert_eq!(with_prefix(None, "echo no-prefix").trim(), "no-prefix");
}

// grep / find / ls ------------------------------------------------------------------------

#[test]
fn tl39_grep_single_file() {
    let t = Tree::new();
    t.file("example.txt", "first line\nmatch line\nlast line");
    let out = ok(&t.call("grep", json!({"pattern": "match", "path": "example.txt"})));
    assert!(out.contains("example.txt:2: match line"), "{out}");
}

#[test]
fn tl40_grep_context_and_limit() {
    let t = Tree::new();
    t.file(
        "context.txt",
        "before\nmatch one\nafter\nmiddle\nmatch two\nafter two\n",
    );
    let out = ok(&t.call(
        "grep",
        json!({"pattern": "match", "path": "context.txt", "limit": 1, "context": 1}),
    ));
    for want in [
        "context.txt-1- before",
        "context.txt:2: match one",
        "context.txt-3- after",
        "[1 matches limit reached. Use limit=2 for more, or refine pattern]",
    ] {
        assert!(out.contains(want), "{want} missing from {out}");
    }
    assert!(!out.contains("match two"));
}

#[test]
fn tl41_find_includes_hidden() {
    let t = Tree::new();
    t.file(".secret/hidden.txt", "h");
    t.file("visible.txt", "v");
    let out = ok(&t.call("find", json!({"pattern": "**/*.txt"})));
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines.contains(&"visible.txt") && lines.contains(&".secret/hidden.txt"),
        "{out}"
    );
}

#[test]
fn tl42_find_respects_gitignore() {
    let t = Tree::new();
    t.file(".gitignore", "ignored.txt\n");
    t.file("ignored.txt", "i");
    t.file("kept.txt", "k");
    let out = ok(&t.call("find", json!({"pattern": "*.txt"})));
    assert!(
        out.contains("kept.txt") && !out.contains("ignored.txt"),
        "{out}"
    );
}

#[test]
fn tl43_ls_dotfiles() {
    let t = Tree::new();
    t.file(".hidden-file", "h");
    std::fs::create_dir(t.proj().join(".hidden-dir")).unwrap();
    let out = ok(&t.call("ls", json!({})));
    assert!(
        out.contains(".hidden-file") && out.contains(".hidden-dir/"),
        "{out}"
    );
}

// path utilities --------------------------------------------------------------------------

#[test]
fn tl44_expand_home() {
    assert!(!expand_path("~").contains('~'));
    assert!(!expand_path("~/x").contains('~'));
    assert!(expand_path("~/x").ends_with("/x"));
}

#[test]
fn tl45_unicode_spaces() {
    assert_eq!(expand_path("file\u{A0}name.txt"), "file name.txt");
}

#[test]
fn tl46_resolve_to_cwd() {
    let any = std::path::Path::new("/any");
    assert_eq!(
        resolve_to_cwd("/absolute/path/file.txt", any).to_str(),
        Some("/absolute/path/file.txt")
    );
    assert_eq!(
        resolve_to_cwd("relative/file.txt", std::path::Path::new("/some/cwd")).to_str(),
        Some("/some/cwd/relative/file.txt")
    );
}

#[test]
fn tl47_resolve_read_path_variants() {
    let t = Tree::new();
    let cwd = t.proj();
    let exists = t.file("plain.txt", "x");
    assert_eq!(resolve_read_path("plain.txt", &cwd), exists);
    let nfd = t.file("cafe\u{301}.txt", "x");
    assert_eq!(resolve_read_path("caf\u{E9}.txt", &cwd), nfd);
    let curly = t.file("it\u{2019}s.txt", "x");
    assert_eq!(resolve_read_path("it's.txt", &cwd), curly);
    let both = t.file("l\u{2019}e\u{301}te\u{301}.txt", "x");
    assert_eq!(resolve_read_path("l'\u{E9}t\u{E9}.txt", &cwd), both);
    let shot = t.file("Shot 10.00.00\u{202F}AM.png", "x");
    assert_eq!(resolve_read_path("Shot 10.00.00 AM.png", &cwd), shot);
    // Nothing matches: the plain resolution.
    assert_eq!(resolve_read_path("none.txt", &cwd), cwd.join("none.txt"));
}
