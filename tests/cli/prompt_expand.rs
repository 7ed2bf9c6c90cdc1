//! `pi prompt expand`: templates (test-cases PT, PA, PI), `/skill:` expansion, input from
//! arguments and stdin, `--json`, `--as-message` and the pipeline into `pi session append`.

use serde_json::{Value, json};

use crate::common::*;

fn template(w: &World, name: &str, content: &str) {
    w.write(&format!("agent/prompts/{name}.md"), content);
}

/// `pi prompt expand ARGS` → the printed text without its final newline.
fn expand(w: &World, args: &[&str]) -> String {
    let out = w.ok(&[&["prompt", "expand"], args].concat());
    out.strip_suffix('\n').unwrap_or(&out).to_owned()
}

/// `pi prompt expand --lenient ARGS`: the reference's reading (unknown `/name` passes
/// through, missing arguments are empty), which the upstream test cases record.
fn expand_lenient(w: &World, args: &[&str]) -> String {
    expand(w, &[&["--lenient"], args].concat())
}

fn expand_stdin(w: &World, text: &str) -> String {
    let out = w.ok_in(&["prompt", "expand"], text);
    out.strip_suffix('\n').unwrap_or(&out).to_owned()
}

#[test]
fn review_example_from_the_issue() {
    let w = World::new();
    w.write(
        "proj/.pi/prompts/review.md",
        "---\ndescription: Review a PR\n---\nReview PR $1 focusing on ${@:2}\n",
    );
    assert_eq!(
        expand(&w, &["/review", "1234", "src/auth.ts"]),
        "Review PR 1234 focusing on src/auth.ts"
    );
    // One argument or stdin: split by the reference 1.6's quote rules.
    assert_eq!(
        expand(&w, &["/review 1234 'src/my file.ts' lib.rs"]),
        "Review PR 1234 focusing on src/my file.ts lib.rs"
    );
    assert_eq!(
        expand_stdin(&w, "/review 77 a.ts b.ts\n"),
        "Review PR 77 focusing on a.ts b.ts"
    );
}

