//! The session as one self-contained HTML page: every branch, a tree to switch between
//! them, search, Markdown, highlighted code, expandable tool output, diffs, images.
//!
//! The page loads nothing: its style and script are inline, allowed by a Content Security
//! Policy that names their SHA-256 hashes and forbids everything else (`default-src
//! 'none'`, images only as `data:` URLs). Every text from the session is HTML-escaped here,
//! in Rust; Markdown is rendered here too, with raw HTML in it shown as text.
//!
//! Large sessions stay light in the browser: each entry's article is written as inert text
//! in a `<script type="text/x-pi">` element (the browser's parser only scans it), and the
//! page's script turns an article into elements only when it is about to be seen. The
//! index (ids, parents, kinds, one-line previews) is one JSON block that drives the tree,
//! search and branch switching. Articles are ASCII (other characters as character
//! references), so the browser keeps them in one byte per character.

pub mod markdown;

use std::io::{self, Write};

use base64::Engine;
use serde_json::{Value, json};

use super::redact::{self, Redactor};
use super::{
    Block, Body, Content, Item, Meta, Pairer, Summary, ToolCall, ToolResult, datetime, highlight,
};
use pi_base::clock;
use pi_session::Session;
use pi_session::tree::Tree;

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// Longest tool output or file content highlighted (longer ones are plain: the page stays
/// small).
const HIGHLIGHT_OUTPUT: usize = 8 * 1024;

/// Lines of tool output visible before the output is expanded.
pub const PREVIEW_LINES: usize = 6;

/// Appends `s` escaped for HTML text and attribute values: `& < > " '` as entities, every
/// other non-ASCII character as a numeric reference, and the characters that could steer a
/// terminal or reorder text (controls, bidirectional overrides) as visible escapes
/// (`\u{1b}`), as in the terminal views. Newlines and tabs are kept; a carriage return
/// before a newline is dropped.
pub fn escape_into(s: &str, out: &mut String) {
    escape_with(s, out, true);
}

/// [`escape_into`] for element text only (never an attribute value): quotes stay as they
/// are.
pub fn escape_text_into(s: &str, out: &mut String) {
    escape_with(s, out, false);
}

/// Bytes that are copied as they are (in text; quotes depend on the context).
const fn plain_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b < 0x7f {
        t[b] = true;
        b += 1;
    }
    t[b'\n' as usize] = true;
    t[b'\t' as usize] = true;
    t[b'&' as usize] = false;
    t[b'<' as usize] = false;
    t[b'>' as usize] = false;
    t
}
static PLAIN: [bool; 256] = plain_table();

fn escape_with(s: &str, out: &mut String, quotes: bool) {
    use std::fmt::Write as _;
    let b = s.as_bytes();
    out.reserve(s.len());
    let mut i = 0;
    while i < b.len() {
        let run = i;
        while i < b.len() && PLAIN[b[i] as usize] && !(quotes && (b[i] == b'"' || b[i] == b'\'')) {
            i += 1;
        }
        if i > run {
            out.push_str(&s[run..i]);
        }
        if i >= b.len() {
            break;
        }
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            '\r' if b.get(i + 1) == Some(&b'\n') => {}
            c if crate::output::is_unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => {
                let _ = write!(out, "&#x{:x};", u32::from(c));
            }
        }
        i += c.len_utf8();
    }
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    escape_into(s, &mut out);
    out
}

/// A `data:` URL for an image block, when its data is base64 of an image of the type it
/// claims (PNG, JPEG, GIF or WebP, checked by its first bytes): anything else would be a
/// broken image, or not an image at all.
fn image_src(mime: &str, data: &str) -> Option<String> {
    let mime = mime.trim().to_ascii_lowercase();
    let magic: &[&[u8]] = match mime.as_str() {
        "image/png" => &[b"\x89PNG\r\n\x1a\n"],
        "image/jpeg" | "image/jpg" => &[b"\xff\xd8\xff"],
        "image/gif" => &[b"GIF87a", b"GIF89a"],
        "image/webp" => &[b"RIFF"],
        _ => return None,
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    if !magic.iter().any(|m| bytes.starts_with(m)) {
        return None;
    }
    Some(format!("data:{mime};base64,{data}"))
}

struct Article<'a> {
    out: &'a mut String,
}

