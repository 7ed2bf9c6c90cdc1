//! Sessions as people read them: the entries of a path (or of the whole tree) turned into a
//! typed transcript ([`Item`]), and its renderings: text for a terminal or a pipe
//! ([`text`]), GitHub-flavoured Markdown ([`markdown`]) and a self-contained HTML page
//! ([`html`]). [`redact`] takes secrets out of any of them, and of the JSONL itself.
//!
//! Entries are parsed leniently: a field of an unexpected type is treated as absent, so any
//! line that is a JSON object gives an item. Tool results are shown with the tool call they
//! answer ([`Pairer`]): a result that directly follows its call's assistant message (through
//! other results of the same message) is attached to the call.

pub mod highlight;
pub mod html;
pub mod markdown;
pub mod redact;
pub mod roff;
pub mod run;
pub mod text;
pub mod wrap;

use std::collections::HashMap;
use std::io;

use serde_json::Value;

use pi_base::clock;
use pi_session::Session;
use redact::Redactor;

/// What every item carries besides its content.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    /// Index of the entry in the session (file order).
    pub index: u32,
    pub id: String,
    pub parent_id: Option<String>,
    /// The entry's `timestamp`, in Unix milliseconds.
    pub time: Option<i64>,
    /// The label set on the entry, if any.
    pub label: Option<String>,
    /// How a `context_edit` on the path shown changes the entry for the model.
    pub edit: Option<Edit>,
}

/// A piece of user, tool or custom content.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Image { mime: String, data: String },
}

/// Content as the format stores it: a string or an array of text and image blocks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Content {
    pub parts: Vec<Part>,
}

impl Content {
    fn of(v: Option<&Value>) -> Content {
        let mut parts = Vec::new();
        match v {
            Some(Value::String(s)) => parts.push(Part::Text(s.clone())),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match str_of(b, "type") {
                        Some("text") => {
                            if let Some(t) = str_of(b, "text") {
                                parts.push(Part::Text(t.to_owned()));
                            }
                        }
                        Some("image") => parts.push(Part::Image {
                            mime: str_of(b, "mimeType").unwrap_or_default().to_owned(),
                            data: str_of(b, "data").unwrap_or_default().to_owned(),
                        }),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        Content { parts }
    }

    /// The text parts joined by newlines.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        if let [Part::Text(t)] = self.parts.as_slice() {
            return std::borrow::Cow::Borrowed(t);
        }
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                Part::Image { .. } => None,
            })
            .collect();
        std::borrow::Cow::Owned(texts.join("\n"))
    }

    pub fn images(&self) -> impl Iterator<Item = (&str, &str)> {
        self.parts.iter().filter_map(|p| match p {
            Part::Image { mime, data } => Some((mime.as_str(), data.as_str())),
            Part::Text(_) => None,
        })
    }
}

/// Token counts and cost of one assistant message (or a sum of them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    /// Dollars (`cost.total`, or the sum of its parts).
    pub cost: f64,
}

impl Usage {
    fn of(v: &Value) -> Option<Usage> {
        let o = v.as_object()?;
        let n = |k: &str| o.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let cost = o.get("cost").map_or(0.0, |c| {
            c.get("total").and_then(Value::as_f64).unwrap_or_else(|| {
                ["input", "output", "cacheRead", "cacheWrite"]
                    .iter()
                    .filter_map(|k| c.get(*k).and_then(Value::as_f64))
                    .sum()
            })
        });
        Some(Usage {
            input: n("input"),
            output: n("output"),
            cache_read: n("cacheRead"),
            cache_write: n("cacheWrite"),
            cost,
        })
    }

    pub fn add(&mut self, o: &Usage) {
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.cost += o.cost;
    }
}

/// A tool call of an assistant message, with its result once paired.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub args: Value,
    pub result: Option<Box<Item>>,
}

impl ToolCall {
    /// The argument that says what the call does: a path, a command, a pattern.
    pub fn key_arg(&self) -> String {
        key_arg(&self.args)
    }

    /// The result, when paired.
    pub fn result(&self) -> Option<(&Meta, &ToolResult)> {
        match self.result.as_deref() {
            Some(Item {
                meta,
                body: Body::ToolResult(r),
            }) => Some((meta, r)),
            _ => None,
        }
    }
}

