//! RPC mode (`pi run --rpc`): other programs drive the agent with JSON commands on stdin,
//! one per line, as the reference's RPC mode (1.6) takes them. Every command may carry an
//! `id`, echoed in its one response (`{"id"?, "type":"response", "command", "success",
//! "data"?|"error"}`); the events of the run (the same lines as `--json`) are written as they
//! happen, interleaved with the responses.
//!
//! While a prompt runs, the queue (`steer`, `follow_up`, `prompt` with a
//! `streamingBehavior`), `abort` and the read-only commands are served at once; commands that
//! change the session (`compact`, `set_model`, …) wait for nothing: they are refused until
//! the run ends. End of input finishes the running prompt (and what is queued), then ends
//! the mode with exit status 0.
//!
//! Framing: lines end with LF (a trailing CR is dropped; U+2028 and U+2029 do not end a
//! line); a last line without LF is still read; blank lines are skipped.

use std::cell::RefCell;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::rc::Rc;

use serde_json::{Map, Value as Json, json};
use tokio::sync::mpsc;

use crate::render::run::JsonLines;
use pi_agent::agent::event::Event;
use pi_agent::agent::hooks::{Hooks, Mode, Queue};
use pi_agent::agent::session::{AgentSession, Expander, user_message_with};
use pi_agent::agent::store::role;
use pi_agent::agent::{Message, Observer};
use pi_ai::models::{self, THINKING_LEVELS};
use pi_ai::value::Value;
use pi_ai::{Target, auth};
use pi_session::entry::jstr;
use pi_tools::CancelToken;

pub mod gate;
mod ops;
pub use ops::commands_json;

/// Where responses and events go (shared by the server and the session's observer).
pub type Out = Rc<RefCell<JsonLines<Box<dyn Write>>>>;

/// What a server reads and writes: stdout and stdin for `pi run --rpc`; `pi chat`'s front
/// end (its view as `tap`, its [`gate::Gate`]) otherwise.
pub struct Io {
    pub out: Box<dyn Write>,
    pub input: mpsc::UnboundedReceiver<Vec<u8>>,
    pub tap: Option<Box<dyn Observer>>,
    pub gate: Option<std::sync::Arc<gate::Gate>>,
}

/// What the server knows of a run while the session is busy with it.
#[derive(Debug, Default)]
pub struct Mirror {
    /// The context, as the session holds it.
    pub messages: Vec<Message>,
    pub streaming: bool,
    pub compacting: bool,
    /// The texts of queued steering and follow-up messages, as `queue_update` shows them.
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
    /// Waiting before an automatic retry.
    pub retrying: bool,
}

impl Mirror {
    fn queue_update(&self) -> Json {
        json!({"type": "queue_update", "steering": self.steering, "followUp": self.follow_up})
    }
}

/// The observer of a session in RPC mode: writes every event and keeps the [`Mirror`].
pub struct RpcObserver {
    out: Out,
    mirror: Rc<RefCell<Mirror>>,
    /// Sees the session's events instead of `out` (`pi chat`'s view).
    tap: Option<Box<dyn Observer>>,
}

impl RpcObserver {
    /// An observer whose session events go to `tap` rather than to `out` as JSON lines
    /// (responses and the server's own events still go to `out`).
    pub fn tapped(
        out: Out,
        mirror: Rc<RefCell<Mirror>>,
        tap: Option<Box<dyn Observer>>,
    ) -> RpcObserver {
        RpcObserver { out, mirror, tap }
    }
}

fn write(out: &Out, v: &Json) {
    out.borrow_mut().line(&pi_base::js::stringify(v));
}

/// The text blocks of a message, concatenated.
fn text_of(m: &Message) -> String {
    match m.get("content") {
        Some(c) if c.as_jstr().is_some() => c
            .as_jstr()
            .map(|s| s.text().into_owned())
            .unwrap_or_default(),
        Some(Value::Arr(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").is_some_and(|t| t.is_str("text")))
            .filter_map(|b| b.get("text").and_then(Value::as_jstr))
            .map(|t| t.text().into_owned())
            .collect(),
        _ => String::new(),
    }
}

impl Observer for RpcObserver {
    fn event(&mut self, e: &Event<'_>) {
        if let Some(t) = self.tap.as_mut() {
            t.event(e);
        } else if let Some(line) = e.to_json() {
            self.out.borrow_mut().line(&line);
        }
        let mut m = self.mirror.borrow_mut();
        match e {
            Event::MessageStart { message } if role(message).as_deref() == Some("user") => {
                // A queued message being delivered leaves the visible queue.
                let text = text_of(message);
                let removed = if let Some(k) = m.steering.iter().position(|t| *t == text) {
                    m.steering.remove(k);
                    true
                } else if let Some(k) = m.follow_up.iter().position(|t| *t == text) {
                    m.follow_up.remove(k);
                    true
                } else {
                    false
                };
                if removed {
                    let u = m.queue_update();
                    drop(m);
                    write(&self.out, &u);
                }
            }
            Event::MessageEnd { message } => m.messages.push((*message).clone()),
            Event::CompactionStart { .. } => m.compacting = true,
            Event::CompactionEnd { .. } => m.compacting = false,
            Event::AutoRetryStart { .. } => m.retrying = true,
            Event::AutoRetryEnd { .. } | Event::AgentStart => m.retrying = false,
            _ => {}
        }
    }

    fn messages_changed(&mut self, messages: &[Message]) {
        if let Some(t) = self.tap.as_mut() {
            t.messages_changed(messages);
        }
        self.mirror.borrow_mut().messages = messages.to_vec();
    }
}

/// The session's facts the server keeps for answers while a run holds the session.
#[derive(Debug, Clone)]
pub struct Info {
    pub session_id: String,
    pub session_file: Option<PathBuf>,
    pub session_name: Option<String>,
}

/// What `get_state` and `get_session_stats` show of the configuration (refreshed when
/// idle).
#[derive(Debug, Clone, Default)]
struct Snapshot {
    model: Json,
    thinking_level: String,
    auto_compaction: bool,
    context_window: u64,
    last_compaction_ms: Option<i64>,
    models: Vec<Json>,
    /// The current model's thinking levels (`get_available_thinking_levels`).
    thinking_levels: Vec<&'static str>,
}

/// Reads stdin on a thread of its own, one record per line (cancel-safe to receive).
pub fn stdin_lines() -> mpsc::UnboundedReceiver<Vec<u8>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut r = stdin.lock();
        loop {
            let mut buf = Vec::new();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                    }
                    if buf.last() == Some(&b'\r') {
                        buf.pop();
                    }
                    if tx.send(buf).is_err() {
                        break;
                    }
                }
            }
        }
    });
    rx
}

