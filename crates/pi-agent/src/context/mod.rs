//! The context a model sees: from a session's active path to the messages of a provider
//! request, in the reference's four stages.
//!
//! 1. [`build`]: the path's entries become *agent messages* (upstream's
//!    `buildSessionContext`): the latest compaction's summary, the messages it kept, then
//!    everything after it; custom messages and branch summaries become messages of their own.
//! 2. [`llm::convert`]: agent messages become provider-neutral *LLM messages* (user,
//!    assistant, tool result; upstream's `convertToLlm`), with the `images.blockImages`
//!    setting applied.
//! 3. pi-ai's `transform`: the cross-provider fixes every provider applies (thinking
//!    blocks of other models, tool-call ids, unanswered tool calls, failed turns, images the
//!    model cannot read).
//! 4. pi-ai's `openai` and `anthropic` providers: the `messages` of a Chat Completions or
//!    Messages request.
//!
//! [`tokens`] holds upstream's token estimate and the compaction threshold.
//!
//! Only the entries the context needs are read: the path comes from the session index, and
//! lines are read from the latest compaction's first kept entry onwards.

pub mod llm;
pub mod settings;
pub mod tokens;

use std::collections::HashMap;
use std::io;

use pi_ai::value::{Obj, Value};
use pi_base::clock;
use pi_base::json;
use pi_session::{Kind, Session};

/// What a path says besides its messages: the settings in effect at its end.
#[derive(Debug, Default)]
pub struct Info {
    /// The thinking level (`"off"` unless the path changes it; `None` when the latest
    /// `thinking_level_change` entry has no level).
    pub thinking_level: Option<Value>,
    /// `{provider, modelId}` of the latest `model_change` or assistant message on the path.
    pub model: Option<Value>,
    /// The latest compaction entry on the path.
    pub compaction: Option<u32>,
    /// Entries on the path.
    pub path_len: usize,
    /// Entries that could not be turned into messages.
    pub warnings: Vec<String>,
}

impl Info {
    /// The model as `(provider, id)` strings, if both are strings.
    pub fn model_ids(&self) -> Option<(String, String)> {
        let m = self.model.as_ref()?;
        let p = m.get("provider")?.as_jstr()?.text().into_owned();
        let id = m.get("modelId")?.as_jstr()?.text().into_owned();
        Some((p, id))
    }
}

/// One agent message of a context, as [`build_each`] hands it out.
#[derive(Debug)]
pub struct Message {
    pub value: Value,
    /// The entry it comes from.
    pub entry: u32,
    /// Whether it comes after the latest compaction (not its summary or a kept message).
    pub after_compaction: bool,
}

/// The agent messages of a path, collected.
#[derive(Debug, Default)]
pub struct Context {
    pub info: Info,
    pub messages: Vec<Value>,
    /// For each message, the index of the entry it comes from.
    pub sources: Vec<u32>,
    /// The first message that comes after the latest compaction.
    pub after_compaction: usize,
}

/// `new Date(v).getTime()`: ISO strings and numbers; `null` (NaN) for anything else.
pub(crate) fn js_date(v: Option<&Value>) -> Value {
    const MAX: f64 = 8.64e15;
    let ms = match v {
        Some(Value::Str(s)) => clock::parse_iso(s.text().trim()).map(|ms| ms as f64),
        Some(Value::Num(n)) if n.is_finite() && n.abs() <= MAX => Some(n.trunc() + 0.0),
        Some(Value::Null) => Some(0.0),
        Some(Value::Bool(b)) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    };
    match ms {
        Some(ms) if ms.abs() <= MAX => Value::Num(ms),
        _ => Value::Null,
    }
}

