//! Codex CLI rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`), modern
//! (`{timestamp, type, payload}` lines) and legacy (a bare header, then bare response items).
//!
//! One pass, linear: response items become messages (the items of one model response, up to
//! its `token_count`, one assistant message; tool outputs `toolResult`s), the `event_msg`
//! copies of the conversation fill in what the response items lack, `turn_context` model
//! changes become `model_change` entries, `compacted` a compaction, and the rest is kept as
//! `custom` entries. Entries are held back only until the end of a turn, so memory follows
//! the longest turn, not the file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader};
use std::path::Path;

use serde_json::{Map, Value, json};

use super::{
    Builder, Conversion, Format, Lines, PartKind, Pricer, Skipped, Tokens, norm_ts, parse_line,
    to_vec,
};

const BOILERPLATE: &[&str] = &[
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<permissions instructions>",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
    "<turn_aborted>",
];

struct Pending {
    key: String,
    ts: String,
    ms: i64,
    content: Vec<Value>,
}

enum Held {
    Message {
        id: String,
        ts: String,
        msg: Value,
        usage_set: bool,
    },
    Entry {
        id: String,
        ty: &'static str,
        ts: String,
        fields: Vec<(&'static str, Vec<u8>)>,
    },
}

struct State<'p> {
    b: Builder<'p>,
    provider: String,
    model: String,
    last_model: Option<String>,
    prev: Option<String>,
    pending: Option<Pending>,
    held: Vec<Held>,
    calls: HashMap<String, (String, String)>,
    last_user: Option<String>,
    agent_texts: Vec<String>,
}

fn text_blocks(c: &Value) -> Vec<Value> {
    let Some(a) = c.as_array() else {
        return match c.as_str() {
            Some(s) => vec![json!({"type": "text", "text": s})],
            None => Vec::new(),
        };
    };
    a.iter()
        .filter_map(|b| match b["type"].as_str() {
            Some("input_text" | "output_text" | "text") => {
                Some(json!({"type": "text", "text": b["text"].as_str().unwrap_or("")}))
            }
            Some("input_image") => {
                let url = b["image_url"].as_str().unwrap_or("");
                match url
                    .strip_prefix("data:")
                    .and_then(|r| r.split_once(";base64,"))
                {
                    Some((mime, data)) => {
                        Some(json!({"type": "image", "data": data, "mimeType": mime}))
                    }
                    None => Some(json!({"type": "text", "text": format!("[image: {url}]")})),
                }
            }
            _ => None,
        })
        .collect()
}