impl Article<'_> {
    fn push(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn text(&mut self, s: &str) {
        escape_into(s, self.out);
    }

    fn head(&mut self, who: &str, class: &str, meta: &Meta, extra: &str) {
        self.push("<div class=\"eh\"><span class=\"who ");
        self.push(class);
        self.push("\">");
        self.text(who);
        self.push("</span>");
        if !extra.is_empty() {
            self.push("<span class=\"x\">");
            self.text(extra);
            self.push("</span>");
        }
        if let Some(l) = &meta.label {
            self.push("<span class=\"label\">");
            self.text(l);
            self.push("</span>");
        }
        self.push("<span class=\"sp\"></span>");
        if let Some(t) = meta.time {
            self.push("<time datetime=\"");
            self.push(&clock::format_iso(t));
            self.push("\">");
            self.push(&datetime(t));
            self.push("</time>");
        }
        self.push("<a class=\"id\" href=\"#");
        self.text(&meta.id);
        self.push("\">#");
        self.text(&meta.id);
        self.push("</a></div>");
    }

    fn markdown(&mut self, text: &str) {
        self.push("<div class=\"md\">");
        markdown::render(text, self.out);
        self.push("</div>");
    }

    fn images(&mut self, c: &Content) {
        for (mime, data) in c.images() {
            match image_src(mime, data) {
                Some(src) => {
                    self.push("<figure><img alt=\"image\" src=\"");
                    self.push(&src);
                    self.push("\"></figure>");
                }
                None => {
                    self.push("<p class=\"note\">[image not shown: not a valid ");
                    self.text(mime);
                    self.push(" image]</p>");
                }
            }
        }
    }

    fn content(&mut self, c: &Content) {
        let t = c.text();
        if !t.trim().is_empty() {
            self.markdown(&t);
        }
        self.images(c);
    }

    /// Output in a `<pre>`, clipped to [`PREVIEW_LINES`] until expanded; a diff when `diff`.
    fn output(&mut self, text: &str, diff: bool, lang: highlight::Lang) {
        let text = text.trim_end_matches('\n');
        if text.is_empty() {
            return;
        }
        let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1;
        let class = if lines > PREVIEW_LINES {
            "out clip"
        } else {
            "out"
        };
        self.push("<pre class=\"");
        self.push(class);
        if diff {
            self.push(" diff");
        }
        self.push("\"><code>");
        if diff {
            for line in text.split('\n') {
                let tag = match line.as_bytes().first() {
                    Some(b'+') => Some("ins"),
                    Some(b'-') => Some("del"),
                    _ => None,
                };
                match tag {
                    Some(t) => {
                        self.push("<");
                        self.push(t);
                        self.push(">");
                        escape_text_into(line, self.out);
                        self.push("</");
                        self.push(t);
                        self.push(">");
                    }
                    None => {
                        escape_text_into(line, self.out);
                        self.push("\n");
                    }
                }
            }
        } else if text.len() <= HIGHLIGHT_OUTPUT {
            highlight::highlight(text, lang, self.out);
        } else {
            escape_text_into(text, self.out);
        }
        self.push("</code></pre>");
    }

    fn result_body(&mut self, call: Option<&ToolCall>, r: &ToolResult) {
        let lang = call
            .filter(|c| c.name == "read")
            .and_then(|c| c.args.get("path").and_then(Value::as_str))
            .map_or(highlight::Lang::Plain, highlight::lang_of);
        if let Some(d) = r.diff() {
            self.output(d, true, highlight::Lang::Plain);
        } else {
            self.output(&r.content.text(), false, lang);
        }
        self.images(&r.content);
    }

    fn tool_call(&mut self, c: &ToolCall) {
        let result = c.result();
        let (state, mark) = match result {
            Some((_, r)) if r.is_error => ("err", "\u{2717}"),
            Some(_) => ("ok", "\u{2713}"),
            None => ("none", "\u{2026}"),
        };
        self.push("<div class=\"tool ");
        self.push(state);
        self.push("\"");
        if let Some((m, _)) = result {
            self.push(" data-r=\"");
            self.text(&m.id);
            self.push("\"");
        }
        self.push("><div class=\"call\"><span class=\"mark\">");
        self.text(mark);
        self.push("</span><span class=\"tn\">");
        self.text(&c.name);
        self.push("</span>");
        let arg = c.key_arg();
        if !arg.is_empty() {
            self.push("<code class=\"arg\">");
            self.text(&pi_base::text::truncate(&arg, 300));
            self.push("</code>");
        }
        if let Some((m, r)) = result {
            let n: usize = r
                .content
                .parts
                .iter()
                .map(|p| match p {
                    super::Part::Text(t) => {
                        let t = t.trim_end_matches('\n');
                        memchr::memchr_iter(b'\n', t.as_bytes()).count() + 1
                    }
                    super::Part::Image { .. } => 0,
                })
                .sum();
            self.push("<span class=\"n\">");
            self.text(&format!("{n} line{}", if n == 1 { "" } else { "s" }));
            self.push("</span><a class=\"id\" href=\"#");
            self.text(&m.id);
            self.push("\">#");
            self.text(&m.id);
            self.push("</a>");
        } else {
            self.push("<span class=\"n\">no result</span>");
        }
        self.push("</div>");
        // The arguments, shown when expanded: whole for most tools, as a diff for edits
        // without a stored one, as code for writes.
        let stored_diff = result.is_some_and(|(_, r)| r.diff().is_some());
        self.push("<div class=\"args\">");
        match c.name.as_str() {
            "edit" if !stored_diff => {
                let mut d = String::new();
                let mut edits: Vec<&Value> = Vec::new();
                if let Some(Value::Array(es)) = c.args.get("edits") {
                    edits.extend(es);
                } else {
                    edits.push(&c.args);
                }
                for e in edits {
                    for (k, sign) in [("oldText", '-'), ("newText", '+')] {
                        if let Some(t) = e.get(k).and_then(Value::as_str) {
                            for l in t.split('\n') {
                                d.push(sign);
                                d.push_str(l);
                                d.push('\n');
                            }
                        }
                    }
                }
                self.output(&d, true, highlight::Lang::Plain);
            }
            "write" => {
                let lang = c
                    .args
                    .get("path")
                    .and_then(Value::as_str)
                    .map_or(highlight::Lang::Plain, highlight::lang_of);
                if let Some(t) = c.args.get("content").and_then(Value::as_str) {
                    self.output(t, false, lang);
                }
            }
            // The key argument is on the call line: the rest only when there is more.
            _ if c.args.as_object().is_some_and(|o| o.len() <= 1) && !arg.is_empty() => {}
            _ => {
                let pretty = serde_json::to_string_pretty(&c.args).unwrap_or_default();
                self.output(&pretty, false, highlight::Lang::Json);
            }
        }
        self.push("</div>");
        if let Some((_, r)) = result {
            self.result_body(Some(c), r);
        }
        self.push("</div>");
    }

    fn item(&mut self, item: &Item) {
        let meta = &item.meta;
        match &item.body {
            Body::User(c) => {
                self.head("User", "user", meta, "");
                self.content(c);
            }
            Body::Assistant(a) => {
                self.head("Assistant", "asst", meta, &a.model);
                for b in &a.blocks {
                    match b {
                        Block::Text(t) if !t.trim().is_empty() => self.markdown(t),
                        Block::Text(_) => {}
                        Block::Thinking { text, redacted } => {
                            self.push("<details class=\"think\"><summary>Thinking</summary>");
                            if *redacted {
                                self.push("<p class=\"note\">(redacted by the provider)</p>");
                            } else {
                                self.markdown(text);
                            }
                            self.push("</details>");
                        }
                        Block::ToolCall(c) => self.tool_call(c),
                    }
                }
                if let Some(e) = &a.error {
                    self.push("<p class=\"error\">Error: ");
                    self.text(e);
                    self.push("</p>");
                } else if a.stop_reason == "aborted" {
                    self.push("<p class=\"error\">(aborted)</p>");
                }
                if let Some(u) = &a.usage {
                    self.push("<div class=\"usage\">");
                    self.text(&super::usage_line(u));
                    self.push("</div>");
                }
            }
            Body::ToolResult(r) => {
                self.head("Tool result", "tool", meta, &r.name);
                let state = if r.is_error { "err" } else { "ok" };
                self.push("<div class=\"tool open ");
                self.push(state);
                self.push("\">");
                self.result_body(None, r);
                self.push("</div>");
            }
            Body::Bash(b) => {
                self.head("User ran", "user", meta, "");
                self.push("<div class=\"tool open ");
                let failed = b.cancelled || b.exit_code.is_some_and(|c| c != 0.0);
                self.push(if failed { "err" } else { "ok" });
                self.push("\"><div class=\"call\"><span class=\"tn\">$</span><code class=\"arg\">");
                self.text(&b.command);
                self.push("</code></div>");
                let mut out = b.output.clone();
                if b.cancelled {
                    out.push_str("\n(cancelled)");
                } else if let Some(c) = b.exit_code.filter(|c| *c != 0.0) {
                    out.push_str(&format!("\n(exit code {c})"));
                }
                self.output(&out, false, highlight::Lang::Plain);
                self.push("</div>");
            }
            Body::CustomMessage {
                custom_type,
                content,
                ..
            } => {
                self.head("Extension", "ext", meta, custom_type);
                self.content(content);
            }
            Body::Compaction {
                summary,
                tokens_before,
                ..
            } => {
                let what = format!("{} tokens summarized", super::tokens(*tokens_before));
                self.head("Compaction", "sum", meta, &what);
                self.markdown(summary);
            }
            Body::BranchSummary { summary, from_id } => {
                let what = if from_id.is_empty() {
                    String::new()
                } else {
                    format!("from {from_id}")
                };
                self.head("Branch summary", "sum", meta, &what);
                self.markdown(summary);
            }
            Body::ModelChange { provider, model_id } => {
                self.head("Model", "note", meta, &format!("{provider}/{model_id}"));
            }
            Body::ThinkingLevel(l) => self.head("Thinking level", "note", meta, l),
            Body::Label { target, label } => {
                let what = match label {
                    Some(l) => format!("\u{201c}{l}\u{201d} on {target}"),
                    None => format!("cleared on {target}"),
                };
                self.head("Label", "note", meta, &what);
            }
            Body::SessionInfo(n) => {
                let what = match n {
                    Some(n) => format!("named \u{201c}{n}\u{201d}"),
                    None => "name cleared".to_owned(),
                };
                self.head("Session", "note", meta, &what);
            }
            Body::Custom(t) => self.head("Extension state", "note", meta, t),
            Body::Note { head, text } => self.head(head, "note", meta, text),
            Body::Other(t) => self.head("Entry", "note", meta, t),
        }
    }
}

