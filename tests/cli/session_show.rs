//! `pi session show`, `pi session export` (HTML, Markdown, JSONL, redaction) and the
//! text view options of `pi session tree`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use scraper::{ElementRef, Html, Selector};
use serde_json::{Value, json};

use crate::common::*;

/// The fixture with every entry type: images, thinking, tool errors, an edit with a diff,
/// a side branch with a failed turn, a branch summary, a compaction, labels, an unknown
/// entry type.
fn every_type() -> PathBuf {
    fixture("sessions/every-type.jsonl")
}

/// Fixture sessions of all shapes: generated ones with branches and compactions, the one
/// with every entry type, a session written by pi, and an upstream version 1 file.
fn all_fixtures() -> Vec<PathBuf> {
    [
        "sessions/every-type.jsonl",
        "sessions/gen-200-s1.jsonl",
        "sessions/gen-200-s2.jsonl",
        "sessions/gen-200-s3.jsonl",
        "sessions/pi-written.jsonl",
        "before-compaction.jsonl",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect()
}

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

fn text_of(e: ElementRef<'_>) -> String {
    e.text().collect()
}

fn export_html(w: &World, session: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "session",
        "export",
        session.to_str().unwrap(),
        "--format",
        "html",
    ];
    args.extend_from_slice(extra);
    w.ok(&args)
}

/// A parsed page: the document, its data block, and each article parsed from its holder.
struct Page {
    doc: Html,
    data: Value,
    articles: HashMap<usize, Html>,
}

fn page(html: &str) -> Page {
    let doc = Html::parse_document(html);
    let data_el = doc
        .select(&sel("script#pi-data"))
        .next()
        .expect("data block");
    assert_eq!(data_el.value().attr("type"), Some("application/json"));
    let data: Value = serde_json::from_str(&text_of(data_el)).expect("data is JSON");
    let mut articles = HashMap::new();
    for h in doc.select(&sel("script[type=\"text/x-pi\"]")) {
        let id = h.value().id().expect("holder id");
        let i: usize = id
            .strip_prefix("pi-h")
            .expect("pi-h prefix")
            .parse()
            .unwrap();
        let inner = text_of(h);
        assert!(inner.is_ascii(), "articles are ASCII");
        articles.insert(i, Html::parse_fragment(&inner));
    }
    Page {
        doc,
        data,
        articles,
    }
}

/// Checks what every page must be: a policy that allows nothing but its own inline style
/// and script, nothing loaded from anywhere, and data consistent with the session.
fn check_page(p: &Page, entries: usize) {
    let csp = p
        .doc
        .select(&sel("meta[http-equiv=\"Content-Security-Policy\"]"))
        .next()
        .expect("a CSP")
        .value()
        .attr("content")
        .unwrap()
        .to_owned();
    assert!(
        csp.starts_with("default-src 'none'; img-src data:;"),
        "{csp}"
    );
    // The one executable script and the one style are the ones the policy names.
    let scripts: Vec<ElementRef> = p
        .doc
        .select(&sel("script"))
        .filter(|s| s.value().attr("type").is_none())
        .collect();
    assert_eq!(scripts.len(), 1);
    assert!(scripts[0].value().attr("src").is_none());
    for (el, directive) in [
        (scripts[0], "script-src"),
        (p.doc.select(&sel("style")).next().unwrap(), "style-src"),
    ] {
        use base64::Engine;
        let digest = ring::digest::digest(&ring::digest::SHA256, text_of(el).as_bytes());
        let hash = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
        assert!(
            csp.contains(&format!("{directive} 'sha256-{hash}'")),
            "{directive} of {csp}"
        );
    }
    // Nothing is loaded: every src and link is data: or a fragment or a web link.
    let check_refs = |doc: &Html| {
        for el in doc.select(&sel("[src]")) {
            assert!(
                el.value().attr("src").unwrap().starts_with("data:"),
                "{:?}",
                el.value()
            );
        }
        for el in doc.select(&sel("link[href]")) {
            assert!(el.value().attr("href").unwrap().starts_with("data:"));
        }
        if let Some(el) = (doc.select(&sel(
            "iframe, object, embed, base, form, frame, meta[http-equiv=\"refresh\"]",
        )))
        .next()
        {
            panic!("unexpected element {:?}", el.value());
        }
    };
    check_refs(&p.doc);
    let d = &p.data;
    assert_eq!(d["ids"].as_array().unwrap().len(), entries);
    assert_eq!(d["parent"].as_array().unwrap().len(), entries);
    assert_eq!(d["kind"].as_str().unwrap().chars().count(), entries);
    assert_eq!(d["prev"].as_array().unwrap().len(), entries);
    let show = d["show"].as_array().unwrap();
    for (i, s) in show.iter().enumerate() {
        let s = s.as_i64().unwrap();
        if s >= 0 {
            assert!(
                p.articles.contains_key(&(s as usize)),
                "entry {i} is shown by article {s}"
            );
        }
    }
    for a in p.articles.values() {
        check_refs(a);
        if let Some(el) = (a.select(&sel("script, style"))).next() {
            panic!("a script or style in an article: {:?}", el.value());
        }
        for el in a.select(&sel("*")) {
            for (name, value) in el.value().attrs() {
                assert!(!name.starts_with("on"), "event handler {name}={value}");
                assert!(
                    !value.trim().to_ascii_lowercase().starts_with("javascript:"),
                    "{value}"
                );
                assert_ne!(name, "style");
            }
            if let Some(href) = el.value().attr("href") {
                assert!(
                    href.starts_with('#')
                        || href.starts_with("http")
                        || href.starts_with("mailto:"),
                    "{href}"
                );
            }
        }
    }
}