/// The most telling argument of a tool call, on one line.
pub fn key_arg(args: &Value) -> String {
    for key in ["command", "path", "file_path", "pattern", "query", "url"] {
        if let Some(v) = args.get(key).and_then(Value::as_str) {
            return one_line_prefix(v, 400);
        }
    }
    match args.as_object() {
        Some(o) if !o.is_empty() => {
            let s = serde_json::to_string(args).unwrap_or_default();
            one_line_prefix(&s, 400)
        }
        _ => String::new(),
    }
}

/// Whitespace runs as single spaces, trimmed.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`one_line`] of the start of `s`: enough for a preview of `max` characters, without
/// going through a long text.
pub fn one_line_prefix(s: &str, max: usize) -> String {
    let mut end = s.len().min(max.saturating_mul(4));
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    one_line(&s[..end])
}

/// The start of the text of some content (at most about `max` characters), for previews.
fn text_prefix(c: &Content, max: usize) -> String {
    let mut out = String::new();
    for p in &c.parts {
        if let Part::Text(t) = p {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&one_line_prefix(t, max));
            if out.len() >= max {
                break;
            }
        }
    }
    out
}

/// A block of an assistant message.
#[derive(Debug, Clone)]
pub enum Block {
    Text(String),
    Thinking { text: String, redacted: bool },
    ToolCall(ToolCall),
}

#[derive(Debug, Clone, Default)]
pub struct Assistant {
    pub blocks: Vec<Block>,
    pub provider: String,
    pub model: String,
    pub usage: Option<Usage>,
    pub stop_reason: String,
    pub error: Option<String>,
}