/// A parsed command.
#[derive(Debug, Clone)]
struct Command {
    id: Option<Json>,
    ty: String,
    body: Map<String, Json>,
}

type Reply = Result<Option<Json>, String>;

/// Why the server stops.
pub enum Stop {
    /// End of input: exit status 0.
    Eof,
    /// A signal (its exit status).
    Signal,
}

/// What the server and the commands it serves while the session is busy both use.
pub struct Shared {
    pub out: Out,
    pub mirror: Rc<RefCell<Mirror>>,
    /// Expands templates and skills in steering and follow-up texts.
    pub expand: Expander,
    pub info: Info,
    /// Cancelled by SIGINT, SIGTERM or SIGHUP.
    pub signals: CancelToken,
    /// What `get_commands` lists: templates, skills and program tools.
    pub commands: Json,
    /// `pi chat`'s front end: told when the server waits for input with nothing pending;
    /// with it, the front end's own commands (`branch`, `label`) are served too.
    pub gate: Option<std::sync::Arc<gate::Gate>>,
}

impl Shared {
    /// Counts a line taken from the input (for the front end's idle check).
    fn took_line(&self) {
        if let Some(g) = &self.gate {
            g.received();
        }
    }
}

/// The RPC server over a session.
pub struct Server<'a, 'c, H: Hooks> {
    pub session: &'a mut AgentSession<'c, H, RpcObserver>,
    pub shared: Shared,
    /// Commands that arrived while the session was busy, served in order.
    pending: std::collections::VecDeque<Command>,
}

impl<'a, 'c, H: Hooks> Server<'a, 'c, H> {
    pub fn new(
        session: &'a mut AgentSession<'c, H, RpcObserver>,
        shared: Shared,
    ) -> Server<'a, 'c, H> {
        Server {
            session,
            shared,
            pending: std::collections::VecDeque::new(),
        }
    }
}

fn failed(e: anyhow::Error) -> Reply {
    Err(format!("{e:#}"))
}

/// A successful response whose `data` is JSON text already (entries and trees, written
/// without building them as values).
fn respond_raw(out: &Out, id: &Option<Json>, command: &str, data: &[u8]) {
    let mut line = b"{".to_vec();
    if let Some(id) = id {
        line.extend_from_slice(b"\"id\":");
        line.extend(pi_base::js::stringify(id));
        line.push(b',');
    }
    line.extend_from_slice(b"\"type\":\"response\",\"command\":");
    pi_base::json::write_str(&mut line, command);
    line.extend_from_slice(b",\"success\":true,\"data\":");
    line.extend_from_slice(data);
    line.push(b'}');
    out.borrow_mut().line(&line);
}

/// `get_entries` and `get_tree` (of the file as it is; `leaf`: the run's leaf when known).
fn serve_entries(shared: &Shared, cmd: &Command, leaf: Option<String>) {
    let file = shared.info.session_file.as_deref();
    let r = if cmd.ty == "get_tree" {
        ops::tree(file, leaf)
    } else {
        ops::entries(file, leaf, cmd.body.get("since"))
    };
    match r {
        Ok(data) => respond_raw(&shared.out, &cmd.id, &cmd.ty, &data),
        Err(e) => respond(&shared.out, &cmd.id, &cmd.ty, Err(e)),
    }
}

/// `clear_queue`: the queued steering and follow-up messages are dropped; their texts are
/// the answer (`{steering, followUp}`), after a `queue_update`.
fn clear_queue(shared: &Shared, queue: &Queue) -> Reply {
    queue.clear();
    let (update, steering, follow_up) = {
        let mut m = shared.mirror.borrow_mut();
        let s = std::mem::take(&mut m.steering);
        let f = std::mem::take(&mut m.follow_up);
        (m.queue_update(), s, f)
    };
    write(&shared.out, &update);
    Ok(Some(json!({"steering": steering, "followUp": follow_up})))
}

/// What a prompt, steering or follow-up message became (1.6's `data.disposition`).
fn disposition(d: &str) -> Reply {
    Ok(Some(json!({ "disposition": d })))
}

fn respond(out: &Out, id: &Option<Json>, command: &str, reply: Reply) {
    let mut o = Map::new();
    if let Some(id) = id {
        o.insert("id".into(), id.clone());
    }
    o.insert("type".into(), json!("response"));
    o.insert("command".into(), json!(command));
    match reply {
        Ok(data) => {
            o.insert("success".into(), json!(true));
            if let Some(d) = data {
                o.insert("data".into(), d);
            }
        }
        Err(e) => {
            o.insert("success".into(), json!(false));
            o.insert("error".into(), json!(e));
        }
    }
    write(out, &Json::Object(o));
}