fn entry_message(entry: Value, kind: Kind) -> Option<Value> {
    let Value::Obj(mut o) = entry else {
        return None;
    };
    match kind {
        Kind::Message => match o.remove("message") {
            Some(Value::Obj(mut m)) => {
                // Hand-edited or old files can hold a message without content; the reference
                // 1.6 gives it an empty one (`""` for system messages, `[]` for the others).
                if matches!(m.get("content"), None | Some(Value::Null)) {
                    match m.get("role").and_then(Value::as_jstr).map(|r| r.text()) {
                        Some(r) if r == "system" => m.set("content", Value::str("")),
                        Some(r) if r == "user" || r == "assistant" || r == "toolResult" => {
                            m.set("content", Value::Arr(Vec::new()))
                        }
                        _ => {}
                    }
                }
                Some(Value::Obj(m))
            }
            _ => None,
        },
        Kind::CustomMessage => {
            let mut m = Obj::new();
            m.set("role", Value::str("custom"));
            for k in ["customType", "content", "display", "details"] {
                m.set_opt(k, o.remove(k));
            }
            m.set("timestamp", js_date(o.get("timestamp")));
            Some(Value::Obj(m))
        }
        Kind::BranchSummary => {
            let summary = o.remove("summary").filter(|s| s.truthy())?;
            let mut m = Obj::new();
            m.set("role", Value::str("branchSummary"));
            m.set("summary", summary);
            m.set_opt("fromId", o.remove("fromId"));
            m.set("timestamp", js_date(o.get("timestamp")));
            Some(Value::Obj(m))
        }
        _ => None,
    }
}

/// Whether an entry kind can produce a message.
fn produces(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Message | Kind::CustomMessage | Kind::BranchSummary
    )
}