impl Assistant {
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.blocks.iter().filter_map(|b| match b {
            Block::ToolCall(c) => Some(c),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct ToolResult {
    pub call_id: String,
    pub name: String,
    pub content: Content,
    pub is_error: bool,
    pub details: Option<Value>,
}

impl ToolResult {
    /// The diff an `edit` result stores in `details.diff`.
    pub fn diff(&self) -> Option<&str> {
        self.details.as_ref()?.get("diff")?.as_str()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Bash {
    pub command: String,
    pub output: String,
    pub exit_code: Option<f64>,
    pub cancelled: bool,
    pub truncated: bool,
    pub excluded: bool,
}

/// What an entry says.
#[derive(Debug, Clone)]
pub enum Body {
    User(Content),
    Assistant(Assistant),
    ToolResult(ToolResult),
    Bash(Bash),
    /// A `custom_message` entry or a message of role `custom`.
    CustomMessage {
        custom_type: String,
        content: Content,
        display: bool,
    },
    Compaction {
        summary: String,
        tokens_before: f64,
    },
    BranchSummary {
        summary: String,
        from_id: String,
    },
    ModelChange {
        provider: String,
        model_id: String,
    },
    ThinkingLevel(String),
    Label {
        target: String,
        label: Option<String>,
    },
    SessionInfo(Option<String>),
    /// A `custom` entry (extension state; not part of the conversation).
    Custom(String),
    /// An entry shown as one line of what it does (a system message, a context edit, a
    /// usage record): a heading and the text.
    Note {
        head: String,
        text: String,
    },
    /// An entry type or message role this program does not know.
    Other(String),
}

/// One entry, ready to render.
#[derive(Debug, Clone)]
pub struct Item {
    pub meta: Meta,
    pub body: Body,
}

fn str_of<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn string_of(v: &Value, k: &str) -> String {
    str_of(v, k).unwrap_or_default().to_owned()
}

fn bool_of(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}

impl Item {
    /// The item of an entry value; `None` when it is not an object.
    pub fn from_value(index: u32, v: &Value) -> Option<Item> {
        v.as_object()?;
        let meta = Meta {
            index,
            id: string_of(v, "id"),
            parent_id: str_of(v, "parentId").map(str::to_owned),
            time: str_of(v, "timestamp").and_then(|t| clock::parse_iso(t.trim())),
            label: None,
            edit: None,
        };
        let ty = str_of(v, "type").unwrap_or_default();
        let body = match ty {
            "message" => match v.get("message") {
                Some(m) if m.is_object() => message_body(m),
                _ => Body::Other("message".into()),
            },
            "custom_message" => Body::CustomMessage {
                custom_type: string_of(v, "customType"),
                content: Content::of(v.get("content")),
                display: v.get("display").and_then(Value::as_bool).unwrap_or(true),
            },
            "compaction" => Body::Compaction {
                summary: string_of(v, "summary"),
                tokens_before: v.get("tokensBefore").and_then(Value::as_f64).unwrap_or(0.0),
            },
            "branch_summary" => Body::BranchSummary {
                summary: string_of(v, "summary"),
                from_id: string_of(v, "fromId"),
            },
            "model_change" => Body::ModelChange {
                provider: string_of(v, "provider"),
                model_id: string_of(v, "modelId"),
            },
            "thinking_level_change" => Body::ThinkingLevel(string_of(v, "thinkingLevel")),
            "label" => Body::Label {
                target: string_of(v, "targetId"),
                label: str_of(v, "label")
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned),
            },
            "session_info" => Body::SessionInfo(
                str_of(v, "name")
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned),
            ),
            "custom" => Body::Custom(string_of(v, "customType")),
            "context_edit" => {
                let target = string_of(v, "targetId");
                let text = match v.get("replacement") {
                    Some(Value::Null) => format!("{target} left out of the model's context"),
                    Some(r) => format!(
                        "{target} sent to the model as: {}",
                        text_prefix(&Content::of(r.get("content")), 120)
                    ),
                    None => format!("{target} (no replacement given; ignored)"),
                };
                Body::Note {
                    head: "context edit".into(),
                    text,
                }
            }
            "usage" => {
                let tokens = v
                    .get("usage")
                    .and_then(|u| u.get("totalTokens"))
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                Body::Note {
                    head: format!("usage ({})", string_of(v, "kind")),
                    text: format!(
                        "{}/{}: {tokens} tokens",
                        string_of(v, "provider"),
                        string_of(v, "model")
                    ),
                }
            }
            other => Body::Other(other.to_owned()),
        };
        Some(Item { meta, body })
    }

    /// A one-line description (for the tree of the HTML page and for search).
    pub fn preview(&self) -> String {
        let s = match &self.body {
            Body::User(c) => format!("user: {}", text_prefix(c, 200)),
            Body::Assistant(a) => {
                let text: Vec<&str> = a
                    .blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<String> = a
                    .tool_calls()
                    .map(|c| {
                        let k = c.key_arg();
                        if k.is_empty() {
                            c.name.clone()
                        } else {
                            format!("{}: {k}", c.name)
                        }
                    })
                    .collect();
                let t = one_line_prefix(&text.join(" "), 200);
                let body = match (t.is_empty(), calls.is_empty()) {
                    (false, true) => t,
                    (false, false) => format!("{t} → {}", calls.join(", ")),
                    (true, false) => format!("→ {}", calls.join(", ")),
                    (true, true) => match &a.error {
                        Some(e) => format!("error: {}", one_line(e)),
                        None if a.stop_reason == "aborted" => "(aborted)".into(),
                        None => "(no content)".into(),
                    },
                };
                format!("assistant: {body}")
            }
            Body::ToolResult(r) => format!(
                "[{}]{} {}",
                r.name,
                if r.is_error { " error:" } else { "" },
                text_prefix(&r.content, 200)
            ),
            Body::Bash(b) => format!("[bash]: {}", one_line_prefix(&b.command, 200)),
            Body::CustomMessage {
                custom_type,
                content,
                ..
            } => format!("[{custom_type}]: {}", text_prefix(content, 200)),
            Body::Compaction { tokens_before, .. } => {
                format!("[compaction: {}k tokens]", (tokens_before / 1000.0).round())
            }
            Body::BranchSummary { summary, .. } => {
                format!("[branch summary]: {}", one_line_prefix(summary, 200))
            }
            Body::ModelChange { provider, model_id } => format!("[model: {provider}/{model_id}]"),
            Body::ThinkingLevel(l) => format!("[thinking: {l}]"),
            Body::Label { label, .. } => match label {
                Some(l) => format!("[label: {l}]"),
                None => "[label: (cleared)]".into(),
            },
            Body::SessionInfo(n) => match n {
                Some(n) => format!("[title: {n}]"),
                None => "[title: (cleared)]".into(),
            },
            Body::Custom(t) => format!("[custom: {t}]"),
            Body::Note { head, text } => format!("[{head}]: {}", one_line_prefix(text, 200)),
            Body::Other(t) => format!("[{t}]"),
        };
        pi_base::text::truncate(&s, 160)
    }
}

/// What a system message (reference 1.6) declares: its text's size, the sections it sets
/// or removes, the tools it adds or removes.
fn system_text(m: &Value) -> String {
    let mut parts = Vec::new();
    let text = Content::of(m.get("content"));
    let chars = text_prefix(&text, usize::MAX).chars().count();
    if chars > 0 {
        parts.push(format!("{chars} characters of text"));
    }
    if let Some(Value::Object(secs)) = m.get("sections") {
        let names: Vec<String> = secs
            .iter()
            .map(|(k, v)| {
                if v.is_null() {
                    format!("-{k}")
                } else {
                    k.clone()
                }
            })
            .collect();
        if !names.is_empty() {
            parts.push(format!("sections {}", names.join(", ")));
        }
    }
    let names = |key: &str, sign: char| -> Vec<String> {
        m.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|t| format!("{sign}{}", string_of(t, "name")))
                    .collect()
            })
            .unwrap_or_default()
    };
    let tools: Vec<String> = names("toolsAdded", '+')
        .into_iter()
        .chain(names("toolsRemoved", '-'))
        .collect();
    if !tools.is_empty() {
        parts.push(format!("tools {}", tools.join(" ")));
    }
    if parts.is_empty() {
        "(empty)".into()
    } else {
        parts.join("; ")
    }
}