/// A command line that could not be read: why, and its `id` when one could be recovered
/// (so the client waiting on that id gets its answer).
struct BadCommand {
    id: Option<Json>,
    error: String,
}

/// Reads a command line as the reference's `JSON.parse` does (lone surrogates, huge
/// numbers: [`pi_base::json::to_value`]).
fn parse(line: &[u8]) -> Result<Command, BadCommand> {
    let v = pi_base::json::to_value(line).map_err(|e| {
        let (_, column) = pi_base::json::line_col(line, e.offset);
        BadCommand {
            id: recover_id(line),
            error: format!("Failed to parse command: {e} at column {column}"),
        }
    })?;
    let Json::Object(mut body) = v else {
        return Err(BadCommand {
            id: None,
            error: "Failed to parse command: a command is a JSON object".into(),
        });
    };
    let id = body.remove("id");
    let ty = match body.remove("type") {
        Some(Json::String(t)) => t,
        _ => {
            return Err(BadCommand {
                id,
                error: "Failed to parse command: a command needs \"type\" (a string)".into(),
            });
        }
    };
    Ok(Command { id, ty, body })
}

/// The top-level `id` of a command line that is not valid JSON, when it comes before the
/// fault and is itself readable.
fn recover_id(line: &[u8]) -> Option<Json> {
    let start = pi_base::json::skip_ws(line, 0);
    let mut id = None;
    let _ = pi_base::json::scan_object(line, start, |m| {
        if m.key.eq_str("id") {
            id = pi_base::json::to_value(&line[m.value_start..m.value_end]).ok();
        }
    });
    id
}

fn text_field<'b>(body: &'b Map<String, Json>, key: &str) -> Result<&'b str, String> {
    body.get(key)
        .and_then(Json::as_str)
        .ok_or_else(|| format!("\"{key}\" must be a string"))
}

/// `images` of a prompt: image blocks `{type: "image", data, mimeType}`.
fn images(body: &Map<String, Json>) -> Result<Vec<Message>, String> {
    let Some(v) = body.get("images") else {
        return Ok(Vec::new());
    };
    let list = v
        .as_array()
        .ok_or("\"images\" must be a list of image blocks")?;
    let mut out = Vec::new();
    for i in list {
        let ok = i.get("type").and_then(Json::as_str) == Some("image")
            && i.get("data").is_some_and(Json::is_string)
            && i.get("mimeType").is_some_and(Json::is_string);
        if !ok {
            return Err(
                "an image is {\"type\": \"image\", \"data\": <base64>, \"mimeType\": <type>}"
                    .into(),
            );
        }
        out.push(pi_agent::agent::message_from_json(i));
    }
    Ok(out)
}