/// One-letter kinds for the page's index.
fn kind_code(item: &Item) -> char {
    match &item.body {
        Body::User(_) => 'u',
        Body::Assistant(a) if a.error.is_some() => 'A',
        Body::Assistant(_) => 'a',
        Body::ToolResult(r) if r.is_error => 'e',
        Body::ToolResult(_) => 't',
        Body::Bash(_) => 'b',
        Body::CustomMessage { .. } => 'c',
        Body::Compaction { .. } => 'C',
        Body::BranchSummary { .. } => 'B',
        Body::ModelChange { .. } => 'm',
        Body::ThinkingLevel(_) => 'h',
        Body::Label { .. } => 'l',
        Body::SessionInfo(_) => 'i',
        Body::Custom(_) => 'x',
        Body::Note { .. } => 'n',
        Body::Other(_) => 'o',
    }
}

/// Facts about a written page.
#[derive(Debug, Default, Clone)]
pub struct Written {
    pub articles: usize,
    pub bytes: u64,
}

struct Counting<'w> {
    w: &'w mut dyn Write,
    n: u64,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.w.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// `sha256-…` of a text, for the Content Security Policy.
fn csp_hash(s: &str) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, s.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(d.as_ref())
    )
}

/// The Content Security Policy of every page: nothing but the inline style and script
/// (by hash) and `data:` images.
pub fn csp() -> String {
    format!(
        "default-src 'none'; img-src data:; style-src {}; script-src {}; base-uri 'none'; form-action 'none'",
        csp_hash(CSS),
        csp_hash(JS)
    )
}