fn message_body(m: &Value) -> Body {
    match str_of(m, "role").unwrap_or_default() {
        "user" => Body::User(Content::of(m.get("content"))),
        "assistant" => {
            let mut blocks = Vec::new();
            match m.get("content") {
                Some(Value::Array(bs)) => {
                    for b in bs {
                        match str_of(b, "type") {
                            Some("text") => {
                                if let Some(t) = str_of(b, "text") {
                                    blocks.push(Block::Text(t.to_owned()));
                                }
                            }
                            Some("thinking") => blocks.push(Block::Thinking {
                                text: string_of(b, "thinking"),
                                redacted: bool_of(b, "redacted"),
                            }),
                            Some("toolCall") => blocks.push(Block::ToolCall(ToolCall {
                                id: string_of(b, "id"),
                                name: string_of(b, "name"),
                                args: b.get("arguments").cloned().unwrap_or(Value::Null),
                                result: None,
                            })),
                            _ => {}
                        }
                    }
                }
                Some(Value::String(s)) => blocks.push(Block::Text(s.clone())),
                _ => {}
            }
            Body::Assistant(Assistant {
                blocks,
                provider: string_of(m, "provider"),
                model: string_of(m, "model"),
                usage: m.get("usage").and_then(Usage::of),
                stop_reason: string_of(m, "stopReason"),
                error: str_of(m, "errorMessage").map(str::to_owned),
            })
        }
        "toolResult" => Body::ToolResult(ToolResult {
            call_id: string_of(m, "toolCallId"),
            name: string_of(m, "toolName"),
            content: Content::of(m.get("content")),
            is_error: bool_of(m, "isError"),
            details: m.get("details").cloned(),
        }),
        "bashExecution" => Body::Bash(Bash {
            command: string_of(m, "command"),
            output: string_of(m, "output"),
            exit_code: m.get("exitCode").and_then(Value::as_f64),
            cancelled: bool_of(m, "cancelled"),
            truncated: bool_of(m, "truncated"),
            excluded: bool_of(m, "excludeFromContext"),
        }),
        "custom" | "hookMessage" => Body::CustomMessage {
            custom_type: string_of(m, "customType"),
            content: Content::of(m.get("content")),
            display: m.get("display").and_then(Value::as_bool).unwrap_or(true),
        },
        "branchSummary" => Body::BranchSummary {
            summary: string_of(m, "summary"),
            from_id: string_of(m, "fromId"),
        },
        "compactionSummary" => Body::Compaction {
            summary: string_of(m, "summary"),
            tokens_before: m.get("tokensBefore").and_then(Value::as_f64).unwrap_or(0.0),
        },
        "system" => Body::Note {
            head: "system prompt".into(),
            text: system_text(m),
        },
        other => Body::Other(if other.is_empty() {
            "message".to_owned()
        } else {
            other.to_owned()
        }),
    }
}