/// The counts and usage totals of `get_session_stats` over every entry of a session file, as
/// the reference 1.6's `getSessionStats` makes them: messages of all branches, and the usage
/// of assistant messages, tool results that carry one, `usage` entries, compactions and
/// branch summaries. `None` when the file cannot be read.
fn file_stats(path: &std::path::Path) -> Option<([u64; 5], [f64; 4], f64)> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).ok()?;
    // user, assistant, toolResult, all messages, tool calls
    let mut counts = [0u64; 5];
    let mut tokens = [0f64; 4];
    let mut cost = 0f64;
    let mut add = |u: &Json| {
        for (slot, key) in tokens
            .iter_mut()
            .zip(["input", "output", "cacheRead", "cacheWrite"])
        {
            *slot += u.get(key).and_then(Json::as_f64).unwrap_or(0.0);
        }
        cost += u
            .pointer("/cost/total")
            .and_then(Json::as_f64)
            .unwrap_or(0.0);
    };
    for line in std::io::BufReader::new(f).split(b'\n') {
        let Ok(e) = pi_base::json::to_value(&line.ok()?) else {
            continue;
        };
        match e.get("type").and_then(Json::as_str) {
            Some("usage" | "compaction" | "branch_summary") => {
                if let Some(u) = e.get("usage").filter(|u| u.is_object()) {
                    add(u);
                }
            }
            Some("message") => {
                let Some(m) = e.get("message") else { continue };
                counts[3] += 1;
                match m.get("role").and_then(Json::as_str) {
                    Some("user") => counts[0] += 1,
                    Some("toolResult") => {
                        counts[2] += 1;
                        if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
                            add(u);
                        }
                    }
                    Some("assistant") => {
                        counts[1] += 1;
                        counts[4] += m.get("content").and_then(Json::as_array).map_or(0, |c| {
                            c.iter()
                                .filter(|b| {
                                    b.get("type").and_then(Json::as_str) == Some("toolCall")
                                })
                                .count() as u64
                        });
                        if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
                            add(u);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Some((counts, tokens, cost))
}

/// Counts and totals of a session (`get_session_stats`): of its file when it has one (the
/// reference 1.6's rule), else of the context.
fn stats(messages: &[Message], info: &Info, snap: &Snapshot) -> Json {
    let (mut users, mut assistants, mut calls, mut results) = (0u64, 0u64, 0u64, 0u64);
    let mut tokens = [0f64; 4];
    let mut cost = 0f64;
    // Whether an answer reported the context's size since the latest compaction
    // (upstream's getContextUsage: the last usable answer decides).
    let mut reported_since = None;
    for m in messages {
        match role(m).as_deref() {
            Some("user") => users += 1,
            Some("toolResult") => results += 1,
            Some("assistant") => {
                assistants += 1;
                if let Some(Value::Arr(blocks)) = m.get("content") {
                    calls += blocks
                        .iter()
                        .filter(|b| b.get("type").is_some_and(|t| t.is_str("toolCall")))
                        .count() as u64;
                }
                if let Some(u) = m.get("usage") {
                    let f = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                    for (slot, key) in
                        tokens
                            .iter_mut()
                            .zip(["input", "output", "cacheRead", "cacheWrite"])
                    {
                        *slot += f(key);
                    }
                    cost += u
                        .get("cost")
                        .and_then(|c| c.get("total"))
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0);
                    let failed = m
                        .get("stopReason")
                        .is_some_and(|r| r.is_str("error") || r.is_str("aborted"));
                    if !failed {
                        let ts = m.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0) as i64;
                        let size = pi_agent::context::tokens::context_tokens(u).0;
                        reported_since =
                            Some(snap.last_compaction_ms.is_none_or(|t| ts > t) && size > 0.0);
                    }
                }
            }
            _ => {}
        }
    }
    let mut total_messages = messages.len() as u64;
    if let Some((c, t, k)) = info.session_file.as_deref().and_then(file_stats) {
        [users, assistants, results, total_messages, calls] = c;
        tokens = t;
        cost = k;
    }
    let total: f64 = tokens.iter().sum();
    let mut o = json!({});
    if let Some(f) = &info.session_file {
        o["sessionFile"] = json!(f.to_string_lossy());
    }
    o["sessionId"] = json!(info.session_id);
    o["userMessages"] = json!(users);
    o["assistantMessages"] = json!(assistants);
    o["toolCalls"] = json!(calls);
    o["toolResults"] = json!(results);
    o["totalMessages"] = json!(total_messages);
    o["tokens"] = json!({"input": tokens[0], "output": tokens[1], "cacheRead": tokens[2],
                         "cacheWrite": tokens[3], "total": total});
    o["cost"] = json!(cost);
    if snap.context_window > 0 {
        // Unknown right after a compaction, until the model answers again.
        let unknown = snap.last_compaction_ms.is_some() && reported_since != Some(true);
        o["contextUsage"] = if unknown {
            json!({"tokens": null, "contextWindow": snap.context_window, "percent": null})
        } else {
            let t = pi_agent::context::tokens::estimate_context(messages).tokens;
            json!({"tokens": t, "contextWindow": snap.context_window,
                   "percent": t / snap.context_window as f64 * 100.0})
        };
    }
    o
}

fn last_assistant_text(messages: &[Message]) -> Json {
    messages
        .iter()
        .rev()
        .find(|m| role(m).as_deref() == Some("assistant"))
        .map(|m| json!(text_of(m)))
        .unwrap_or(Json::Null)
}

fn state(info: &Info, snap: &Snapshot, mirror: &Mirror, queue: &Queue) -> Json {
    let (steering, follow_up) = queue.modes();
    let (s, f) = queue.counts();
    let mut v = json!({
        "model": snap.model,
        "thinkingLevel": snap.thinking_level,
        "isStreaming": mirror.streaming,
        "isCompacting": mirror.compacting,
        "steeringMode": steering.as_str(),
        "followUpMode": follow_up.as_str(),
        "sessionFile": info.session_file.as_ref().map(|p| p.to_string_lossy().into_owned()),
        "sessionId": info.session_id,
        "sessionName": info.session_name,
        "autoCompactionEnabled": snap.auto_compaction,
        "messageCount": mirror.messages.len(),
        "pendingMessageCount": s + f,
    });
    // Absent rather than null, as upstream's JSON.stringify leaves undefined out.
    if let Json::Object(o) = &mut v {
        o.retain(|_, x| !x.is_null());
    }
    v
}

/// Queues a steering or follow-up message (expanded like a prompt).
fn enqueue(shared: &Shared, queue: &Queue, body: &Map<String, Json>, steer: bool) -> Reply {
    let text = text_field(body, "message")?;
    let imgs = images(body)?;
    let text = (shared.expand)(text)?;
    let m = user_message_with(&text, imgs);
    let update = {
        let mut mi = shared.mirror.borrow_mut();
        if steer {
            queue.steer(m);
            mi.steering.push(text);
        } else {
            queue.follow_up(m);
            mi.follow_up.push(text);
        }
        mi.queue_update()
    };
    write(&shared.out, &update);
    disposition("queued")
}

fn set_mode(queue: &Queue, body: &Map<String, Json>, steering: bool) -> Reply {
    let mode = text_field(body, "mode")
        .ok()
        .and_then(Mode::parse)
        .ok_or("\"mode\" must be \"all\" or \"one-at-a-time\"")?;
    let (s, f) = queue.modes();
    if steering {
        queue.set_modes(mode, f);
    } else {
        queue.set_modes(s, mode);
    }
    Ok(None)
}

/// What commands see while the session works (a prompt's run, or a compaction).
struct Busy<'b> {
    shared: &'b Shared,
    queue: Queue,
    snap: &'b Snapshot,
    /// Cancels the work (`abort`, `abort_bash`).
    cancel: CancelToken,
    kind: Work,
    /// For a `bash` command during a run.
    tool_ctx: std::sync::Arc<pi_tools::ToolContext>,
    /// Stops the `bash` command running beside a run (`abort_bash`).
    bash_cancel: RefCell<Option<CancelToken>>,
}

/// What keeps the session busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    /// A prompt's run.
    Run,
    Compaction,
    /// A user's shell command (`bash`).
    Bash,
}