fn joined(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

impl<'p> State<'p> {
    fn pending(&mut self, key: &str, ts: &str, ms: i64) -> &mut Pending {
        self.pending.get_or_insert_with(|| Pending {
            key: key.to_owned(),
            ts: ts.to_owned(),
            ms,
            content: Vec::new(),
        })
    }

    /// Ends the assistant message being gathered.
    fn finish(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        if p.content.is_empty() {
            return;
        }
        if self.last_model.as_deref().is_some_and(|m| m != self.model) && !self.model.is_empty() {
            let id = self.b.id_for(&format!("{}:model", p.key));
            self.held.push(Held::Entry {
                id,
                ty: "model_change",
                ts: p.ts.clone(),
                fields: vec![
                    ("provider", to_vec(&json!(self.provider))),
                    ("modelId", to_vec(&json!(self.model))),
                ],
            });
        }
        self.last_model = Some(self.model.clone());
        let calls = p.content.iter().any(|c| c["type"] == "toolCall");
        let t = Tokens::default();
        let usage_set = false;
        let msg = json!({
            "role": "assistant",
            "content": p.content,
            "api": "openai-responses",
            "provider": self.provider,
            "model": self.model,
            "usage": self.b.usage(&self.provider, &self.model, &t),
            "stopReason": if calls { "toolUse" } else { "stop" },
            "timestamp": p.ms,
        });
        let id = self.b.id_for(&p.key);
        self.held.push(Held::Message {
            id,
            ts: p.ts,
            msg,
            usage_set,
        });
        self.last_user = None;
    }

    fn usage(&mut self, key: &str, ts: &str, t: Tokens) {
        self.finish();
        for h in self.held.iter_mut().rev() {
            if let Held::Message { msg, usage_set, .. } = h
                && msg["role"] == "assistant"
            {
                if *usage_set {
                    break;
                }
                msg["usage"] = self.b.usage(&self.provider, &self.model, &t);
                *usage_set = true;
                return;
            }
        }
        // No response to attach it to (a file of token counts only): a `usage` entry.
        let id = self.b.id_for(key);
        self.held.push(Held::Entry {
            id,
            ty: "usage",
            ts: ts.to_owned(),
            fields: vec![
                ("kind", to_vec(&json!("import"))),
                ("provider", to_vec(&json!(self.provider))),
                ("model", to_vec(&json!(self.model))),
                (
                    "usage",
                    to_vec(&self.b.usage(&self.provider, &self.model, &t)),
                ),
                (
                    "note",
                    to_vec(&json!("tokens counted without a response in the source")),
                ),
            ],
        });
    }

    fn message(&mut self, key: &str, ts: &str, msg: Value) {
        let id = self.b.id_for(key);
        self.held.push(Held::Message {
            id,
            ts: ts.to_owned(),
            msg,
            usage_set: true,
        });
    }

    /// Writes what the turn holds.
    fn flush(&mut self) -> io::Result<()> {
        self.finish();
        for h in std::mem::take(&mut self.held) {
            match h {
                Held::Message { id, ts, msg, .. } => {
                    self.b.message(&id, self.prev.as_deref(), &ts, &msg)?;
                    self.prev = Some(id);
                }
                Held::Entry { id, ty, ts, fields } => {
                    self.b.entry(ty, &id, self.prev.as_deref(), &ts, &fields)?;
                    self.prev = Some(id);
                }
            }
        }
        self.agent_texts.clear();
        Ok(())
    }
}

fn counts(v: &Value) -> Option<(u64, u64, u64)> {
    if !v.is_object() {
        return None;
    }
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    Some((
        n("input_tokens"),
        n("cached_input_tokens"),
        n("output_tokens"),
    ))
}

/// The file as read so far, besides the entries.
struct Header {
    id: Option<String>,
    cwd: Option<String>,
    start_ms: Option<i64>,
    kind: PartKind,
    parent_id: Option<String>,
    /// `session_meta` lines seen.
    metas: u32,
    /// The start of this rollout (its own `session_meta`).
    own_ms: i64,
    prev_total: Option<(u64, u64, u64)>,
    last_ts: String,
    /// Lines 1 to this one repeat an earlier rollout of the same folder byte for byte: a
    /// fork written without a `session_meta`, whose replay is neither written nor counted.
    replay_lines: u64,
}

/// A rollout without a `session_meta` that begins with the lines of an earlier one of its
/// folder (by name: Codex names them by their start) continues it, as a fork does: the
/// earlier file's stem (its id) and how many lines are shared. The longest such prefix
/// wins; a file that shares nothing, or starts with a `session_meta`, is no such fork.
fn prefix_parent(path: &Path) -> io::Result<Option<(String, u64)>> {
    use std::io::BufRead;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(None);
    };
    let mut first = Vec::new();
    BufReader::new(File::open(path)?).read_until(b'\n', &mut first)?;
    if first.is_empty() || first.windows(14).any(|w| w == b"\"session_meta\"") {
        return Ok(None);
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut earlier: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "jsonl") && p.file_name().is_some_and(|n| n < name)
        })
        .collect();
    earlier.sort();
    let mut best: Option<(String, u64)> = None;
    for p in earlier {
        // The two files line by line, as long as they agree: one line of each in memory.
        let mut ours = BufReader::new(File::open(path)?);
        let mut theirs = BufReader::new(File::open(&p)?);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut shared = 0u64;
        let own_follows = loop {
            a.clear();
            b.clear();
            if ours.read_until(b'\n', &mut a)? == 0 {
                break false;
            }
            theirs.read_until(b'\n', &mut b)?;
            let trim = |l: &[u8]| l.strip_suffix(b"\n").unwrap_or(l).to_vec();
            if trim(&a) != trim(&b) || trim(&a).is_empty() {
                break true;
            }
            shared += 1;
        };
        // Something of its own must follow the shared lines.
        if shared > 0 && own_follows && best.as_ref().is_none_or(|(_, n)| shared > *n) {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            best = Some((stem, shared));
        }
    }
    Ok(best)
}