/// Attaches tool results to the calls they answer. Items go in in order; they come out in
/// the same order, except that a result attached to its call comes out inside the
/// assistant item. An assistant item with tool calls is held until an item arrives that is
/// not one of its results (or [`Pairer::finish`]).
#[derive(Default)]
pub struct Pairer {
    held: Option<Item>,
    /// Ids of the held item and of the results attached to it (a result's parent is one
    /// of them).
    chain: Vec<String>,
}

impl Pairer {
    /// Takes the next item; returns the items ready to render (zero, one or two).
    /// `absorbed` is called with every result attached to a call, and the assistant that
    /// holds it.
    pub fn push(&mut self, item: Item, absorbed: &mut dyn FnMut(&Meta, &Meta)) -> Vec<Item> {
        let mut out = Vec::new();
        if let Body::ToolResult(r) = &item.body
            && let Some(held) = &mut self.held
            && item
                .meta
                .parent_id
                .as_ref()
                .is_some_and(|p| self.chain.contains(p))
            && let Body::Assistant(a) = &mut held.body
        {
            let slot = a.blocks.iter_mut().find_map(|b| match b {
                Block::ToolCall(c) if c.result.is_none() && c.id == r.call_id => Some(c),
                _ => None,
            });
            if let Some(call) = slot {
                absorbed(&item.meta, &held.meta);
                self.chain.push(item.meta.id.clone());
                call.result = Some(Box::new(item));
                let open = a
                    .tool_calls()
                    .any(|c| c.result.is_none() && !c.id.is_empty());
                if !open {
                    out.extend(self.held.take());
                    self.chain.clear();
                }
                return out;
            }
        }
        out.extend(self.held.take());
        self.chain.clear();
        match &item.body {
            Body::Assistant(a) if a.tool_calls().next().is_some() => {
                self.chain.push(item.meta.id.clone());
                self.held = Some(item);
            }
            _ => out.push(item),
        }
        out
    }

    /// The item still held, if any.
    pub fn finish(&mut self) -> Option<Item> {
        self.chain.clear();
        self.held.take()
    }
}

/// The labels of a session's entries: entry id → label.
/// What is said about entries elsewhere in the file: their labels, and on one path the
/// `context_edit` entries that change what the model sees of them.
#[derive(Debug, Default)]
pub struct Marks {
    pub labels: HashMap<String, String>,
    pub edits: HashMap<String, Edit>,
}

/// How the latest `context_edit` on a path leaves its target in the model's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    Omitted,
    Replaced,
}

impl Marks {
    /// The latest `context_edit` of each entry among `order` (a path, root first).
    pub fn with_edits(mut self, s: &Session, order: &[u32]) -> io::Result<Marks> {
        let edits: Vec<u32> = order
            .iter()
            .copied()
            .filter(|&i| s.entries[i as usize].kind == pi_session::Kind::ContextEdit)
            .collect();
        s.for_each_line(&edits, |_, line| {
            if let Ok(v) = pi_base::json::to_value(line)
                && let Some(t) = str_of(&v, "targetId")
                && let Some(r) = v.get("replacement")
            {
                let e = if r.is_null() {
                    Edit::Omitted
                } else {
                    Edit::Replaced
                };
                self.edits.insert(t.to_owned(), e);
            }
            Ok(())
        })?;
        Ok(self)
    }
}

pub fn labels(s: &Session) -> Marks {
    Marks {
        labels: s
            .resolved_labels()
            .into_iter()
            .map(|(id, l, _)| (id.to_string(), l))
            .collect(),
        edits: HashMap::new(),
    }
}

/// Calls `f` with the item of each entry of `order` (ascending entry indexes), its label
/// set, its strings redacted first when a redactor is given. Lines that are not objects
/// are skipped.
pub fn for_each_item(
    s: &Session,
    order: &[u32],
    labels: &Marks,
    mut redactor: Option<&mut Redactor>,
    mut f: impl FnMut(Item) -> io::Result<()>,
) -> io::Result<()> {
    s.for_each_line(order, |i, line| {
        match item_of(i, line, labels, redactor.as_deref_mut()) {
            Some(item) => f(item),
            None => Ok(()),
        }
    })
}