#[test]
fn placeholders_pt() {
    let w = World::new();
    let cases: &[(&str, &[&str], &str)] = &[
        ("Test: $ARGUMENTS", &["a", "b", "c"], "Test: a b c"), // PT1
        ("Test: $@", &["a", "b", "c"], "Test: a b c"),         // PT2
        ("$ARGUMENTS", &["$1", "$ARGUMENTS"], "$1 $ARGUMENTS"), // PT3
        ("$@", &["$100", "$1"], "$100 $1"),                    // PT4
        (
            "$1: $ARGUMENTS",
            &["prefix", "a", "b"],
            "prefix: prefix a b",
        ), // PT5
        ("Test: $ARGUMENTS", &[], "Test: "),                   // PT6
        ("$ARGUMENTS and $@", &["a", "b"], "a b and a b"),     // PT7
        ("$1 $2 $3 $4 $5", &["a", "b"], "a b   "),             // PT9
        ("$ARGUMENTS", &["日本語", "🎉", "café"], "日本語 🎉 café"), // PT10
        (
            "$1 $2",
            &["line1\nline2", "tab\tthere"],
            "line1\nline2 tab\tthere",
        ), // PT11
        ("$1$2", &["a", "b"], "ab"),                           // PT12
        ("$0", &["a", "b"], ""),                               // PT14
        ("$1.5", &["a"], "a.5"),                               // PT15
        ("pre$ARGUMENTS", &["a", "b"], "prea b"),              // PT16
        ("$ARGUMENTS", &["a", "", "c"], "a  c"),               // PT17
        ("$A $$ $ $ARGS", &["a"], "$A $$ $ $ARGS"),            // PT20
        (
            "$arguments $Arguments $ARGUMENTS",
            &["a", "b"],
            "$arguments $Arguments a b",
        ), // PT21
        (
            "$10 $12 $15",
            &[
                "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12",
                "v13", "v14",
            ],
            "v9 v11 v14",
        ), // PT24
        ("Price: \\$100", &[], "Price: \\"),                   // PT25
        ("${@:2}", &["a", "b", "c", "d"], "b c d"),            // PT28
        ("${@:2:2}", &["a", "b", "c", "d"], "b c"),            // PT29
        ("${@:99}", &["a", "b"], ""),                          // PT30
        ("${@:2:0}", &["a", "b", "c"], ""),                    // PT31
        ("${@:2:99}", &["a", "b", "c"], "b c"),                // PT32
        ("${@:1}", &["${@:2}", "test"], "${@:2} test"),        // PT34
        ("${@:0}", &["a", "b", "c"], "a b c"),                 // PT36
        (
            "Run $1 on ${@:2:2}, then process $@",
            &["eslint", "f1", "f2", "f3"],
            "Run eslint on f1 f2, then process eslint f1 f2 f3",
        ), // PT40
        // PT42 as in 1.6: one pass, so inserted text is never read again.
        ("$1", &["${@:2}", "z"], "${@:2}"),
        ("$1 x", &["$@", "b"], "$@ x"),
        ("$1 and $10", &["a"], "a and "), // PT43
        ("${@:2", &["a"], "${@:2"),       // PT43
        // JavaScript replacement patterns are not interpreted (nor are they in 1.6).
        ("<$ARGUMENTS>", &["$$", "$&x"], "<$$ $&x>"),
        // 1.6: defaults, for an argument that is missing or empty.
        ("Focus on ${1:-correctness}", &[], "Focus on correctness"),
        ("Focus on ${1:-correctness}", &[""], "Focus on correctness"),
        ("Focus on ${1:-correctness}", &["speed"], "Focus on speed"),
        ("${@:-all} ${ARGUMENTS:-none}", &[], "all none"),
        ("${@:-all}", &["x", "y"], "x y"),
        ("${1:-$2}", &[], "$2"),
    ];
    for (content, args, expected) in cases {
        template(&w, "t", content);
        assert_eq!(
            expand_lenient(&w, &[&["/t"], *args].concat()),
            *expected,
            "{content:?} {args:?}"
        );
    }
}