/// How the busy time ended besides the work's own result.
#[derive(Default)]
struct BusyEnd {
    /// `abort` commands, answered once the work has stopped.
    aborts: Vec<(Option<Json>, &'static str)>,
    /// Commands served once the work has ended, in order.
    deferred: Vec<Command>,
    /// A `bash` command to start beside the run.
    start_bash: Option<Command>,
    /// Messages of `bash` commands that ended during the run, recorded after it (as the
    /// reference records them).
    bash_messages: Vec<Message>,
    eof: bool,
    signalled: bool,
}

impl Busy<'_> {
    /// A command while the session works; `None` when its answer waits for the end.
    fn command(&self, cmd: &Command, end: &mut BusyEnd) -> Option<Reply> {
        let (shared, mirror, queue) = (self.shared, &self.shared.mirror, &self.queue);
        let work = self.kind;
        Some(match cmd.ty.as_str() {
            // A shell command is not the agent's work: `abort` leaves it running.
            "abort" if work == Work::Bash => Ok(None),
            "abort" => {
                self.cancel.cancel();
                end.aborts.push((cmd.id.clone(), "abort"));
                return None;
            }
            "abort_bash" if work == Work::Bash => {
                self.cancel.cancel();
                Ok(None)
            }
            "abort_bash" => {
                if let Some(c) = self.bash_cancel.borrow().as_ref() {
                    c.cancel();
                }
                Ok(None)
            }
            // A shell command runs beside the run (one at a time; a second one waits).
            "bash" if work == Work::Run && end.start_bash.is_none() => {
                end.start_bash = Some(cmd.clone());
                return None;
            }
            // Only a pending retry is stopped (which ends the run, as nothing else runs).
            "abort_retry" if mirror.borrow().retrying => {
                self.cancel.cancel();
                end.aborts.push((cmd.id.clone(), "abort_retry"));
                return None;
            }
            "abort_retry" => Ok(None),
            "steer" => enqueue(shared, queue, &cmd.body, true),
            "follow_up" => enqueue(shared, queue, &cmd.body, false),
            "prompt" => match cmd.body.get("streamingBehavior").and_then(Json::as_str) {
                Some("steer") if work == Work::Run => {
                    enqueue(shared, queue, &cmd.body, true)
                }
                Some("followUp") if work == Work::Run => {
                    enqueue(shared, queue, &cmd.body, false)
                }
                _ if work != Work::Run => {
                    end.deferred.push(cmd.clone());
                    return None;
                }
                _ => Err("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".into()),
            },
            "get_state" => Ok(Some(state(&self.shared.info, self.snap, &mirror.borrow(), queue))),
            "get_messages" => Ok(Some(
                json!({"messages": messages_json(&mirror.borrow().messages)}),
            )),
            "get_session_stats" => Ok(Some(stats(&mirror.borrow().messages, &self.shared.info, self.snap))),
            "get_last_assistant_text" => Ok(Some(
                json!({"text": last_assistant_text(&mirror.borrow().messages)}),
            )),
            "get_available_models" => Ok(Some(json!({"models": self.snap.models}))),
            "get_available_thinking_levels" => {
                Ok(Some(json!({"levels": self.snap.thinking_levels})))
            }
            "clear_queue" => clear_queue(shared, queue),
            // The run appends at the end of the file: its last entry is the leaf.
            "get_entries" | "get_tree" => {
                serve_entries(shared, cmd, None);
                return None;
            }
            "set_steering_mode" => set_mode(queue, &cmd.body, true),
            "set_follow_up_mode" => set_mode(queue, &cmd.body, false),
            "get_fork_messages" => Ok(Some(ops::fork_messages(self.shared.info.session_file.as_deref()))),
            "get_commands" => Ok(Some(json!({"commands": self.shared.commands}))),
            // A manual compaction stops the run first, as upstream's does.
            "compact" if work == Work::Run => {
                self.cancel.cancel();
                end.deferred.push(cmd.clone());
                return None;
            }
            // The rest changes the session or its settings: served when the work ends.
            t if KNOWN.contains(&t) => {
                end.deferred.push(cmd.clone());
                return None;
            }
            t => Err(format!("Unknown command: {t}")),
        })
    }

    /// Serves commands until `work` completes (or a signal cancels it and it completes).
    async fn serve<F: std::future::Future>(
        &self,
        work: F,
        input: &mut mpsc::UnboundedReceiver<Vec<u8>>,
    ) -> (F::Output, BusyEnd) {
        let mut end = BusyEnd::default();
        tokio::pin!(work);
        let mut done = None;
        let mut bash: Option<(Command, ops::BashFuture)> = None;
        loop {
            if let Some(cmd) = end.start_bash.take() {
                match text_field(&cmd.body, "command") {
                    Ok(c) if bash.is_none() => {
                        let cancel = CancelToken::new();
                        *self.bash_cancel.borrow_mut() = Some(cancel.clone());
                        let f = ops::bash_future(
                            self.tool_ctx.clone(),
                            c.to_owned(),
                            cancel,
                            self.shared.out.clone(),
                            cmd.id.clone(),
                        );
                        bash = Some((cmd, f));
                    }
                    Ok(_) => end.deferred.push(cmd),
                    Err(e) => respond(&self.shared.out, &cmd.id, "bash", Err(e)),
                }
            }
            if bash.is_none()
                && let Some(r) = done
            {
                return (r, end);
            }
            tokio::select! {
                r = &mut work, if done.is_none() => {
                    done = Some(r);
                },
                r = async { match bash.as_mut() { Some((_, f)) => f.await, None => std::future::pending().await } }, if bash.is_some() => {
                    if let Some((cmd, _)) = bash.take() {
                        *self.bash_cancel.borrow_mut() = None;
                        let reply = match r {
                            Ok(x) => {
                                let text = cmd.body.get("command").and_then(Json::as_str).unwrap_or_default();
                                end.bash_messages.push(ops::bash_message(text, &x, ops::excluded(&cmd.body)));
                                Ok(Some(ops::bash_result(&x)))
                            }
                            Err(e) => Err(e.0),
                        };
                        respond(&self.shared.out, &cmd.id, "bash", reply);
                    }
                },
                l = input.recv(), if !end.eof => {
                    let Some(line) = l else {
                        end.eof = true;
                        continue;
                    };
                    self.shared.took_line();
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match parse(&line) {
                        Ok(cmd) => {
                            if let Some(reply) = self.command(&cmd, &mut end) {
                                respond(&self.shared.out, &cmd.id, &cmd.ty, reply);
                            }
                        }
                        Err(e) => respond(&self.shared.out, &e.id, "parse", Err(e.error)),
                    }
                }
                () = self.shared.signals.cancelled(), if !end.signalled => {
                    end.signalled = true;
                    self.cancel.cancel();
                }
            }
        }
    }
}