/// JSON for a `<script type="application/json">`: `<` escaped so that no `</script>` can
/// end it early.
fn script_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_else(|_| "null".to_owned())
        .replace('<', "\\u003c")
}

/// Writes the page of the whole session to `w`, opened on the branch of `leaf`.
pub fn write_page(
    s: &Session,
    leaf: Option<u32>,
    labels: &super::Marks,
    mut redactor: Option<&mut Redactor>,
    w: &mut dyn Write,
) -> io::Result<Written> {
    let n = s.entries.len();
    let mut summary = super::summary_of(s, redactor.as_deref_mut());
    let mut w = Counting { w, n: 0 };
    let title = summary.name.clone().unwrap_or_else(|| "Session".to_owned());
    write!(
        w,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta name=\"referrer\" content=\"no-referrer\">\n<title>{} \u{2014} pi session</title><link rel=\"icon\" href=\"data:,\">\n<style>{CSS}</style></head>\n<body>\n",
        csp(),
        esc(&title)
    )?;
    let mut kinds = String::with_capacity(n);
    let mut previews: Vec<String> = Vec::with_capacity(n);
    let mut times: Vec<i64> = vec![0; n];
    let mut show: Vec<i64> = vec![-1; n];
    let mut written = Written {
        ..Written::default()
    };
    let mut pairer = Pairer::default();
    let mut absorbed: Vec<(u32, u32)> = Vec::new();
    let threads = super::threads();
    // Batches of entries: lines read in order, parsed and rendered on every core, the
    // pairing of results with calls done in between, in order.
    const BATCH: usize = 4096;
    let all: Vec<u32> = (0..n as u32).collect();
    for batch in all.chunks(BATCH) {
        let mut lines: Vec<(u32, Vec<u8>)> = Vec::with_capacity(batch.len());
        s.for_each_line(batch, |i, line| {
            lines.push((i, line.to_vec()));
            Ok(())
        })?;
        let items = parse_items(lines, threads, labels, redactor.as_deref_mut());
        let mut ready: Vec<Item> = Vec::new();
        for item in items.into_iter().flatten() {
            let i = item.meta.index as usize;
            // Entries that did not parse get a placeholder.
            while previews.len() < i {
                previews.push("[unreadable entry]".to_owned());
                kinds.push('o');
            }
            previews.push(item.preview());
            kinds.push(kind_code(&item));
            times[i] = item.meta.time.unwrap_or(0);
            summary.add(&item);
            ready.extend(pairer.push(item, &mut |r, a| absorbed.push((r.index, a.index))));
        }
        write_holders(&mut w, ready, threads, &mut show, &mut written)?;
    }
    if let Some(it) = pairer.finish() {
        write_holders(&mut w, vec![it], 1, &mut show, &mut written)?;
    }
    while previews.len() < n {
        previews.push("[unreadable entry]".to_owned());
        kinds.push('o');
    }
    for (r, a) in absorbed {
        show[r as usize] = i64::from(a);
    }
    let parent = tree_parents(s, &times);
    let label_list = label_list(s, labels, redactor);
    let ids: Vec<&str> = s.entries.iter().map(|r| r.id.as_str()).collect();
    let leaf = leaf.map_or(-1, i64::from);
    write_shell(&mut w, &summary)?;
    let data = json!({
        "v": 1,
        "ids": ids,
        "parent": parent,
        "kind": kinds,
        "prev": previews,
        "ts": times,
        "show": show,
        "labels": label_list,
        "leaf": leaf,
    });
    w.write_all(b"<script type=\"application/json\" id=\"pi-data\">")?;
    w.write_all(script_json(&data).as_bytes())?;
    w.write_all(b"</script>\n<script>")?;
    w.write_all(JS.as_bytes())?;
    w.write_all(b"</script>\n</body></html>\n")?;
    w.flush()?;
    written.bytes = w.n;
    Ok(written)
}