#[test]
fn argument_splitting_pa_pi() {
    let w = World::new();
    template(&w, "q", "[$1][$2][$3]|$#|${@:4}");
    let cases = [
        ("/q a b c", "[a][b][c]|$#|"),                                  // PA1
        ("/q \"first arg\" second", "[first arg][second][]|$#|"),       // PA2
        ("/q 'first arg' second", "[first arg][second][]|$#|"),         // PA3
        ("/q a  b   c", "[a][b][c]|$#|"),                               // PA6
        ("/q a\tb\tc", "[a][b][c]|$#|"),                                // PA7
        ("/q $100 @user #tag", "[$100][@user][#tag]|$#|"),              // PA9 (# is no comment)
        ("/q \"line1\nline2\" second", "[line1\nline2][second][]|$#|"), // PA11
        ("/q \"quoted \\\"text\\\"\"", "[quoted \"text\"][][]|$#|"),    // PA12: \" in "…"
        ("/q    a b c   ", "[a][b][c]|$#|"),                            // PA13
        ("/q x\"y z\"w", "[x\"y][z\"w][]|$#|"),                         // PA14 (1.6)
        ("/q 'a \"b\" c' d", "[a \"b\" c][d][]|$#|"),
        ("/q a b c d e", "[a][b][c]|$#|d e"),
        // 1.6: apostrophes in words, empty quoted arguments, backslashes kept, Unicode spaces.
        ("/q doesn't 'quote me' now", "[doesn't][quote me][now]|$#|"),
        ("/q \"\" '' x", "[][][x]|$#|"),
        ("/q C:\\Users\\me a\\ b", "[C:\\Users\\me][a\\][b]|$#|"),
        ("/q a\u{a0}b\u{2003}c", "[a][b][c]|$#|"),
        ("/q\na\tb", "[a][b][]|$#|"),
    ];
    for (text, expected) in cases {
        assert_eq!(expand_lenient(&w, &[text]), expected, "{text:?}");
    }
    // An apostrophe inside a word is text; a quote that is never closed is kept as text,
    // with a warning.
    insta::assert_snapshot!(w.snap(&["prompt", "expand", "--lenient", "/q it's 'here"]), @"
    status: 0
    ----- stdout -----
    [it's]['here][]|$#|
    ----- stderr -----
    pi: warning: a quote in the template arguments is never closed; it is kept as text
    ");

    // PI1, PI2
    template(&w, "c", "Create component $1 with features: $ARGUMENTS");
    assert_eq!(
        expand(&w, &["/c Button \"onClick handler\" \"disabled support\""]),
        "Create component Button with features: Button onClick handler disabled support"
    );
    template(&w, "i1", "Implement: $@");
    template(&w, "i2", "Implement: $ARGUMENTS");
    assert_eq!(
        expand(&w, &["/i1 feature1 feature2 feature3"]),
        expand(&w, &["/i2 feature1 feature2 feature3"])
    );
    // PI3
    template(&w, "t", "[$1][$2]");
    template(&w, "all", "[$@]");
    assert_eq!(expand_lenient(&w, &["/t  two"]), "[two][]");
    assert_eq!(expand(&w, &["/all"]), "[]");
    // 1.6: any whitespace ends the name.
    assert_eq!(expand_lenient(&w, &["/t\targ"]), "[arg][]");
    assert_eq!(expand_lenient(&w, &["/x y"]), "/x y");
}

#[test]
fn shell_words_are_arguments_as_given() {
    let w = World::new();
    template(&w, "t", "[$1][$2]");
    assert_eq!(expand(&w, &["/t", "a b", "c"]), "[a b][c]");
    assert_eq!(expand(&w, &["/t", "it's", "\"q\""]), "[it's][\"q\"]");
    assert_eq!(expand(&w, &["/t", "--json", "-x"]), "[--json][-x]");
}

#[test]
fn other_text_passes_through() {
    let w = World::new();
    template(&w, "t", "T");
    for text in [
        "hello world",
        "t x",
        "//t",
        "/",
        "path /t x",
        "/etc/hosts x",
    ] {
        let out = w.ok(&["prompt", "expand", "--json", "--", text]);
        let v = &jsonl(&out)[0];
        assert_eq!(v["text"], text);
        assert_eq!(v["source"], Value::Null);
    }
    // An unknown `/name` passes only with --lenient.
    let out = w.ok(&[
        "prompt",
        "expand",
        "--lenient",
        "--json",
        "--",
        "/unknown a b",
    ]);
    assert_eq!(jsonl(&out)[0]["text"], "/unknown a b");
    assert_eq!(expand(&w, &["some", "words", "here"]), "some words here");
}

#[test]
fn json_output_names_the_source() {
    let w = World::new();
    let p = w.write("proj/.pi/prompts/greet.md", "Hello $1");
    let out = w.ok(&["prompt", "expand", "--json", "/greet", "you"]);
    assert_eq!(
        jsonl(&out),
        [
            json!({"text": "Hello you", "source": {"kind": "template", "name": "greet", "path": p.canonicalize().unwrap()}})
        ]
    );
}

#[test]
fn project_templates_win_over_user_templates() {
    let w = World::new();
    w.write("agent/prompts/commit.md", "user commit");
    w.write("proj/.pi/prompts/commit.md", "project commit");
    assert_eq!(expand(&w, &["/commit"]), "project commit"); // RL2
}

#[test]
fn skill_expansion() {
    let w = World::new();
    let p = w.write(
        "agent/skills/foo/SKILL.md",
        "---\nname: foo\ndescription: Foo things.\n---\n\n  Do X.\n\n",
    );
    let base = p.parent().unwrap().display().to_string();
    let block = format!(
        "<skill name=\"foo\" location=\"{}\">\nReferences are relative to {base}.\n\nDo X.\n</skill>",
        p.display()
    );
    assert_eq!(expand(&w, &["/skill:foo"]), block);
    assert_eq!(
        expand(&w, &["/skill:foo  please now "]),
        format!("{block}\n\nplease now")
    );
    assert_eq!(
        expand(&w, &["/skill:foo", "please", "now"]),
        format!("{block}\n\nplease now")
    );
    let out = w.ok(&["prompt", "expand", "--json", "/skill:foo"]);
    assert_eq!(jsonl(&out)[0]["source"]["kind"], "skill");
    assert_eq!(jsonl(&out)[0]["source"]["name"], "foo");
}

#[test]
fn unknown_skill_is_a_usage_error() {
    let w = World::new();
    w.write(
        "agent/skills/foo/SKILL.md",
        "---\ndescription: Foo.\n---\nbody",
    );
    insta::assert_snapshot!(w.snap(&["prompt", "expand", "/skill:bar", "x"]), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown skill 'bar'
      hint: known skills: foo
    ");
}

#[test]
fn skills_hidden_from_the_model_can_still_be_invoked() {
    let w = World::new();
    w.write(
        "agent/skills/manual/SKILL.md",
        "---\ndescription: Manual.\ndisable-model-invocation: true\n---\nManual body",
    );
    assert!(expand(&w, &["/skill:manual"]).contains("\n\nManual body\n</skill>"));
}

#[test]
fn as_message_is_a_user_message_record() {
    let w = World::new();
    template(&w, "review", "Review PR $1");
    // The timestamp is the world's clock (NOW).
    let out = w
        .pi()
        .args(["prompt", "expand", "--as-message", "/review", "1234"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Review PR 1234\"}],\"timestamp\":1767323045678}\n"
    );
}

#[test]
fn as_message_pipes_into_session_append() {
    let w = World::new();
    template(&w, "review", "Review PR $1 focusing on ${@:2}");
    let session = w.new_session();
    let msg = w.ok(&[
        "prompt",
        "expand",
        "--as-message",
        "/review",
        "1234",
        "src/auth.ts",
    ]);
    let appended = jsonl(&w.ok_in(&["session", "append"], &msg));
    assert_eq!(appended.len(), 1);
    assert_eq!(appended[0]["type"], "message");
    assert_eq!(appended[0]["message"]["role"], "user");
    assert_eq!(
        appended[0]["message"]["content"][0]["text"],
        "Review PR 1234 focusing on src/auth.ts"
    );
    let file = jsonl(&std::fs::read_to_string(session).unwrap());
    assert_eq!(file.last().unwrap()["id"], appended[0]["id"]);
}

#[test]
fn stdin_is_read_when_there_is_no_text() {
    let w = World::new();
    template(&w, "t", "got [$1]");
    assert_eq!(expand_stdin(&w, "  /t \"a b\"  \n\n"), "got [a b]");
    assert_eq!(expand_stdin(&w, "plain text\n"), "plain text");
    assert_eq!(expand_stdin(&w, ""), "");
}

#[test]
fn explicit_template_paths() {
    let w = World::new();
    w.write("extra/one.md", "one $1");
    w.write("extra/dir/two.md", "two $1");
    let one = w.path("extra/one.md");
    let dir = w.path("extra/dir");
    let out = w.ok(&[
        "prompt",
        "expand",
        "--prompt-dir",
        one.to_str().unwrap(),
        "--prompt-template",
        dir.to_str().unwrap(),
        "/two",
        "x",
    ]);
    assert_eq!(out, "two x\n");
    // A missing path is reported, the rest still works.
    insta::assert_snapshot!(w.snap(&["prompt", "expand", "--lenient", "--prompt-dir", "nope", "/x"]), @"
    status: 0
    ----- stdout -----
    /x
    ----- stderr -----
    pi: warning: [PROJ]/nope: no such file or directory
    ");
    // --no-prompt-templates: only explicit paths.
    template(&w, "two", "discovered");
    let out = w.ok(&[
        "prompt",
        "expand",
        "--lenient",
        "--no-prompt-templates",
        "/two",
        "y",
    ]);
    assert_eq!(out, "/two y\n");
}

#[test]
fn hostile_input_never_panics() {
    let w = World::new();
    template(
        &w,
        "t",
        "$1 ${@:1:1} $ARGUMENTS $@ $99999999999999999999999 ${@:99999999999999999999:9}",
    );
    w.write("agent/prompts/bad.md", "---\n: : [\n---\n");
    w.write("agent/skills/odd/SKILL.md", "---\ndescription: [\n---\n");
    for text in [
        "/t $ $$ ${ ${@ ${@:",
        "/t \"unbalanced",
        "/t \\",
        "/t 🎉\u{0}x \u{202e}rtl",
        "/skill:",
        "/",
        "/bad x",
        "/t #",
        "/t '",
    ] {
        let out = w
            .pi()
            .args(["prompt", "expand"])
            .write_stdin(text)
            .output()
            .unwrap();
        let code = out.status.code();
        assert!(code == Some(0) || code == Some(2), "{text:?}: {code:?}");
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("panicked"),
            "{text:?}"
        );
    }
}

/// Scripts need typos to fail: an unknown `/name` and a missing `$1`..`$9` argument are
/// usage errors (exit 2, nothing on stdout) naming the templates there are, or the
/// template's argument-hint; `--lenient` reads the text as the agent does.
#[test]
fn unknown_names_and_missing_arguments_are_errors() {
    let w = World::new();
    w.write(
        "proj/.pi/prompts/review.md",
        "---\ndescription: Review a PR\nargument-hint: <pr> [focus...]\n---\nReview PR $1. Focus on $2.",
    );
    template(&w, "fix", "Fix $1 and $3");
    insta::assert_snapshot!(w.snaps(&[
        &["prompt", "expand", "/revew 1234"],
        &["prompt", "expand", "/deploy"],
        &["prompt", "expand", "/review"],
        &["prompt", "expand", "--as-message", "/fix", "a", "b"],
    ]), @"
    $ pi prompt expand '/revew 1234'
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown template '/revew'
      hint: did you mean /review? known templates: /review, /fix

    $ pi prompt expand /deploy
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown template '/deploy'
      hint: known templates: /review, /fix; --lenient passes the text through unchanged

    $ pi prompt expand /review
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: template '/review' needs 2 arguments (it uses $2), and 0 were given
      hint: usage: /review <pr> [focus...]; --lenient leaves missing arguments empty

    $ pi prompt expand --as-message /fix a b
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: template '/fix' needs 3 arguments (it uses $3), and 2 were given
      hint: usage: /fix ARG1 ARG2 ARG3; --lenient leaves missing arguments empty
    ");
    // --lenient: the agent's reading.
    assert_eq!(expand(&w, &["--lenient", "/revew 1234"]), "/revew 1234");
    assert_eq!(
        expand(&w, &["--lenient", "/review"]),
        "Review PR . Focus on ."
    );
    // Enough arguments, or templates that use none or only $@: no error.
    assert_eq!(
        expand(&w, &["/review", "1", "x"]),
        "Review PR 1. Focus on x."
    );
    assert_eq!(expand(&w, &["/fix", "a", "", "c"]), "Fix a and c");
    // A `${N:-default}` counts as given: only the plain `$N` needs its argument.
    template(
        &w,
        "focus",
        "Review ${1:-HEAD}, focus on ${2:-everything}. $ARGUMENTS",
    );
    assert_eq!(
        expand(&w, &["/focus"]),
        "Review HEAD, focus on everything. "
    );
    template(&w, "mixed", "Ticket $2, branch ${1:-main}");
    let o = w
        .pi()
        .args(["prompt", "expand", "/mixed x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs 2 arguments (it uses $2)"));
    assert_eq!(expand(&w, &["/mixed '' 42"]), "Ticket 42, branch main");
    // Stdin is read the same way.
    let o = w
        .pi()
        .args(["prompt", "expand"])
        .write_stdin("/revew 1\n")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    // No templates at all.
    let bare = World::new();
    let o = bare.pi().args(["prompt", "expand", "/x"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no prompt templates were found"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