impl<'c, H: Hooks> Server<'_, 'c, H> {
    fn snapshot(&self) -> Snapshot {
        let c = &self.session.config;
        let reg = &c.credentials.registry;
        let models = reg
            .models
            .iter()
            .filter(|m| pi_ai::Wire::for_api(&m.api).is_some())
            .filter(|m| auth::source(&c.credentials.agent_dir, reg, &m.provider).is_some())
            .map(|m| models::model_json(m, &reg.details_of(&m.provider, &m.id)))
            .collect();
        Snapshot {
            model: models::model_json(&c.target.model, &c.target.details),
            thinking_level: c.thinking_level.clone(),
            auto_compaction: c.settings.compaction_enabled,
            context_window: c.target.model.context_window,
            last_compaction_ms: self.session.last_compaction_ms(),
            models,
            thinking_levels: models::thinking_levels(&c.target.model, &c.target.details),
        }
    }

    /// Serves commands until end of input or a signal.
    pub async fn serve(
        &mut self,
        mut input: mpsc::UnboundedReceiver<Vec<u8>>,
    ) -> anyhow::Result<Stop> {
        let stop = self.serve_commands(&mut input).await;
        // Full-output files the current session does not name go (the first session's are
        // checked when the session changes).
        pi_tools::bash::remove_unreferenced_logs(self.shared.info.session_file.as_deref());
        stop
    }

    async fn serve_commands(
        &mut self,
        input: &mut mpsc::UnboundedReceiver<Vec<u8>>,
    ) -> anyhow::Result<Stop> {
        self.shared.mirror.borrow_mut().messages = self.session.messages.clone();
        let mut snap = self.snapshot();
        let mut eof = false;
        loop {
            let cmd = if let Some(c) = self.pending.pop_front() {
                c
            } else if eof {
                return Ok(Stop::Eof);
            } else {
                if let Some(g) = &self.shared.gate {
                    g.set_idle();
                }
                let line = tokio::select! {
                    l = input.recv() => l,
                    () = self.shared.signals.cancelled() => return Ok(Stop::Signal),
                };
                let Some(line) = line else {
                    return Ok(Stop::Eof);
                };
                self.shared.took_line();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match parse(&line) {
                    Ok(c) => c,
                    Err(e) => {
                        respond(&self.shared.out, &e.id, "parse", Err(e.error));
                        continue;
                    }
                }
            };
            let stop = match cmd.ty.as_str() {
                "prompt" => self.prompt(cmd, input, &snap).await?,
                "compact" => self.compact(cmd, input, &snap).await?,
                "bash" => self.bash(cmd, input, &snap).await?,
                "get_entries" | "get_tree" => {
                    let leaf = self
                        .session
                        .store()
                        .and_then(|s| s.leaf().map(str::to_owned));
                    serve_entries(&self.shared, &cmd, leaf);
                    None
                }
                // `pi chat`'s own commands.
                "branch" | "label" if self.shared.gate.is_some() => {
                    let reply = match cmd.ty.as_str() {
                        "branch" => self.branch(&cmd.body),
                        _ => self.label(&cmd.body),
                    };
                    respond(
                        &self.shared.out,
                        &cmd.id,
                        &cmd.ty,
                        reply.unwrap_or_else(failed),
                    );
                    None
                }
                _ => {
                    let reply = self.idle(&cmd).await?;
                    respond(&self.shared.out, &cmd.id, &cmd.ty, reply);
                    None
                }
            };
            match stop {
                Some(Stop::Eof) => eof = true,
                Some(stop) => return Ok(stop),
                None => {}
            }
            snap = self.snapshot();
        }
    }

    /// Serves commands while `work` (a run or a compaction, cancelled by `cancel`) goes on;
    /// then brings the mirror up to date, answers the aborts and arms a new cancel token.
    async fn busy<T>(
        &mut self,
        work: impl for<'s> FnOnce(
            &'s mut AgentSession<'c, H, RpcObserver>,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + 's>>,
        cancel: CancelToken,
        input: &mut mpsc::UnboundedReceiver<Vec<u8>>,
        snap: &Snapshot,
        kind: Work,
    ) -> (T, BusyEnd) {
        let queue = self.session.queue.clone();
        let tool_ctx = self.session.config.tool_ctx.clone();
        let Server {
            session, shared, ..
        } = self;
        let b = Busy {
            shared,
            queue,
            snap,
            cancel,
            kind,
            tool_ctx,
            bash_cancel: RefCell::new(None),
        };
        let (r, end) = b.serve(work(session), input).await;
        {
            let mut m = shared.mirror.borrow_mut();
            m.streaming = false;
            m.compacting = false;
            m.retrying = false;
            m.messages = session.messages.clone();
        }
        // The next prompt, compaction or hook starts with a live token.
        session.set_cancel(CancelToken::new());
        (r, end)
    }

    fn after_busy(&mut self, end: BusyEnd) -> anyhow::Result<Option<Stop>> {
        for (id, command) in end.aborts {
            respond(&self.shared.out, &id, command, Ok(None));
        }
        for m in end.bash_messages {
            self.record_bash(m)?;
        }
        self.pending.extend(end.deferred);
        Ok(if end.signalled {
            Some(Stop::Signal)
        } else if end.eof {
            Some(Stop::Eof)
        } else {
            None
        })
    }

    /// A prompt while idle: the preflight answers, then the run is served until it ends.
    async fn prompt(
        &mut self,
        cmd: Command,
        input: &mut mpsc::UnboundedReceiver<Vec<u8>>,
        snap: &Snapshot,
    ) -> anyhow::Result<Option<Stop>> {
        let (text, imgs) = match (text_field(&cmd.body, "message"), images(&cmd.body)) {
            (Ok(t), Ok(i)) => (t.to_owned(), i),
            (Err(e), _) | (_, Err(e)) => {
                respond(&self.shared.out, &cmd.id, "prompt", Err(e));
                return Ok(None);
            }
        };
        // A fresh token: a hook of the preflight must not start out cancelled.
        let cancel = CancelToken::new();
        self.session.set_cancel(cancel.clone());
        let signals = self.shared.signals.clone();
        let accepted = tokio::select! {
            a = self.session.accept(&text) => a,
            () = signals.cancelled() => return Ok(Some(Stop::Signal)),
        };
        let prepared = match accepted {
            Ok(pi_agent::agent::session::Accepted::Prompt(p)) => p,
            Ok(pi_agent::agent::session::Accepted::Handled) => {
                respond(&self.shared.out, &cmd.id, "prompt", disposition("handled"));
                return Ok(None);
            }
            Err(e) => {
                respond(&self.shared.out, &cmd.id, "prompt", Err(format!("{e:#}")));
                return Ok(None);
            }
        };
        respond(&self.shared.out, &cmd.id, "prompt", disposition("started"));
        self.shared.mirror.borrow_mut().streaming = true;
        let (result, end) = self
            .busy(
                move |s| Box::pin(s.start(prepared, imgs)),
                cancel,
                input,
                snap,
                Work::Run,
            )
            .await;
        result?;
        self.after_busy(end)
    }

    /// `compact`: commands are served while the summary is written; `abort` cancels it.
    async fn compact(
        &mut self,
        cmd: Command,
        input: &mut mpsc::UnboundedReceiver<Vec<u8>>,
        snap: &Snapshot,
    ) -> anyhow::Result<Option<Stop>> {
        let instructions = match cmd.body.get("customInstructions") {
            None | Some(Json::Null) => None,
            Some(Json::String(s)) => Some(s.clone()),
            Some(_) => {
                respond(
                    &self.shared.out,
                    &cmd.id,
                    "compact",
                    Err("\"customInstructions\" must be a string".into()),
                );
                return Ok(None);
            }
        };
        let cancel = CancelToken::new();
        self.session.set_cancel(cancel.clone());
        self.shared.mirror.borrow_mut().compacting = true;
        let (result, end) = self
            .busy(
                move |s| Box::pin(async move { s.compact_manual(instructions.as_deref()).await }),
                cancel,
                input,
                snap,
                Work::Compaction,
            )
            .await;
        let reply = match result? {
            Ok(c) => {
                let mut d = json!({
                    "summary": c.summary,
                    "firstKeptEntryId": c.first_kept_entry_id,
                    "tokensBefore": c.tokens_before,
                });
                if let Some(t) = c.estimated_tokens_after {
                    d["estimatedTokensAfter"] = json!(t);
                }
                if let Some(u) = c.usage {
                    d["usage"] = u.to_json();
                }
                d["details"] = c.details;
                Ok(Some(d))
            }
            Err(e) => Err(e),
        };
        respond(&self.shared.out, &cmd.id, "compact", reply);
        self.after_busy(end)
    }

    /// A command while no prompt runs.
    async fn idle(&mut self, cmd: &Command) -> anyhow::Result<Reply> {
        let snap = self.snapshot();
        let queue = self.session.queue.clone();
        let b = &cmd.body;
        Ok(match cmd.ty.as_str() {
            "abort" | "abort_retry" | "abort_bash" => Ok(None),
            "steer" => enqueue(&self.shared, &queue, b, true),
            "follow_up" => enqueue(&self.shared, &queue, b, false),
            "get_state" => Ok(Some(state(
                &self.shared.info,
                &snap,
                &self.shared.mirror.borrow(),
                &queue,
            ))),
            "get_messages" => Ok(Some(
                json!({"messages": messages_json(&self.session.messages)}),
            )),
            "get_session_stats" => Ok(Some(stats(
                &self.session.messages,
                &self.shared.info,
                &snap,
            ))),
            "get_last_assistant_text" => Ok(Some(
                json!({"text": last_assistant_text(&self.session.messages)}),
            )),
            "get_available_models" => Ok(Some(json!({"models": snap.models}))),
            "get_available_thinking_levels" => Ok(Some(json!({"levels": snap.thinking_levels}))),
            "clear_queue" => clear_queue(&self.shared, &queue),
            "set_steering_mode" => set_mode(&queue, b, true),
            "set_follow_up_mode" => set_mode(&queue, b, false),
            "set_auto_compaction" => match b.get("enabled").and_then(Json::as_bool) {
                Some(e) => {
                    self.session.config.settings.compaction_enabled = e;
                    Ok(None)
                }
                None => Err("\"enabled\" must be true or false".into()),
            },
            "set_auto_retry" => match b.get("enabled").and_then(Json::as_bool) {
                Some(e) => {
                    self.session.config.settings.retry_enabled = e;
                    Ok(None)
                }
                None => Err("\"enabled\" must be true or false".into()),
            },
            "set_thinking_level" => match text_field(b, "level") {
                Ok(l) if THINKING_LEVELS.contains(&l) => {
                    self.thinking(l)?;
                    Ok(None)
                }
                _ => Err(format!(
                    "\"level\" must be one of {}",
                    THINKING_LEVELS.join(", ")
                )),
            },
            "cycle_thinking_level" => {
                let c = &self.session.config;
                let levels = models::thinking_levels(&c.target.model, &c.target.details);
                if levels.len() <= 1 {
                    Ok(Some(Json::Null))
                } else {
                    let k = levels
                        .iter()
                        .position(|l| *l == c.thinking_level)
                        .map_or(0, |k| (k + 1) % levels.len());
                    let next = levels[k];
                    self.thinking(next)?;
                    Ok(Some(json!({"level": next})))
                }
            }
            "set_model" => self.set_model(b)?,
            "set_session_name" => match text_field(b, "name") {
                Ok(n) if !n.trim().is_empty() => {
                    let name = n.trim().to_owned();
                    if let Some(store) = self.session.store_mut() {
                        store.append("session_info", vec![("name", jstr(&name))])?;
                    }
                    self.shared.info.session_name = Some(name.clone());
                    write(
                        &self.shared.out,
                        &json!({"type": "session_info_changed", "name": name}),
                    );
                    Ok(None)
                }
                Ok(_) => Err("Session name cannot be empty".into()),
                Err(e) => Err(e),
            },
            // A session that cannot be made or read is this command's failure only.
            "new_session" => self.new_session(b).await.unwrap_or_else(failed),
            "switch_session" => self.switch_session(b).await.unwrap_or_else(failed),
            "fork" => self.fork(b, false).await.unwrap_or_else(failed),
            "clone" => self.fork(b, true).await.unwrap_or_else(failed),
            "get_fork_messages" => Ok(Some(ops::fork_messages(
                self.shared.info.session_file.as_deref(),
            ))),
            "cycle_model" => self.cycle_model(&snap)?,
            "get_commands" => Ok(Some(json!({"commands": self.shared.commands}))),
            "export_html" => self.export_html(b),
            t => Err(format!("Unknown command: {t}")),
        })
    }

    /// Sets the thinking level (clamped to the model), recording a change.
    fn thinking(&mut self, level: &str) -> anyhow::Result<()> {
        let c = &self.session.config;
        let level = models::clamp_thinking_level(&c.target.model, &c.target.details, level);
        if level == self.session.config.thinking_level {
            return Ok(());
        }
        self.session.config.thinking_level = level.to_owned();
        if let Some(store) = self.session.store_mut() {
            store.append_thinking_level(level)?;
        }
        write(
            &self.shared.out,
            &json!({"type": "thinking_level_changed", "level": level}),
        );
        Ok(())
    }

    fn set_model(&mut self, b: &Map<String, Json>) -> anyhow::Result<Reply> {
        let (provider, id) = match (text_field(b, "provider"), text_field(b, "modelId")) {
            (Ok(p), Ok(i)) => (p.to_owned(), i.to_owned()),
            (Err(e), _) | (_, Err(e)) => return Ok(Err(e)),
        };
        let c = &self.session.config;
        let reg = &c.credentials.registry;
        let Some(m) = reg.find(&provider, &id) else {
            return Ok(Err(format!("Model not found: {provider}/{id}")));
        };
        let details = reg.details_of(&provider, &id);
        let Some(target) = Target::new(m.clone(), details) else {
            return Ok(Err(format!(
                "Model {provider}/{id} uses the API \"{}\", which pi does not speak",
                m.api
            )));
        };
        if auth::source(&c.credentials.agent_dir, reg, &provider).is_none() {
            return Ok(Err(format!("No API key for provider \"{provider}\"")));
        }
        let data = models::model_json(&target.model, &target.details);
        let accepts_images = target.model.accepts_images();
        let level = self.session.config.thinking_level.clone();
        self.session.config.target = target;
        std::sync::Arc::make_mut(&mut self.session.config.tool_ctx).model_accepts_images =
            Some(accepts_images);
        if let Some(store) = self.session.store_mut() {
            store.append_model_change(&provider, &id)?;
        }
        self.thinking(&level)?;
        Ok(Ok(Some(data)))
    }
}

/// Commands of the reference's RPC mode (those pi does not serve are refused by name).
const KNOWN: &[&str] = &[
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "clear_queue",
    "get_available_thinking_levels",
    "get_entries",
    "get_tree",
    "new_session",
    "get_state",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_last_assistant_text",
    "set_session_name",
    "get_messages",
    "get_commands",
];

fn messages_json(ms: &[Message]) -> Json {
    Json::Array(ms.iter().map(pi_agent::agent::message_to_json).collect())
}