/// One line: its number, key for ids, time, and object.
struct Src {
    line: u64,
    key: String,
    ts: String,
    ms: i64,
    m: Map<String, Value>,
}

pub(super) fn convert(path: &Path, price: Pricer<'_>) -> io::Result<Conversion> {
    let file = File::open(path)?;
    let mut lines = Lines::new(BufReader::with_capacity(1 << 16, file));
    let mut st = State {
        b: Builder::new(Format::Codex, price)?,
        provider: "openai".to_owned(),
        model: String::new(),
        last_model: None,
        prev: None,
        pending: None,
        held: Vec::new(),
        calls: HashMap::new(),
        last_user: None,
        agent_texts: Vec::new(),
    };
    let mut h = Header {
        id: None,
        cwd: None,
        start_ms: None,
        kind: PartKind::Main,
        parent_id: None,
        metas: 0,
        own_ms: i64::MAX,
        prev_total: None,
        last_ts: String::new(),
        replay_lines: 0,
    };
    if let Some((parent, shared)) = prefix_parent(path)? {
        h.kind = PartKind::Fork;
        h.parent_id = Some(parent);
        h.replay_lines = shared;
    }
    let mut skipped = Vec::new();
    while lines.next_line()? {
        let line = lines.number;
        let m = match parse_line(&lines.buf) {
            None => continue,
            Some(Err(reason)) => {
                skipped.push(Skipped { line, reason });
                continue;
            }
            Some(Ok(m)) => m,
        };
        let tsv = m.get("timestamp").and_then(norm_ts);
        let (ts, ms) = match &tsv {
            Some((t, ms)) => (t.clone(), *ms),
            None => (
                h.last_ts.clone(),
                pi_base::clock::parse_iso(&h.last_ts).unwrap_or(0),
            ),
        };
        if h.start_ms.is_none() && tsv.is_some() {
            h.start_ms = Some(ms);
        }
        h.last_ts.clone_from(&ts);
        let src = Src {
            line,
            key: format!("L{line}"),
            ts,
            ms,
            m,
        };
        st.line(&mut h, src)?;
    }
    st.flush()?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = h.id.unwrap_or(stem);
    let part = st.b.finish(
        id.clone(),
        id,
        h.kind,
        h.cwd,
        h.start_ms.unwrap_or(0),
        h.parent_id,
    );
    Ok(Conversion {
        format: Format::Codex,
        parts: vec![part],
        skipped,
        repairs: Vec::new(),
    })
}