fn entry_count(w: &World, s: &Path) -> usize {
    jsonl(&w.ok(&["session", "log", s.to_str().unwrap(), "--all"])).len()
}

/// A fixture copied into the world (so that its path shows as `[ROOT]/NAME`).
fn copy(w: &World, f: &Path) -> PathBuf {
    w.write(
        f.file_name().unwrap().to_str().unwrap(),
        std::fs::read(f).unwrap(),
    )
}

#[test]
fn show_reads_as_a_conversation() {
    let w = World::new();
    let f = copy(&w, &every_type());
    insta::assert_snapshot!(w.snap(&["session", "show", f.to_str().unwrap()]), @r#"
    status: 0
    ----- stdout -----
    Fix the flaky parser test
    /home/ada/proj · 2025-03-01 10:00:00 UTC · session 0195f3a0-0000-7000-8000-000000000001

    · session named "Fix the flaky parser test" 2025-03-01 10:00:07 · e0000001

    · model → anthropic/claude-sonnet-4-5 10:00:14 · e0000002

    · thinking level → high 10:00:21 · e0000003

    user 10:00:28 · e0000004 [bug report]
      The parser test fails on CI. Here is the screenshot:
      [image: image/png, 72 B]

    assistant claude-sonnet-4-5 10:00:35 · e0000005
      Let me look at the test.
      
      ```rust
      fn parse() -> u32 { 42 }
      ```
      → read: src/parser.rs
        fn parse(s: &str) -> u32 {
            s.trim().parse().unwrap()
        }
        // line 4
        // line 5
        … 3 more lines (--full shows them)
      ✗ bash: cargo test parser
        running 1 test
        test parser ... FAILED
        
        Command exited with code 101
      1.2k in · 80 out · 3.0k cache read · $0.0057

    assistant claude-sonnet-4-5 10:00:56 · e0000008
      The input has a trailing comma. I will fix it.
      → edit: src/parser.rs
           1 fn parse(s: &str) -> u32 {
        -  2     s.trim().parse().unwrap()
        +  2     s.trim().trim_end_matches(',').parse().unwrap()
           3 }
      1.5k in · 60 out · 4.0k cache read · $0.0066

    assistant claude-sonnet-4-5 10:01:10 · e0000010
      Fixed: the parser now ignores a trailing comma.
      1.7k in · 20 out · 4.2k cache read · $0.0067

    · label "bug report" on e0000004 10:01:17 · e0000011

    ┃ branch summary (from e0000013) 10:01:38 · e0000014
    ┃ Tried the **locale** theory; it was a dead end.

    user ran 10:01:45 · e0000015
      $ git status --short
         M src/parser.rs

    [reminder] 10:01:52 · e0000016
      Remember to run clippy.

    · custom entry (todo-state) 10:01:59 · e0000017

    ┃ compaction: 12k tokens summarized 10:02:06 · e0000018
    ┃ ## Goal
    ┃ Fix the flaky parser test.
    ┃ 
    ┃ ## Done
    ┃ - trailing comma handled

    user 10:02:13 · e0000019
      Thanks! Now run clippy.

    assistant claude-sonnet-4-5 10:02:20 · e0000020
      → bash: cargo clippy  (no result)
      (aborted)
      800 in · 10 out · 5.0k cache read · $0.0040

    · entry of type "future_entry_type" 10:02:27 · e0000021

    total: 2 user messages · 4 assistant messages · 4 tool calls · 5.2k in · 170 out · 16k cache read · $0.0230
    models: anthropic/claude-sonnet-4-5
    ----- stderr -----
    "#);
}

#[test]
fn show_options_thinking_full_no_tools_and_leaf() {
    let w = World::new();
    let f = every_type();
    let f = f.to_str().unwrap();
    let base = w.ok(&["session", "show", f]);
    assert!(
        !base.contains("probably depends"),
        "thinking is hidden by default"
    );
    assert!(base.contains("… 3 more lines (--full shows them)"));
    let thinking = w.ok(&["session", "show", f, "--thinking"]);
    assert!(thinking.contains("│ The test probably depends on **locale**."));
    let full = w.ok(&["session", "show", f, "--full"]);
    assert!(full.contains("// line 8") && !full.contains("more lines"));
    let quiet = w.ok(&["session", "show", f, "--no-tools"]);
    assert!(!quiet.contains("→ read") && !quiet.contains("cargo test parser"));
    assert!(quiet.contains("Fixed: the parser now ignores a trailing comma."));
    // The side branch, by a unique prefix of its leaf.
    let side = w.ok(&["session", "show", f, "--leaf", "e0000013"]);
    assert!(side.contains("Actually, try the locale theory first."));
    assert!(side.contains("error: 429 rate limited"));
    assert!(!side.contains("Thanks! Now run clippy."));
    let o = w
        .pi()
        .args(["session", "show", f, "--leaf", "nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn show_markdown_is_github_flavoured() {
    let w = World::new();
    let f = copy(&w, &every_type());
    insta::assert_snapshot!(w.snap(&["session", "show", f.to_str().unwrap(), "--format", "md", "--thinking"]), @"
    status: 0
    ----- stdout -----
    # Fix the flaky parser test

    `/home/ada/proj` · 2025-03-01 10:00:00 UTC · session `0195f3a0-0000-7000-8000-000000000001`

    *session named “Fix the flaky parser test”* · 2025-03-01 10:00:07 · `e0000001`

    *model → `anthropic/claude-sonnet-4-5`* · 2025-03-01 10:00:14 · `e0000002`

    *thinking level → `high`* · 2025-03-01 10:00:21 · `e0000003`

    ### 👤 User · 2025-03-01 10:00:28 · `e0000004` · 🏷 bug report

    The parser test fails on CI. Here is the screenshot:

    *[image: image/png, 72 B]*

    ### 🤖 Assistant (claude-sonnet-4-5) · 2025-03-01 10:00:35 · `e0000005`

    <details><summary>Thinking</summary>

    The test probably depends on **locale**.

    </details>

    Let me look at the test.

    ```rust
    fn parse() -> u32 { 42 }
    ```

    **read** `src/parser.rs`

    ```text
    fn parse(s: &str) -> u32 {
        s.trim().parse().unwrap()
    }
    // line 4
    // line 5
    ```
    *… 3 more lines*

    **bash** `cargo test parser` ❌ error

    ```text
    running 1 test
    test parser ... FAILED

    Command exited with code 101
    ```

    <sub>1.2k in · 80 out · 3.0k cache read · $0.0057</sub>

    ### 🤖 Assistant (claude-sonnet-4-5) · 2025-03-01 10:00:56 · `e0000008`

    The input has a trailing comma. I will fix it.

    **edit** `src/parser.rs`

    ```diff
       1 fn parse(s: &str) -> u32 {
    -  2     s.trim().parse().unwrap()
    +  2     s.trim().trim_end_matches(',').parse().unwrap()
       3 }
    ```

    <sub>1.5k in · 60 out · 4.0k cache read · $0.0066</sub>

    ### 🤖 Assistant (claude-sonnet-4-5) · 2025-03-01 10:01:10 · `e0000010`

    Fixed: the parser now ignores a trailing comma.

    <sub>1.7k in · 20 out · 4.2k cache read · $0.0067</sub>

    *label “bug report” on `e0000004`* · 2025-03-01 10:01:17 · `e0000011`

    > **Branch summary** · 2025-03-01 10:01:38 · `e0000014`
    >
    > Tried the **locale** theory; it was a dead end.

    ### 👤 User ran · 2025-03-01 10:01:45 · `e0000015`

    `$ git status --short`

    ```text
     M src/parser.rs
    ```

    ### 🧩 reminder · 2025-03-01 10:01:52 · `e0000016`

    Remember to run clippy.

    *custom entry `todo-state`* · 2025-03-01 10:01:59 · `e0000017`

    > **Compaction** · 12k tokens summarized · 2025-03-01 10:02:06 · `e0000018`
    >
    > ## Goal
    > Fix the flaky parser test.
    >
    > ## Done
    > - trailing comma handled

    ### 👤 User · 2025-03-01 10:02:13 · `e0000019`

    Thanks! Now run clippy.

    ### 🤖 Assistant (claude-sonnet-4-5) · 2025-03-01 10:02:20 · `e0000020`

    **bash** `cargo clippy` *(no result)*

    *(aborted)*

    <sub>800 in · 10 out · 5.0k cache read · $0.0040</sub>

    *entry of type `future_entry_type`* · 2025-03-01 10:02:27 · `e0000021`

    ---

    **Total:** 2 user messages · 4 assistant messages · 4 tool calls · 5.2k in · 170 out · 16k cache read · $0.0230

    **Models:** `anthropic/claude-sonnet-4-5`
    ----- stderr -----
    ");
}

#[test]
fn markdown_export_is_the_markdown_view_and_all_adds_branches() {
    let w = World::new();
    let f = every_type();
    let f = f.to_str().unwrap();
    let shown = w.ok(&["session", "show", f, "--format", "md"]);
    let exported = w.ok(&["session", "export", f, "--format", "md"]);
    assert_eq!(shown, exported);
    let all = w.ok(&["session", "export", f, "--format", "md", "--all"]);
    assert!(all.contains("# Branch from entry e0000005"), "{all}");
    assert!(all.contains("Actually, try the locale theory first."));
    // Each entry once.
    assert_eq!(all.matches("Fixed: the parser now ignores").count(), 1);
    // By the extension of -o.
    let out = w.path("t.md");
    w.ok(&["session", "export", f, "-o", out.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), exported);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn html_export_has_the_structure_of_the_session() {
    let w = World::new();
    let f = every_type();
    let html = export_html(&w, &f, &[]);
    let p = page(&html);
    check_page(&p, 21);
    let d = &p.data;
    let ids: Vec<&str> = d["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ids[0], "e0000001");
    // Kinds, one letter each, in file order.
    assert_eq!(d["kind"].as_str().unwrap(), "imhuateataluABbcxCuao");
    // The leaf is the last entry; the side branch hangs off e0000005.
    assert_eq!(d["leaf"], 20);
    assert_eq!(d["parent"][11], 4);
    // Results are shown in the article of their call.
    assert_eq!(d["show"][5], 4);
    assert_eq!(d["show"][6], 4);
    assert_eq!(d["show"][8], 7);
    assert_eq!(d["labels"], json!([[3, "bug report"]]));
    // The header: name, cwd, models, totals.
    let head = p.doc.select(&sel("#head")).next().unwrap();
    assert_eq!(
        text_of(p.doc.select(&sel("#head h1")).next().unwrap()),
        "Fix the flaky parser test"
    );
    let head_text = text_of(head);
    assert!(head_text.contains("/home/ada/proj"));
    assert!(head_text.contains("anthropic/claude-sonnet-4-5"));
    assert!(head_text.contains("cost$0.0257"), "{head_text}");
    assert!(p.doc.select(&sel("aside#side input#q")).next().is_some());
    // The user message: Markdown, image, label, link to itself.
    let user = &p.articles[&3];
    assert!(
        user.select(&sel("figure img[src^=\"data:image/png;base64,\"]"))
            .next()
            .is_some()
    );
    assert_eq!(
        text_of(user.select(&sel(".label")).next().unwrap()),
        "bug report"
    );
    assert_eq!(
        user.select(&sel("a.id"))
            .next()
            .unwrap()
            .value()
            .attr("href"),
        Some("#e0000004")
    );
    // The first assistant message: thinking collapsed, highlighted code, two calls with
    // their results, the failed one marked.
    let a = &p.articles[&4];
    assert!(a.select(&sel("details.think > summary")).next().is_some());
    assert!(a.select(&sel("pre.code hk")).next().is_some());
    let tools: Vec<ElementRef> = a.select(&sel("div.tool")).collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(
        text_of(tools[0].select(&sel(".call .tn")).next().unwrap()),
        "read"
    );
    assert!(
        tools[0]
            .value()
            .has_class("ok", scraper::CaseSensitivity::CaseSensitive)
    );
    assert!(
        tools[0].select(&sel("pre.out.clip")).next().is_some(),
        "8 lines are clipped"
    );
    assert_eq!(tools[0].value().attr("data-r"), Some("e0000006"));
    assert!(
        tools[1]
            .value()
            .has_class("err", scraper::CaseSensitivity::CaseSensitive)
    );
    // The edit: the stored diff, with added and removed lines.
    let e = &p.articles[&7];
    assert_eq!(e.select(&sel("pre.diff ins")).count(), 1);
    assert_eq!(e.select(&sel("pre.diff del")).count(), 1);
    // Summaries are marked, the failed turn shows its error, the unknown type is kept.
    assert!(p.articles[&13].select(&sel(".who.sum")).next().is_some());
    assert!(p.articles[&17].select(&sel(".who.sum")).next().is_some());
    assert!(
        text_of(p.articles[&12].select(&sel(".error")).next().unwrap())
            .contains("429 rate limited")
    );
    assert!(text_of(p.articles[&20].root_element()).contains("future_entry_type"));
    // --leaf opens the page on another branch.
    let p2 = page(&export_html(&w, &f, &["--leaf", "e0000013"]));
    assert_eq!(p2.data["leaf"], 12);
}

#[test]
fn html_export_of_every_fixture_is_consistent() {
    let w = World::new();
    for f in all_fixtures() {
        let html = export_html(&w, &f, &[]);
        let p = page(&html);
        check_page(&p, entry_count(&w, &f));
        // Every user message of the session has its text in an article.
        for (i, k) in p.data["kind"].as_str().unwrap().chars().enumerate() {
            if k == 'u' {
                assert!(
                    p.articles.contains_key(&i),
                    "{}: user message {i}",
                    f.display()
                );
            }
        }
    }
}

/// Hostile strings in every field that reaches the page.
#[test]
fn html_export_escapes_every_field() {
    let w = World::new();
    const X: &str =
        "<script>alert(1)</script><img src=x onerror=alert(2)>\"'><svg onload=alert(3)>";
    let x = || X.to_owned();
    let lines = vec![
        json!({"type":"session","version":3,"id":x(),"timestamp":"2025-01-01T00:00:00.000Z","cwd":x()}),
        json!({"type":"session_info","id":"s1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","name":x()}),
        json!({"type":"model_change","id":"m1","parentId":"s1","timestamp":"2025-01-01T00:00:02.000Z","provider":x(),"modelId":x()}),
        json!({"type":"thinking_level_change","id":"t1","parentId":"m1","timestamp":"2025-01-01T00:00:03.000Z","thinkingLevel":x()}),
        json!({"type":"message","id":x(),"parentId":"t1","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":[{"type":"text","text":format!("{X} [link](javascript:alert(4)) ![i](http://evil.example/x.png)")},{"type":"image","mimeType":x(),"data":x()},{"type":"image","mimeType":"image/png","data":"AAAA\" onerror=\"alert(5)"}]}}),
        json!({"type":"message","id":"a1","parentId":X,"timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":x()},{"type":"text","text":format!("{X}\n\n```{X}\n{X}\n```\n\n| {X} |\n|---|\n| <b onmouseover=alert(6)>x</b> |")},{"type":"toolCall","id":x(),"name":x(),"arguments":{"command":x(),"path":x()}},{"type":"toolCall","id":"c2","name":"edit","arguments":{"path":x(),"oldText":x(),"newText":x()}},{"type":"toolCall","id":"c3","name":"write","arguments":{"path":"a.html","content":x()}}],"provider":x(),"model":x(),"usage":{"input":1,"output":1},"stopReason":"error","errorMessage":x()}}),
        json!({"type":"message","id":"r1","parentId":"a1","timestamp":"2025-01-01T00:00:06.000Z","message":{"role":"toolResult","toolCallId":X,"toolName":x(),"content":[{"type":"text","text":x()}],"details":{"diff":x()},"isError":true}}),
        json!({"type":"message","id":"b1","parentId":"r1","timestamp":"2025-01-01T00:00:07.000Z","message":{"role":"bashExecution","command":x(),"output":x(),"exitCode":1}}),
        json!({"type":"custom_message","customType":x(),"content":x(),"display":true,"id":"cm","parentId":"b1","timestamp":"2025-01-01T00:00:08.000Z"}),
        json!({"type":"custom","customType":x(),"data":x(),"id":"cu","parentId":"cm","timestamp":"2025-01-01T00:00:09.000Z"}),
        json!({"type":"branch_summary","id":"bs","parentId":"cu","timestamp":"2025-01-01T00:00:10.000Z","fromId":x(),"summary":x()}),
        json!({"type":"compaction","id":"co","parentId":"bs","timestamp":"2025-01-01T00:00:11.000Z","summary":x(),"firstKeptEntryId":x(),"tokensBefore":5}),
        json!({"type":"label","id":"lb","parentId":"co","timestamp":"2025-01-01T00:00:12.000Z","targetId":"co","label":x()}),
        json!({"type":X,"id":"zz","parentId":"lb","timestamp":"2025-01-01T00:00:13.000Z"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let f = w.write("hostile.jsonl", text);
    let html = export_html(&w, &f, &[]);
    // The only script elements are the page's own.
    let p = page(&html);
    check_page(&p, 13);
    if let Some(el) = (p.doc.select(&sel("img, svg, iframe"))).next() {
        panic!("an element from the session: {:?}", el.value());
    }
    assert_eq!(p.doc.select(&sel("script")).count(), p.articles.len() + 2);
    // The hostile text is shown as text.
    assert!(text_of(p.doc.select(&sel("title")).next().unwrap()).starts_with(X));
    assert_eq!(text_of(p.doc.select(&sel("#head h1")).next().unwrap()), X);
    let mut seen = 0;
    for a in p.articles.values() {
        let t = text_of(a.root_element());
        seen += t.matches(X).count();
        if let Some(el) = (a.select(&sel("img"))).next() {
            panic!("an image from text: {:?}", el.value());
        }
        if let Some(el) = (a.select(&sel("b, svg, table td b"))).next() {
            panic!("markup from text: {:?}", el.value());
        }
    }
    assert!(seen >= 20, "hostile text shown {seen} times");
    // The data block holds the strings as JSON, with no tag that could end the script.
    let raw = html.split("id=\"pi-data\">").nth(1).unwrap();
    let raw = &raw[..raw.find("</script>").unwrap()];
    assert!(!raw.contains('<'));
    // Markdown and the terminal view get it as text too.
    let md = w.ok(&["session", "export", f.to_str().unwrap(), "--format", "md"]);
    assert!(
        md.contains("\\<script\\>"),
        "names and labels are escaped in Markdown"
    );
}

#[test]
fn jsonl_export_is_the_same_session() {
    let w = World::new();
    let line_numbers = regex::Regex::new(r#""line":\d+"#).unwrap();
    for f in all_fixtures() {
        let out = w.path("copy.jsonl");
        let _ = std::fs::remove_file(&out);
        w.ok(&[
            "session",
            "export",
            f.to_str().unwrap(),
            "--format",
            "jsonl",
            "-o",
            out.to_str().unwrap(),
        ]);
        let o = out.to_str().unwrap();
        w.ok(&["session", "check", o]);
        let tree = |p: &str| -> String { w.ok(&["session", "tree", p, "--json"]) };
        let (a, b) = (tree(f.to_str().unwrap()), tree(o));
        let strip = |s: &String| -> String {
            // Line numbers move when unreadable lines are left out.
            line_numbers.replace_all(s, "").into_owned()
        };
        assert_eq!(strip(&a), strip(&b), "{}", f.display());
        let ctx = |p: &str| w.ok(&["context", "build", p]);
        assert_eq!(ctx(f.to_str().unwrap()), ctx(o), "{}", f.display());
    }
    // Not over the session itself.
    let copy = w.write("s.jsonl", std::fs::read(every_type()).unwrap());
    let o = w
        .pi()
        .args([
            "session",
            "export",
            copy.to_str().unwrap(),
            "-o",
            copy.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(every_type()).unwrap()
    );
}

#[test]
fn redaction_in_every_format() {
    let w = World::new();
    w.write(
        "agent/auth.json",
        r#"{"anthropic":{"type":"api_key","key":"sk-ant-api03-KNOWNKEYKNOWNKEY0123456789"}}"#,
    );
    let secret_lines = [
        "my key is sk-ant-api03-KNOWNKEYKNOWNKEY0123456789 ok",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "export DB_PASSWORD=hunter2hunter2",
        "curl -H 'Authorization: Bearer abc.def.ghi' https://x",
        "account acct-778899 and AKIAABCDEFGHIJKLMNOP",
        "custom env value: ENVSECRETVALUE123",
    ];
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    let input: Vec<String> = secret_lines.iter().map(|l| user(l)).collect();
    w.ok_in(&["session", "append", sp], &input.join("\n"));
    let log = jsonl(&w.ok(&["session", "log", sp]));
    let second = log[1]["id"].as_str().unwrap();
    w.ok(&[
        "session",
        "label",
        sp,
        second,
        "label ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    ]);
    let run = |format: &str| {
        w.pi()
            .env("MY_SERVICE_TOKEN", "ENVSECRETVALUE123")
            .args([
                "session",
                "export",
                sp,
                "--format",
                format,
                "--redact",
                "--redact-pattern",
                "acct-[0-9]+",
            ])
            .output()
            .unwrap()
    };
    for format in ["html", "md", "jsonl"] {
        let o = run(format);
        assert!(o.status.success());
        let out = String::from_utf8(o.stdout).unwrap();
        for secret in [
            "KNOWNKEY",
            "ghp_abc",
            "hunter2",
            "abc.def.ghi",
            "acct-778899",
            "AKIAABCD",
            "ENVSECRET",
        ] {
            assert!(!out.contains(secret), "{format}: {secret} left in");
        }
        assert!(out.contains("[redacted]"));
        let err = String::from_utf8(o.stderr).unwrap();
        assert!(err.starts_with("pi: redacted "), "{err}");
        for kind in [
            "known-key",
            "github-token",
            "secret-assignment",
            "authorization-header",
            "pattern",
            "aws-access-key",
        ] {
            assert!(err.contains(kind), "{format}: {kind} not counted in {err}");
        }
        if format == "jsonl" {
            let f = w.write("redacted.jsonl", &out);
            w.ok(&["session", "check", f.to_str().unwrap()]);
            let orig = jsonl(&w.ok(&["session", "log", sp, "--all"]));
            let red = jsonl(&w.ok(&["session", "log", f.to_str().unwrap(), "--all"]));
            let ids = |v: &Vec<Value>| {
                v.iter()
                    .map(|e| (e["id"].clone(), e["parentId"].clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids(&orig), ids(&red));
        }
    }
    let o = w
        .pi()
        .args(["session", "export", sp, "--redact-pattern", "("])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn tree_views_for_big_trees() {
    let w = World::new();
    let f = copy(&w, &fixture("sessions/gen-200-s1.jsonl"));
    let f = f.to_str().unwrap();
    insta::assert_snapshot!(w.snaps(&[
        &["session", "tree", f, "--only", "branches"],
        &["session", "tree", f, "--only", "compactions", "--format", "human"],
        &["session", "tree", f, "--depth", "0", "--around", "ec1b2724", "--context", "3"],
        &["session", "tree", f, "--only", "user", "--around", "46f57327", "--context", "1"],
        &["session", "tree", f, "--depth", "1", "--json"],
    ]), @r#"
    $ pi session tree [ROOT]/gen-200-s1.jsonl --only branches
    status: 0
    ----- stdout -----
    • 139f7110 assistant: which while trait buffer async already summary therefore `buf()` pipeline json until refactor tree async ui run of when.Type height during rename rustc const argument model clippy compacti…
      └─ 46f57327 user: ns height compaction index but because just also: Fails our flags types ui allocation await format string let vector here lines test map summary look clippy. ``` } const ent
         83acfb7e assistant: m with parse ui implement your should rename stream? Editor return function therefore I changes during update until message therefore fix be id! ## Jest id but `err()` and index let's argu…
         └─ ec1b2724 [branch summary]: The user explored a different conversation branch before returning here. Summary of that exploration: ## Goal t tokens default write! - Option just height still command first just c…
         24452ecf [bash] )` ls index cursor a otherwise component string. File can refactor width cargo const unless rustc hook edit they unless you how. - Format value remove test grep path typescript?Compile change …
    • dec6dd5a [branch summary]: The user explored a different conversation branch before returning here. Summary of that exploration: ## Goal ormat listener index render ``` ``` const writer = timestamp.children(1…
    • 10f04b49 [bash]: rg -n "buildSessionContext" packages
      ├─ 780dabba user: le: But vector async `value()`
      └─ f11b3de5 user: read @crates/pi-session/src/values.rs and Case pointer also allocation passes extension test changes vitest listener thinking writer. Parent but struct label error messages where keybinding inp…
    • e89f841f user: read @packages/ai/src/providers/dir.rs and tor be test actually vitest: Ui during handle width jest append trait maybe then changes id borrow. Just where check rustc implement after result only…
    ----- stderr -----

    $ pi session tree [ROOT]/gen-200-s1.jsonl --only compactions --format human
    status: 0
    ----- stdout -----
         └─ ec1b2724 [branch summary]: The user explored a different conversation branch before returning here. Summary of that exploration: ## Goal t tokens default write! - Option just height still command first just c…
    • dec6dd5a [branch summary]: The user explored a different conversation branch before returning here. Summary of that exploration: ## Goal ormat listener index render ``` ``` const writer = timestamp.children(1…
    ----- stderr -----

    $ pi session tree [ROOT]/gen-200-s1.jsonl --depth 0 --around ec1b2724 --context 3
    status: 0
    ----- stdout -----
      ⋮ 19 rows above
    • 8d19821f [bash] ing command our should test model lifetime only how Async your events until npm not reader ui probably return case co
    • 139f7110 assistant: which while trait buffer async already summary therefore `buf()` pipeline json until refactor tree async ui run of when.Type height during rename rustc const argument model clippy compacti…
      └─ … 85 entries in this branch (--depth shows more)
    • dec6dd5a [branch summary]: The user explored a different conversation branch before returning here. Summary of that exploration: ## Goal ormat listener index render ``` ``` const writer = timestamp.children(1…
    • 10f04b49 [bash]: rg -n "buildSessionContext" packages
      ├─ … 10 entries in this branch (--depth shows more)
      └─ … 64 entries in this branch (--depth shows more)
      ⋮ 18 rows below
    ----- stderr -----

    $ pi session tree [ROOT]/gen-200-s1.jsonl --only user --around 46f57327 --context 1
    status: 0
    ----- stdout -----
    • 8712b8bc user: eady memory vector pytest event. Provider value append compile id update pytest check then cust
      └─ 46f57327 user: ns height compaction index but because just also: Fails our flags types ui allocation await format string let vector here lines test map summary look clippy. ``` } const ent
            1cddee9c user: read @src/modes/rpc/compaction-toolCall.md and nt before look our provider code where.Tool await writer entries types assistant implement build command. - Find buffer result component check unt…
      ⋮ 9 rows below
    ----- stderr -----

    $ pi session tree [ROOT]/gen-200-s1.jsonl --depth 1 --json
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: --depth, --only and --around shape the text view; --json is always the whole tree
    "#);
    let every = copy(&w, &every_type());
    insta::assert_snapshot!(w.snaps(&[
        &["session", "tree", every.to_str().unwrap(), "--only", "labels"],
        &["session", "tree", every.to_str().unwrap(), "--depth", "0"],
    ]), @"
    $ pi session tree [ROOT]/every-type.jsonl --only labels
    status: 0
    ----- stdout -----
    • e0000004 [bug report] user: The parser test fails on CI. Here is the screenshot:
    ----- stderr -----

    $ pi session tree [ROOT]/every-type.jsonl --depth 0
    status: 0
    ----- stdout -----
    • e0000001 [title: Fix the flaky parser test]
    • e0000002 [model: claude-sonnet-4-5]
    • e0000003 [thinking: high]
    • e0000004 [bug report] user: The parser test fails on CI. Here is the screenshot:
    • e0000005 assistant: Let me look at the test. ```rust fn parse() -> u32 { 42 } ``` → read src/parser.rs, bash cargo test parser
      └─ … 2 entries in this branch (--depth shows more)
    • e0000006 [read] fn parse(s: &str) -> u32 { s.trim().parse().unwrap() } // line 4 // line 5 // line 6 // line 7 // line 8
    • e0000007 [bash] error: running 1 test test parser ... FAILED Command exited with code 101
    • e0000008 assistant: The input has a trailing comma. I will fix it. → edit src/parser.rs
    • e0000009 [edit] Successfully replaced 1 block(s) in src/parser.rs.
    • e0000010 assistant: Fixed: the parser now ignores a trailing comma.
    • e0000011 [label: bug report]
    • e0000014 [branch summary]: Tried the **locale** theory; it was a dead end.
    • e0000015 [bash]: git status --short
    • e0000016 [reminder]: Remember to run clippy.
    • e0000017 [custom: todo-state]
    • e0000018 [compaction: 12k tokens]
    • e0000019 user: Thanks! Now run clippy.
    • e0000020 assistant: → bash cargo clippy
    • e0000021 [future_entry_type]  ← leaf
    ----- stderr -----
    ");
    // Without the new options --json is as it was; piped with them, the text view.
    let plain = w.ok(&["session", "tree", f]);
    assert!(plain.starts_with('{'));
}

/// Generated sessions (`gen_session.py` shapes: many branches, repeated compactions,
/// thinking, tool errors) read the same way through every format.
#[test]
fn every_format_on_generated_sessions() {
    let w = World::new();
    for n in 1..=3 {
        let f = fixture(&format!("sessions/gen-200-s{n}.jsonl"));
        let f = f.to_str().unwrap();
        let text = w.ok(&["session", "show", f, "--thinking", "--full"]);
        let md = w.ok(&["session", "show", f, "--format", "md", "--thinking"]);
        let md_all = w.ok(&["session", "export", f, "--format", "md", "--all"]);
        // Every user message of the active path is in the text and Markdown views, and
        // every user message of the session in the --all export.
        let path = jsonl(&w.ok(&["session", "log", f]));
        let all = jsonl(&w.ok(&["session", "log", f, "--all"]));
        let first_line = |e: &Value| -> Option<String> {
            if e["message"]["role"] != "user" {
                return None;
            }
            let c = &e["message"]["content"];
            let t = match c {
                Value::String(s) => s.clone(),
                _ => c
                    .as_array()?
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            t.lines()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_owned())
        };
        for e in &path {
            if let Some(l) = first_line(e) {
                assert!(text.contains(&l), "gen-200-s{n}: {l}");
                assert!(md.contains(&l), "gen-200-s{n}: {l}");
            }
        }
        for e in &all {
            if let Some(l) = first_line(e) {
                assert!(md_all.contains(&l), "gen-200-s{n}: {l}");
            }
        }
        assert!(text.contains("thinking:"));
        assert!(text.contains("┃ compaction:") || text.contains("┃ branch summary"));
        assert!(text.lines().last().unwrap().starts_with("models:") || text.contains("total:"));
    }
}

/// Fields of unexpected types, lines that are not entries, a torn last line: every view
/// still shows what it can and exits 0.
#[test]
fn odd_files_are_shown_without_failing() {
    let w = World::new();
    let lines = [
        json!({"type":"session","version":3,"id":"s","timestamp":5,"cwd":7}),
        json!({"type":"message","id":"a","parentId":null,"timestamp":{"x":1},"message":{"role":"user","content":42}}),
        json!({"type":"message","id":"b","parentId":"a","timestamp":"nope","message":{"role":"assistant","content":"plain string","usage":"lots","model":5,"stopReason":null}}),
        json!({"type":"message","id":"c","parentId":"b","message":{"role":"assistant","content":[{"type":"toolCall","id":9,"name":null,"arguments":"rm -rf"},{"type":"thinking"},{"type":"image","data":5}]}}),
        json!({"type":"message","id":"d","parentId":"c","message":{"role":"toolResult","toolCallId":9,"content":"not an array","details":{"diff":3}}}),
        json!({"type":"message","id":"e","parentId":"d","message":"not an object"}),
        json!({"type":"compaction","id":"f","parentId":"e","summary":null,"tokensBefore":"many"}),
        json!({"type":"label","id":"g","parentId":"f","targetId":5,"label":["x"]}),
        json!({"type":"message","id":"h","parentId":"g","message":{"role":"wizard","content":[]}}),
        json!([1, 2, 3]),
        json!({"type":"branch_summary","id":"i","parentId":"zzz","summary":"[x](javascript:alert(1))"}),
    ];
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    text.push_str("{\"type\":\"message\",\"id\":\"torn\",\"par");
    let f = w.write("odd.jsonl", text);
    let f = f.to_str().unwrap();
    for args in [
        vec!["session", "show", f, "--full", "--thinking"],
        vec!["session", "show", f, "--format", "md"],
        vec![
            "session", "export", f, "--format", "md", "--all", "--redact",
        ],
        vec!["session", "export", f, "--format", "html", "--redact"],
        vec!["session", "export", f, "--format", "jsonl", "--redact"],
        vec!["session", "tree", f, "--depth", "0", "--only", "user"],
    ] {
        let o = w.pi().args(&args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stdout.is_empty(), "{args:?}");
    }
    let p = page(&w.ok(&["session", "export", f, "--format", "html"]));
    check_page(&p, 9);
}