/// The items of a batch of `(index, line)`, parsed (and redacted) on `threads` threads.
fn parse_items(
    lines: Vec<(u32, Vec<u8>)>,
    threads: usize,
    labels: &super::Marks,
    redactor: Option<&mut Redactor>,
) -> Vec<Option<Item>> {
    match redactor {
        None => pi_base::par::map(lines, threads, |(i, line)| {
            super::item_of(i, &line, labels, None)
        }),
        Some(red) => redact::par_parts(lines, red, |part, r| {
            part.into_iter()
                .map(|(i, line)| super::item_of(i, &line, labels, Some(&mut *r)))
                .collect::<Vec<_>>()
        })
        .into_iter()
        .flatten()
        .collect(),
    }
}

/// Each entry's parent as the tree view cuts them (no cycles; -1 for roots).
fn tree_parents(s: &Session, times: &[i64]) -> Vec<i64> {
    let tree = Tree::build(s, times);
    let mut parent: Vec<i64> = vec![-1; s.entries.len()];
    for i in 0..s.entries.len() as u32 {
        for &c in tree.children(i) {
            parent[c as usize] = i64::from(i);
        }
    }
    parent
}

/// The labels of the page: `[entry index, label]` pairs, redacted when asked.
fn label_list(
    s: &Session,
    labels: &super::Marks,
    mut redactor: Option<&mut Redactor>,
) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, r) in s.entries.iter().enumerate() {
        if let Some(l) = labels.labels.get(r.id.as_str()) {
            let l = match redactor.as_deref_mut() {
                Some(red) => red.text(l),
                None => l.clone(),
            };
            out.push(json!([i, l]));
        }
    }
    out
}