impl State<'_> {
    fn keep(&mut self, s: Src, kind: &str, unknown: bool) -> io::Result<()> {
        self.b
            .custom(&s.key, &s.ts, s.line, kind, unknown, Value::Object(s.m))
    }

    fn line(&mut self, h: &mut Header, s: Src) -> io::Result<()> {
        let ty =
            s.m.get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
        // A legacy header.
        if s.line == 1 && ty.is_empty() && s.m.contains_key("id") {
            h.id = s.m["id"].as_str().map(str::to_owned);
            return self.keep(s, "header", false);
        }
        if s.m.get("record_type").is_some() {
            return self.keep(s, "state", false);
        }
        // A fork's or subagent's replay of its parent (its history up to the fork's own
        // start, with the parent's times or the fork's instant, sometimes after the
        // parent's session_meta) is neither written nor counted.
        let replay = (h.kind != PartKind::Main && h.metas >= 1 && s.ms <= h.own_ms)
            || s.line <= h.replay_lines;
        let (ty, payload) = match ty.as_str() {
            "session_meta" | "turn_context" | "response_item" | "event_msg" | "compacted" => (
                ty.clone(),
                s.m.get("payload").cloned().unwrap_or(Value::Null),
            ),
            // A legacy rollout's bare response items.
            "message"
            | "function_call"
            | "function_call_output"
            | "custom_tool_call"
            | "custom_tool_call_output"
            | "reasoning"
            | "local_shell_call"
            | "web_search_call" => ("response_item".to_owned(), Value::Object(s.m.clone())),
            _ if replay => return Ok(()),
            _ => return self.keep(s, &ty, true),
        };
        let sub = payload["type"].as_str().unwrap_or("").to_owned();
        if replay {
            if ty == "session_meta" {
                h.metas += 1;
            }
            // The model in effect carries on into what the fork adds.
            if ty == "turn_context"
                && let Some(model) = payload["model"].as_str()
            {
                self.model = model.to_owned();
            }
            if ty == "event_msg"
                && sub == "token_count"
                && let Some(t) = counts(&payload["info"]["total_token_usage"])
            {
                h.prev_total = Some(t);
            }
            return Ok(());
        }
        match ty.as_str() {
            "session_meta" => self.meta(h, s, &payload),
            "turn_context" => {
                if let Some(model) = payload["model"].as_str() {
                    self.model = model.to_owned();
                }
                self.keep(s, "turn_context", false)
            }
            "compacted" => self.compacted(h, &s, &payload),
            "response_item" => self.item(s, &sub, &payload),
            _ => self.event(h, s, &sub, &payload),
        }
    }

    fn meta(&mut self, h: &mut Header, s: Src, payload: &Value) -> io::Result<()> {
        h.metas += 1;
        if h.metas > 1 {
            return self.keep(s, "session_meta", false);
        }
        h.id = payload["id"].as_str().map(str::to_owned).or(h.id.take());
        h.cwd = payload["cwd"].as_str().map(str::to_owned);
        if let Some(p) = payload["model_provider"].as_str() {
            self.provider = p.to_owned();
        }
        h.own_ms = payload
            .get("timestamp")
            .and_then(norm_ts)
            .map_or(s.ms, |t| t.1);
        if let Some(f) = payload["forked_from_id"].as_str() {
            h.kind = PartKind::Fork;
            h.parent_id = Some(f.to_owned());
        } else if let Some(p) = payload.pointer("/source/subagent/thread_spawn/parent_thread_id") {
            h.kind = PartKind::Subagent;
            h.parent_id = p.as_str().map(str::to_owned);
        }
        self.keep(s, "session_meta", false)
    }

    fn compacted(&mut self, h: &Header, s: &Src, payload: &Value) -> io::Result<()> {
        self.flush()?;
        let cid = self.b.id_for(&s.key);
        let fields = vec![
            (
                "summary",
                to_vec(&json!(payload["message"].as_str().unwrap_or(""))),
            ),
            ("firstKeptEntryId", to_vec(&json!(cid))),
            (
                "tokensBefore",
                to_vec(&json!(h.prev_total.map_or(0, |t| t.0))),
            ),
            (
                "details",
                to_vec(&json!({"replacementHistory": payload["replacement_history"]})),
            ),
            ("fromHook", b"false".to_vec()),
        ];
        self.b
            .entry("compaction", &cid, self.prev.as_deref(), &s.ts, &fields)?;
        self.prev = Some(cid);
        Ok(())
    }

    fn item(&mut self, s: Src, sub: &str, payload: &Value) -> io::Result<()> {
        match sub {
            "message" => self.item_message(s, payload),
            "reasoning" => {
                let summary: Vec<&str> = payload["summary"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|s| s["text"].as_str()).collect())
                    .unwrap_or_default();
                let mut t = json!({
                    "type": "thinking",
                    "thinking": summary.join("\n\n"),
                    // The reasoning item as the Responses API returned it, to be sent back.
                    "thinkingSignature": serde_json::to_string(payload).unwrap_or_default(),
                });
                if summary.is_empty() {
                    t["redacted"] = json!(true);
                }
                self.pending(&s.key, &s.ts, s.ms).content.push(t);
                Ok(())
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let call = tool_call(sub, payload);
                let id = call["id"].as_str().unwrap_or("").to_owned();
                let name = call["name"].as_str().unwrap_or("").to_owned();
                let call_id = payload["call_id"]
                    .as_str()
                    .or(payload["id"].as_str())
                    .unwrap_or("");
                self.calls.insert(call_id.to_owned(), (id, name));
                self.pending(&s.key, &s.ts, s.ms).content.push(call);
                Ok(())
            }
            "function_call_output" | "custom_tool_call_output" => {
                self.finish();
                let call_id = payload["call_id"].as_str().unwrap_or("");
                let (id, name) = self
                    .calls
                    .get(call_id)
                    .cloned()
                    .unwrap_or_else(|| (call_id.to_owned(), String::new()));
                let msg = tool_result(&id, &name, &payload["output"], s.ms);
                self.message(&s.key, &s.ts, msg);
                Ok(())
            }
            other => {
                let k = format!("response_item/{other}");
                self.keep(s, &k, false)
            }
        }
    }

    fn item_message(&mut self, s: Src, payload: &Value) -> io::Result<()> {
        let role = payload["role"].as_str().unwrap_or("").to_owned();
        let blocks = text_blocks(&payload["content"]);
        let text = joined(&blocks);
        match role.as_str() {
            "user" => {
                let t = text.trim_start();
                if BOILERPLATE.iter().any(|b| t.starts_with(b)) {
                    return self.keep(s, "context", false);
                }
                // Else a prompt, unless the copy of one imported from its event.
                if self.last_user.as_deref() != Some(text.as_str()) {
                    self.flush()?;
                    let msg = json!({"role": "user", "content": blocks, "timestamp": s.ms});
                    self.message(&s.key, &s.ts, msg);
                    self.last_user = Some(text);
                }
                Ok(())
            }
            "assistant" => {
                for blk in blocks {
                    let t = blk["text"].as_str().unwrap_or("").to_owned();
                    if let Some(k) = self.agent_texts.iter().position(|x| *x == t) {
                        self.agent_texts.remove(k);
                        continue;
                    }
                    self.pending(&s.key, &s.ts, s.ms).content.push(blk);
                }
                Ok(())
            }
            _ => self.keep(s, &role, false),
        }
    }

    /// Whether the response being gathered, or one held, has this text already.
    fn has_text(&self, text: &str) -> bool {
        let in_content = |c: &[Value]| c.iter().any(|c| c["text"] == text);
        self.pending
            .as_ref()
            .is_some_and(|p| in_content(&p.content))
            || self.held.iter().any(|h| match h {
                Held::Message { msg, .. } => {
                    msg["role"] == "assistant"
                        && msg["content"].as_array().is_some_and(|a| in_content(a))
                }
                Held::Entry { .. } => false,
            })
    }

    fn event(&mut self, h: &mut Header, s: Src, sub: &str, payload: &Value) -> io::Result<()> {
        match sub {
            "user_message" => {
                let text = payload["message"].as_str().unwrap_or("").to_owned();
                if self.last_user.as_deref() != Some(text.as_str()) && !text.is_empty() {
                    self.flush()?;
                    let content = json!([{"type": "text", "text": text}]);
                    let msg = json!({"role": "user", "content": content, "timestamp": s.ms});
                    self.message(&s.key, &s.ts, msg);
                    self.last_user = Some(text);
                }
                Ok(())
            }
            "agent_message" => {
                let text = payload["message"].as_str().unwrap_or("").to_owned();
                if !text.is_empty() && !self.has_text(&text) {
                    let blk = json!({"type": "text", "text": text});
                    self.pending(&s.key, &s.ts, s.ms).content.push(blk);
                    self.agent_texts.push(text);
                }
                Ok(())
            }
            "token_count" => {
                if let Some(total) = counts(&payload["info"]["total_token_usage"])
                    && h.prev_total != Some(total)
                {
                    let p = h.prev_total.unwrap_or((0, 0, 0));
                    let last = counts(&payload["info"]["last_token_usage"]).unwrap_or((
                        total.0.saturating_sub(p.0),
                        total.1.saturating_sub(p.1),
                        total.2.saturating_sub(p.2),
                    ));
                    let t = Tokens {
                        input: last.0.saturating_sub(last.1),
                        output: last.2,
                        cache_read: last.1,
                        cache_write: 0,
                    };
                    self.usage(&format!("{}:usage", s.key), &s.ts, t);
                    h.prev_total = Some(total);
                }
                self.keep(s, "token_count", false)
            }
            "task_started" => {
                self.flush()?;
                self.keep(s, "task_started", false)
            }
            // agent_reasoning is a copy of the reasoning item's summary.
            other => {
                let k = format!("event_msg/{other}");
                self.keep(s, &k, false)
            }
        }
    }
}