/// Text of a message's content (pi-ai's `contentText`): a string as it is, or the text
/// blocks joined by `sep` (a missing or null text as `""`, as `Array.prototype.join` has it).
pub(crate) fn content_text(c: Option<&Value>, sep: &str) -> String {
    match c {
        Some(Value::Str(s)) => s.text().into_owned(),
        Some(Value::Arr(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").is_some_and(|t| t.is_str("text")))
            .map(|b| match b.get("text") {
                None | Some(Value::Null) => String::new(),
                Some(v) => Value::js_string(Some(v)).text().into_owned(),
            })
            .collect::<Vec<_>>()
            .join(sep),
        _ => String::new(),
    }
}

/// The reference 1.6's `getCurrentSystemMessage`: the system messages among `messages`
/// replayed into one, with the prompt text of each appended, sections patched by name
/// (`null` removes one) and tools added and removed by name. `None` without any.
pub fn current_system<'a>(messages: impl IntoIterator<Item = &'a Value>) -> Option<Value> {
    let mut content: Vec<String> = Vec::new();
    let mut sections: Vec<(String, Value)> = Vec::new();
    let mut tools: Vec<(String, Value)> = Vec::new();
    let mut timestamp: Option<Value> = None;
    let mut any = false;
    let name_of = |t: &Value| {
        t.get("name")
            .map(|n| Value::js_string(Some(n)).text().into_owned())
            .unwrap_or_else(|| "undefined".into())
    };
    for m in messages.into_iter().filter(|m| is_system(m)) {
        any = true;
        if timestamp.as_ref().is_none_or(|t| matches!(t, Value::Null)) {
            timestamp = m.get("timestamp").cloned();
        }
        let text = content_text(m.get("content"), "\n");
        if !text.is_empty() {
            content.push(text);
        }
        if let Some(Value::Obj(secs)) = m.get("sections") {
            for (k, v) in secs.iter() {
                let k = k.text().into_owned();
                let at = sections.iter().position(|(n, _)| *n == k);
                match (v, at) {
                    (Value::Null, Some(p)) => {
                        sections.remove(p);
                    }
                    (Value::Null, None) => {}
                    (v, Some(p)) => sections[p].1 = v.clone(),
                    (v, None) => sections.push((k, v.clone())),
                }
            }
        }
        for t in m
            .get("toolsRemoved")
            .and_then(Value::as_arr)
            .unwrap_or_default()
        {
            let n = name_of(t);
            tools.retain(|(x, _)| *x != n);
        }
        for t in m
            .get("toolsAdded")
            .and_then(Value::as_arr)
            .unwrap_or_default()
        {
            let n = name_of(t);
            match tools.iter().position(|(x, _)| *x == n) {
                Some(p) => tools[p].1 = t.clone(),
                None => tools.push((n, t.clone())),
            }
        }
    }
    let timestamp = timestamp.filter(|t| !matches!(t, Value::Null));
    if !any || (timestamp.is_none() && tools.is_empty()) {
        return None;
    }
    let mut o = Obj::new();
    o.set("role", Value::str("system"));
    o.set("content", Value::str(&content.join("\n\n")));
    if !sections.is_empty() {
        let mut so = Obj::new();
        for (k, v) in sections {
            so.set(&k, v);
        }
        o.set("sections", Value::Obj(so));
    }
    if !tools.is_empty() {
        o.set(
            "toolsAdded",
            Value::Arr(tools.into_iter().map(|(_, t)| t).collect()),
        );
    }
    o.set("timestamp", timestamp.unwrap_or(Value::Num(0.0)));
    Some(Value::Obj(o))
}

/// Every system message on the path to `leaf`, before and after compactions, in order: what
/// the reference 1.6 replays to restore a session's tool loadout.
pub fn branch_system_messages(s: &Session, leaf: Option<u32>) -> io::Result<Vec<Value>> {
    let Some(leaf) = leaf else {
        return Ok(Vec::new());
    };
    let path: Vec<u32> = s
        .path_to(leaf)
        .into_iter()
        .filter(|&i| s.entries[i as usize].kind == Kind::Message)
        .collect();
    let mut out = Vec::new();
    s.for_each_line(&path, |_, line| {
        // Most messages are not system messages: skip them without parsing.
        if memchr::memmem::find(line, b"\"system\"").is_some()
            && let Some(m) = Value::parse(line).and_then(|e| entry_message(e, Kind::Message))
            && is_system(&m)
        {
            out.push(m);
        }
        Ok(())
    })?;
    Ok(out)
}

fn is_system(m: &Value) -> bool {
    m.get("role").is_some_and(|r| r.is_str("system"))
}

/// The latest `context_edit` of each target among `selected` (in path order, so a later
/// edit replaces an earlier one). An edit without a `replacement` is ignored.
fn edits(s: &Session, selected: &[u32]) -> io::Result<HashMap<String, Value>> {
    let mut out = HashMap::new();
    let ids: Vec<u32> = selected
        .iter()
        .copied()
        .filter(|&i| s.entries[i as usize].kind == Kind::ContextEdit)
        .collect();
    if ids.is_empty() {
        return Ok(out);
    }
    let mut found: Vec<(u32, String, Value)> = Vec::with_capacity(ids.len());
    s.for_each_line(&ids, |i, line| {
        if let Some(Value::Obj(mut e)) = Value::parse(line)
            && let Some(Value::Str(target)) = e.remove("targetId")
            && let Some(r) = e.remove("replacement")
        {
            found.push((i, target.text().into_owned(), r));
        }
        Ok(())
    })?;
    // Lines come in file order; the path's order decides which edit is the latest.
    let rank: HashMap<u32, usize> = selected.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    found.sort_by_key(|(i, _, _)| rank.get(i).copied().unwrap_or(usize::MAX));
    for (_, target, r) in found {
        out.insert(target, r);
    }
    Ok(out)
}

/// A message of the context: `None` when left out, because it is a system message of a
/// compaction's kept range (`kept`) or a `context_edit` omits it.
fn project(m: Value, edit: Option<&Value>, kept: bool) -> Option<Value> {
    if kept && is_system(&m) {
        return None;
    }
    edited(m, edit)
}

/// A message as a `context_edit` leaves it (reference 1.6's `projectContextEntry`): `None`
/// when the edit omits it; otherwise the content of user, assistant, tool-result and custom
/// messages replaced (text becomes one text block for assistants and tool results, which
/// need blocks), other messages unchanged.
fn edited(m: Value, edit: Option<&Value>) -> Option<Value> {
    let Some(r) = edit else {
        return Some(m);
    };
    if matches!(r, Value::Null) {
        return None;
    }
    let Value::Obj(mut o) = m else {
        return Some(m);
    };
    let role = o
        .get("role")
        .and_then(Value::as_jstr)
        .map(|r| r.text().into_owned());
    let blocks = match role.as_deref() {
        Some("assistant" | "toolResult") => true,
        Some("user" | "custom") => false,
        _ => return Some(Value::Obj(o)),
    };
    match r.get("content") {
        Some(Value::Str(t)) if blocks => {
            let mut b = Obj::new();
            b.set("type", Value::str("text"));
            b.set("text", Value::Str(t.clone()));
            o.set("content", Value::Arr(vec![Value::Obj(b)]));
        }
        Some(c) => o.set("content", c.clone()),
        None => {
            o.remove("content");
        }
    }
    Some(Value::Obj(o))
}

/// Builds the agent messages of the path from the root to `leaf` (upstream's
/// `buildSessionContext`); `None` gives the empty context.
pub fn build(s: &Session, leaf: Option<u32>) -> io::Result<Context> {
    let plan = Plan::new(s, leaf)?;
    let mut c = Context::default();
    let mut after = None;
    let warnings = plan.each(s, |m| {
        if m.after_compaction && after.is_none() {
            after = Some(c.messages.len());
        }
        c.messages.push(m.value);
        c.sources.push(m.entry);
        Ok(())
    })?;
    c.after_compaction = match (plan.info.compaction, after) {
        (None, _) => 0,
        (Some(_), Some(a)) => a,
        (Some(_), None) => c.messages.len(),
    };
    c.info = plan.info;
    c.info.warnings = warnings;
    Ok(c)
}

/// The context of a path, worked out from the index and the few entries that decide it
/// (settings, the latest compaction), before any message is read.
#[derive(Debug)]
pub struct Plan {
    pub info: Info,
    /// The latest compaction's messages: its system checkpoint, if it has one, and its
    /// summary.
    head: Vec<Message>,
    /// The latest `context_edit` of each entry in the context, by target id: the
    /// replacement, `Null` to leave the target out (reference 1.6).
    edits: HashMap<String, Value>,
    /// The context's entries besides the latest compaction (1.6's `buildContextEntries`):
    /// those the compaction kept, then those after it (the whole path without one).
    selected: Vec<u32>,
    /// How many of `selected` the latest compaction kept.
    kept: usize,
    /// The entries that produce messages, in order.
    order: Vec<u32>,
    /// Index in `order` of the first entry after the latest compaction.
    first_after: usize,
}

impl Plan {
    pub fn new(s: &Session, leaf: Option<u32>) -> io::Result<Plan> {
        let mut plan = Plan {
            info: Info {
                thinking_level: Some(Value::str("off")),
                ..Info::default()
            },
            head: Vec::new(),
            edits: HashMap::new(),
            selected: Vec::new(),
            kept: 0,
            order: Vec::new(),
            first_after: 0,
        };
        let Some(leaf) = leaf else {
            return Ok(plan);
        };
        let info = &mut plan.info;
        let path = s.path_to(leaf);
        info.path_len = path.len();
        let kind = |i: u32| s.entries[i as usize].kind;
        // Settings: the last thinking level change, and the last model change or assistant
        // message (reading messages back from the leaf until an assistant turns up).
        if let Some(&t) = path
            .iter()
            .rev()
            .find(|&&i| kind(i) == Kind::ThinkingLevelChange)
        {
            let line = s.line(t)?;
            info.thinking_level = Value::parse(&line).and_then(|e| e.get("thinkingLevel").cloned());
        }
        for &i in path.iter().rev() {
            match kind(i) {
                Kind::ModelChange => {
                    let line = s.line(i)?;
                    if let Some(e) = Value::parse(&line) {
                        let mut m = Obj::new();
                        m.set_opt("provider", e.get("provider").cloned());
                        m.set_opt("modelId", e.get("modelId").cloned());
                        info.model = Some(Value::Obj(m));
                    }
                    break;
                }
                Kind::Message => {
                    let line = s.line(i)?;
                    let Some(msg) = json::get(&line, "message") else {
                        continue;
                    };
                    if json::get_str(msg, "role").is_none_or(|r| r != "assistant") {
                        continue;
                    }
                    if let Some(m) = Value::parse(msg) {
                        let mut o = Obj::new();
                        o.set_opt("provider", m.get("provider").cloned());
                        o.set_opt("modelId", m.get("model").cloned());
                        info.model = Some(Value::Obj(o));
                    }
                    break;
                }
                _ => {}
            }
        }
        // The compaction summary first, then the kept entries and those after the compaction.
        let Some(ci) = path.iter().rposition(|&i| kind(i) == Kind::Compaction) else {
            plan.edits = edits(s, &path)?;
            plan.order = path
                .iter()
                .copied()
                .filter(|&i| produces(kind(i)))
                .collect();
            plan.selected = path;
            return Ok(plan);
        };
        let c = path[ci];
        info.compaction = Some(c);
        let line = s.line(c)?;
        let entry = Value::parse(&line).unwrap_or_default();
        let mut m = Obj::new();
        m.set("role", Value::str("compactionSummary"));
        m.set_opt("summary", entry.get("summary").cloned());
        m.set_opt("tokensBefore", entry.get("tokensBefore").cloned());
        m.set("timestamp", js_date(entry.get("timestamp")));
        // The reference 1.6 saves the prompt and tools in effect as the compaction's
        // `systemMessage`; it leads the compacted context.
        if let Some(sys) = entry.get("systemMessage").filter(|v| v.truthy()) {
            plan.head.push(Message {
                value: sys.clone(),
                entry: c,
                after_compaction: false,
            });
        }
        plan.head.push(Message {
            value: Value::Obj(m),
            entry: c,
            after_compaction: false,
        });
        // The context's entries: the compaction, those it kept, those after it.
        let mut selected = vec![c];
        if let Some(fk) = entry.get("firstKeptEntryId").and_then(Value::as_jstr) {
            let fk = fk.text();
            if let Some(k) = path[..ci]
                .iter()
                .position(|&i| s.entries[i as usize].id.as_str() == fk)
            {
                selected.extend_from_slice(&path[k..ci]);
            }
        }
        let kept = selected.len() - 1;
        selected.extend_from_slice(&path[ci + 1..]);
        plan.edits = edits(s, &selected)?;
        plan.order.extend(
            selected[1..1 + kept]
                .iter()
                .copied()
                .filter(|&i| produces(kind(i))),
        );
        plan.first_after = plan.order.len();
        let after = selected[1 + kept..]
            .iter()
            .copied()
            .filter(|&i| produces(kind(i)));
        plan.order.extend(after);
        selected.remove(0);
        plan.selected = selected;
        plan.kept = kept;
        Ok(plan)
    }

    /// The context's entries besides the latest compaction, and how many of them (at the
    /// start) the compaction kept.
    pub fn selected(&self) -> (&[u32], usize) {
        (&self.selected, self.kept)
    }

    /// The latest compaction's messages (its checkpoint and summary), as an edit of it
    /// leaves them.
    pub fn head_messages(&self, s: &Session) -> Vec<Value> {
        let Some(c) = self.head.first().map(|m| m.entry) else {
            return Vec::new();
        };
        let edit = self.edits.get(s.entries[c as usize].id.as_str());
        self.head
            .iter()
            .filter_map(|m| edited(m.value.clone(), edit))
            .collect()
    }

    /// The messages entry `i` (one of [`Plan::selected`]; `kept` when the latest compaction
    /// kept it) gives the model: `None` when it is no part of the context (a system message
    /// of the kept range, replaced by the compaction's checkpoint), else its message as the
    /// latest edit leaves it (none when omitted). Compactions and entries without a message
    /// give none.
    pub fn project_entry(
        &self,
        s: &Session,
        i: u32,
        entry: Value,
        kept: bool,
    ) -> Option<Vec<Value>> {
        let kind = s.entries[i as usize].kind;
        let Some(m) = entry_message(entry, kind) else {
            return Some(Vec::new());
        };
        if kept && is_system(&m) {
            return None;
        }
        let edit = self.edits.get(s.entries[i as usize].id.as_str());
        Some(edited(m, edit).into_iter().collect())
    }

    /// Hands the messages to `emit` one at a time, in order (only one is held in memory);
    /// returns warnings about entries that produced nothing.
    pub fn each(
        &self,
        s: &Session,
        mut emit: impl FnMut(Message) -> io::Result<()>,
    ) -> io::Result<Vec<String>> {
        let mut warnings = Vec::new();
        let compacted = !self.head.is_empty();
        if let Some(c) = self.head.first().map(|m| m.entry) {
            let edit = self.edits.get(s.entries[c as usize].id.as_str());
            for m in &self.head {
                if let Some(value) = edited(m.value.clone(), edit) {
                    emit(Message {
                        value,
                        entry: m.entry,
                        after_compaction: false,
                    })?;
                }
            }
        }
        // Path order is file order (parents are written before their children), so the
        // lines are read in large sequential blocks.
        let mut n = 0;
        s.for_each_line(&self.order, |i, line| {
            let after_compaction = compacted && n >= self.first_after;
            n += 1;
            let kind = s.entries[i as usize].kind;
            match Value::parse(line).and_then(|e| entry_message(e, kind)) {
                Some(value) => {
                    let edit = self.edits.get(s.entries[i as usize].id.as_str());
                    match project(value, edit, compacted && !after_compaction) {
                        Some(value) => emit(Message {
                            value,
                            entry: i,
                            after_compaction,
                        }),
                        None => Ok(()),
                    }
                }
                None => {
                    if kind == Kind::Message {
                        let r = &s.entries[i as usize];
                        warnings.push(format!(
                            "entry {} (line {}) has no message object; skipped",
                            pi_base::text::escape(r.id.as_str()),
                            r.line
                        ));
                    }
                    Ok(())
                }
            }
        })?;
        Ok(warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_collects_what_plan_streams() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.jsonl");
        let lines = [
            r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
            r#"{"type":"message","id":"1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}"#,
            r#"{"type":"message","id":"2","parentId":"1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}}"#,
            r#"{"type":"compaction","id":"3","parentId":"2","timestamp":"2025-01-01T00:00:03.000Z","summary":"S","firstKeptEntryId":"2","tokensBefore":9}"#,
            r#"{"type":"thinking_level_change","id":"4","parentId":"3","timestamp":"2025-01-01T00:00:04.000Z","thinkingLevel":"low"}"#,
            r#"{"type":"message","id":"5","parentId":"4","timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"user","content":"b","timestamp":5}}"#,
        ];
        std::fs::write(&f, lines.join("\n") + "\n").unwrap();
        let s = Session::open(&f).unwrap();
        let c = build(&s, s.leaf()).unwrap();
        let roles: Vec<String> = c
            .messages
            .iter()
            .map(|m| {
                m.get("role")
                    .unwrap()
                    .as_jstr()
                    .unwrap()
                    .text()
                    .into_owned()
            })
            .collect();
        assert_eq!(roles, ["compactionSummary", "assistant", "user"]);
        assert_eq!(c.sources, [2, 1, 4]);
        assert_eq!(c.after_compaction, 2);
        assert_eq!(c.info.compaction, Some(2));
        assert_eq!(c.info.path_len, 5);
        assert!(c.info.thinking_level.as_ref().unwrap().is_str("low"));
        assert_eq!(c.info.model_ids(), Some(("p".into(), "m".into())));
        assert_eq!(
            String::from_utf8(c.messages[0].to_json()).unwrap(),
            r#"{"role":"compactionSummary","summary":"S","tokensBefore":9,"timestamp":1735689603000}"#
        );
        let empty = build(&s, None).unwrap();
        assert!(empty.messages.is_empty() && empty.info.model.is_none());
    }
}