/// Renders the articles of `items` (in parallel) and writes them as inert script elements.
fn write_holders(
    w: &mut dyn Write,
    items: Vec<Item>,
    threads: usize,
    show: &mut [i64],
    written: &mut Written,
) -> io::Result<()> {
    for it in &items {
        let i = it.meta.index as usize;
        show[i] = i as i64;
    }
    let html = pi_base::par::map(items, threads, |item| {
        let mut h = String::with_capacity(2048);
        h.push_str("<script type=\"text/x-pi\" id=\"pi-h");
        h.push_str(&item.meta.index.to_string());
        h.push_str("\">");
        Article { out: &mut h }.item(&item);
        h.push_str("</script>\n");
        h
    });
    written.articles += html.len();
    for h in html {
        w.write_all(h.as_bytes())?;
    }
    Ok(())
}

/// The visible frame of the page: the header with the session's facts, the tree pane and
/// the conversation pane (filled by the script).
fn write_shell(w: &mut dyn Write, s: &Summary) -> io::Result<()> {
    let mut h = String::new();
    h.push_str("<div id=\"app\"><aside id=\"side\"><div class=\"tools\"><input id=\"q\" type=\"search\" placeholder=\"Search messages, labels, tool calls\" aria-label=\"Search\"><select id=\"only\" aria-label=\"Show\"><option value=\"\">All entries</option><option value=\"u\">User messages</option><option value=\"l\">Labelled</option><option value=\"t\">Tool calls</option><option value=\"e\">Errors</option><option value=\"s\">Summaries</option></select></div><div id=\"count\"></div><div id=\"rows\" tabindex=\"0\"><div id=\"spacer\"></div></div></aside><main id=\"main\"><header id=\"head\"><h1>");
    escape_into(s.name.as_deref().unwrap_or("Session"), &mut h);
    h.push_str("</h1><p class=\"sub\"><code>");
    escape_into(&s.cwd, &mut h);
    h.push_str("</code>");
    if let Some(t) = s.created {
        h.push_str(" \u{b7} ");
        h.push_str(&datetime(t));
        h.push_str(" UTC");
    }
    h.push_str(" \u{b7} session <code>");
    escape_into(&s.session_id, &mut h);
    h.push_str("</code></p><dl class=\"stats\">");
    let mut stat = |k: &str, v: &str| {
        h.push_str("<div><dt>");
        escape_into(k, &mut h);
        h.push_str("</dt><dd>");
        escape_into(v, &mut h);
        h.push_str("</dd></div>");
    };
    stat("entries", &s.entries.to_string());
    stat("user messages", &s.user_messages.to_string());
    stat("assistant messages", &s.assistant_messages.to_string());
    stat("tool calls", &s.tool_calls.to_string());
    stat("input tokens", &super::tokens(s.usage.input));
    stat("output tokens", &super::tokens(s.usage.output));
    stat("cache read", &super::tokens(s.usage.cache_read));
    stat("cache write", &super::tokens(s.usage.cache_write));
    stat("cost", &super::dollars(s.usage.cost));
    h.push_str("</dl>");
    if !s.models.is_empty() {
        h.push_str("<p class=\"models\">");
        for m in &s.models {
            h.push_str("<code>");
            escape_into(m, &mut h);
            h.push_str("</code> ");
        }
        h.push_str("</p>");
    }
    h.push_str("<p class=\"branch\" id=\"branch\"></p></header><noscript><p>The conversation is shown by the page's script; enable JavaScript to read it.</p></noscript><div id=\"conv\"></div></main></div>\n");
    w.write_all(h.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_quotes_controls_and_non_ascii() {
        assert_eq!(
            esc("<a href='x'>&\"é\u{1b}\r\n\u{202e}"),
            "&lt;a href=&#x27;x&#x27;&gt;&amp;&quot;&#xe9;\\u{1b}\n\\u{202e}"
        );
        assert!(image_src("image/png", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==").is_some());
        assert!(
            image_src("image/png", "aGVsbG8gd29ybGQ=").is_none(),
            "not a PNG"
        );
        assert!(image_src("image/svg+xml", "PHN2Zz4=").is_none());
        assert!(image_src("image/png", "x\" onerror=\"alert(1)").is_none());
        assert!(csp().starts_with("default-src 'none'; img-src data:; style-src 'sha256-"));
    }
}