/// A function, custom tool or local shell call as a pi `toolCall` (its id `call_id|item id`
/// when the item has one, as pi's Responses provider writes it).
fn tool_call(sub: &str, payload: &Value) -> Value {
    let call_id = payload["call_id"]
        .as_str()
        .or(payload["id"].as_str())
        .unwrap_or("");
    let id = match payload["id"].as_str() {
        Some(item) if payload["call_id"].is_string() => format!("{call_id}|{item}"),
        _ => call_id.to_owned(),
    };
    let name = match sub {
        "local_shell_call" => "local_shell",
        _ => payload["name"].as_str().unwrap_or(""),
    };
    let args = match sub {
        "function_call" => {
            let raw = payload["arguments"].as_str().unwrap_or("");
            match serde_json::from_str::<Value>(raw) {
                Ok(v @ Value::Object(_)) => v,
                _ => json!({"raw": raw}),
            }
        }
        "custom_tool_call" => json!({"input": payload["input"]}),
        _ => json!({"action": payload["action"]}),
    };
    json!({"type": "toolCall", "id": id, "name": name, "arguments": args})
}

/// A tool's output as a `toolResult` (a JSON-encoded `{output, metadata}` unwrapped, its
/// metadata as `details`).
fn tool_result(id: &str, name: &str, out: &Value, ms: i64) -> Value {
    let mut details = Value::Null;
    let content = match out {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(o)) if o.contains_key("output") && o.contains_key("metadata") => {
                details = o["metadata"].clone();
                text_blocks(&o["output"])
            }
            _ => vec![json!({"type": "text", "text": s})],
        },
        Value::Object(o) => {
            details = o.get("metadata").cloned().unwrap_or(Value::Null);
            text_blocks(o.get("content").or(o.get("output")).unwrap_or(&Value::Null))
        }
        other => text_blocks(other),
    };
    let mut msg = json!({
        "role": "toolResult",
        "toolCallId": id,
        "toolName": name,
        "content": content,
        "isError": details["exit_code"].as_i64().is_some_and(|c| c != 0),
        "timestamp": ms,
    });
    if !details.is_null() {
        msg["details"] = details;
    }
    msg
}