/// [`for_each_item`] with tool results attached to their calls ([`Pairer`]): each item is
/// added to `summary`, then `f` is called with every item ready to render, the last one
/// held included.
pub fn for_each_paired(
    s: &Session,
    order: &[u32],
    labels: &Marks,
    redactor: Option<&mut Redactor>,
    summary: &mut Summary,
    mut f: impl FnMut(&Item) -> io::Result<()>,
) -> io::Result<()> {
    let mut pairer = Pairer::default();
    let mut none = |_: &Meta, _: &Meta| {};
    for_each_item(s, order, labels, redactor, |item| {
        summary.add(&item);
        for it in pairer.push(item, &mut none) {
            f(&it)?;
        }
        Ok(())
    })?;
    if let Some(it) = pairer.finish() {
        f(&it)?;
    }
    Ok(())
}

/// The item of entry `i` from its line: redacted first when a redactor is given, its label
/// set. `None` when the line is not a JSON object.
pub fn item_of(
    i: u32,
    line: &[u8],
    labels: &Marks,
    mut redactor: Option<&mut Redactor>,
) -> Option<Item> {
    let mut v = pi_base::json::to_value(line).ok()?;
    if let Some(r) = redactor.as_deref_mut() {
        r.value(&mut v);
    }
    let mut item = Item::from_value(i, &v)?;
    item.meta.label = labels.labels.get(&item.meta.id).cloned();
    item.meta.edit = labels.edits.get(&item.meta.id).copied();
    if let (Some(l), Some(r)) = (item.meta.label.as_mut(), redactor) {
        *l = r.text(l);
    }
    Some(item)
}

/// Threads for rendering: the machine's, at most 4.
pub fn threads() -> usize {
    pi_base::par::threads_at_most(4)
}

/// The header facts of a session (name, directory, creation time).
pub fn summary_of(s: &Session, redactor: Option<&mut Redactor>) -> Summary {
    let h = s.header.as_ref();
    let mut sum = Summary {
        session_id: s.session_id().to_owned(),
        name: s.name().map(str::to_owned),
        cwd: h.map(|h| h.cwd.clone()).unwrap_or_default(),
        created: h
            .and_then(|h| h.timestamp.as_deref())
            .and_then(|t| clock::parse_iso(t.trim())),
        ..Summary::default()
    };
    if let Some(r) = redactor {
        sum.name = sum.name.map(|n| r.text(&n));
        sum.cwd = r.text(&sum.cwd);
    }
    sum
}

/// Every branch of a session for a reading that shows each entry once: the path to
/// `leaf` first, then, for every other leaf of the tree in file order, the part of its path
/// not shown yet, with the entry it branches from. Each element is (branch point, entries).
pub fn branches(s: &Session, leaf: Option<u32>) -> Vec<(Option<u32>, Vec<u32>)> {
    let tree = pi_session::tree::Tree::build(s, &[]);
    let n = s.entries.len();
    let mut shown = vec![false; n];
    let mut out = Vec::new();
    let mut leaves: Vec<u32> = leaf.into_iter().collect();
    leaves.extend((0..n as u32).filter(|&i| tree.children(i).is_empty() && Some(i) != leaf));
    for l in leaves {
        let path = tree.path_to(l);
        let from = path.iter().position(|&i| !shown[i as usize]);
        let Some(from) = from else { continue };
        let point = from.checked_sub(1).map(|k| path[k]);
        let rest: Vec<u32> = path[from..].to_vec();
        for &i in &rest {
            shown[i as usize] = true;
        }
        out.push((point, rest));
    }
    out
}

/// What the header of a transcript says about a session.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub session_id: String,
    pub name: Option<String>,
    pub cwd: String,
    pub created: Option<i64>,
    /// `provider/model` of the assistant messages, in order of first use.
    pub models: Vec<String>,
    pub usage: Usage,
    pub assistant_messages: usize,
    pub user_messages: usize,
    pub tool_calls: usize,
    pub entries: usize,
}

impl Summary {
    /// Counts an item in.
    pub fn add(&mut self, item: &Item) {
        self.entries += 1;
        match &item.body {
            Body::User(_) => self.user_messages += 1,
            Body::Assistant(a) => {
                self.assistant_messages += 1;
                self.tool_calls += a.tool_calls().count();
                if let Some(u) = &a.usage {
                    self.usage.add(u);
                }
                self.add_model(&a.provider, &a.model);
            }
            Body::ModelChange { provider, model_id } => self.add_model(provider, model_id),
            _ => {}
        }
    }

    fn add_model(&mut self, provider: &str, model: &str) {
        if model.is_empty() {
            return;
        }
        let m = if provider.is_empty() {
            model.to_owned()
        } else {
            format!("{provider}/{model}")
        };
        if !self.models.contains(&m) {
            self.models.push(m);
        }
    }
}

/// `12`, `1.2k`, `45k`, `1.3M` tokens.
pub fn tokens(n: f64) -> String {
    if n < 1000.0 {
        format!("{}", n.round() as i64)
    } else if n < 10_000.0 {
        format!("{:.1}k", n / 1000.0)
    } else if n < 1_000_000.0 {
        format!("{}k", (n / 1000.0).round() as i64)
    } else {
        format!("{:.1}M", n / 1_000_000.0)
    }
}

/// `$0.0123` (four decimals under a dollar, two above).
pub fn dollars(c: f64) -> String {
    if c.abs() < 1.0 {
        format!("${c:.4}")
    } else {
        format!("${c:.2}")
    }
}

/// `2026-01-02 03:04:05` (UTC).
pub fn datetime(ms: i64) -> String {
    let iso = clock::format_iso(ms);
    match (iso.get(..10), iso.get(11..19)) {
        (Some(d), Some(t)) => format!("{d} {t}"),
        _ => iso,
    }
}

/// The usage of one message: `1.2k in · 300 out · 5k cached · $0.0123`.
pub fn usage_line(u: &Usage) -> String {
    let mut parts = vec![
        format!("{} in", tokens(u.input)),
        format!("{} out", tokens(u.output)),
    ];
    if u.cache_read > 0.0 {
        parts.push(format!("{} cache read", tokens(u.cache_read)));
    }
    if u.cache_write > 0.0 {
        parts.push(format!("{} cache write", tokens(u.cache_write)));
    }
    if u.cost > 0.0 {
        parts.push(dollars(u.cost));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(i: u32, line: &str) -> Item {
        Item::from_value(i, &serde_json::from_str(line).unwrap()).unwrap()
    }

    #[test]
    fn lenient_parsing() {
        let it = item(
            0,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":5,"message":{"role":"assistant","content":[{"type":"text","text":7},{"type":"toolCall","id":"c","name":"bash","arguments":{"command":"ls  -l\n"}}],"usage":"x"}}"#,
        );
        let Body::Assistant(a) = &it.body else {
            panic!()
        };
        assert_eq!(a.blocks.len(), 1);
        assert!(a.usage.is_none());
        assert_eq!(a.tool_calls().next().unwrap().key_arg(), "ls -l");
        assert!(it.meta.time.is_none());
        assert!(Item::from_value(0, &serde_json::json!([1])).is_none());
        assert!(matches!(item(0, "{}").body, Body::Other(_)));
    }

    #[test]
    fn results_attach_to_their_calls() {
        let a = item(
            0,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"x"}},{"type":"toolCall","id":"c2","name":"ls","arguments":{}}]}}"#,
        );
        let r1 = item(
            1,
            r#"{"type":"message","id":"r1","parentId":"a","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"hi"}]}}"#,
        );
        let r2 = item(
            2,
            r#"{"type":"message","id":"r2","parentId":"r1","message":{"role":"toolResult","toolCallId":"c2","toolName":"ls","content":"x","isError":true}}"#,
        );
        let mut p = Pairer::default();
        let mut seen = Vec::new();
        let mut abs = |r: &Meta, a: &Meta| seen.push((r.id.clone(), a.id.clone()));
        assert!(p.push(a, &mut abs).is_empty());
        assert!(p.push(r1, &mut abs).is_empty());
        let out = p.push(r2, &mut abs);
        assert_eq!(out.len(), 1);
        let Body::Assistant(a) = &out[0].body else {
            panic!()
        };
        let results: Vec<bool> = a
            .tool_calls()
            .map(|c| c.result().unwrap().1.is_error)
            .collect();
        assert_eq!(results, [false, true]);
        assert_eq!(seen.len(), 2);
        assert!(p.finish().is_none());
    }
}
