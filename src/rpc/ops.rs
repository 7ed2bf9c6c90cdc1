//! The RPC commands that change which session the process works on (`new_session`,
//! `switch_session`, `fork`, `clone`), run a user's shell command (`bash`), cycle the model,
//! and read what a client shows (`get_fork_messages`, `get_commands`, `export_html`).
//!
//! A change of session writes the files `pi session new` and `pi session fork` write, then
//! the process records to the new file (the old one is unlocked), with an empty queue, as
//! upstream builds a new session for it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use serde_json::{Map, Value as Json, json};
use tokio::sync::mpsc;

use super::{Command, Info, Reply, Server, Snapshot, Stop, Work, respond, text_field, write};
use pi_agent::agent::Message;
use pi_agent::agent::hooks::Hooks;
use pi_agent::agent::store::{FileStore, compaction_time};
use pi_ai::models;
use pi_ai::value::{Obj, Value};
use pi_session::entry::jstr;
use pi_session::{Kind, Session, fork};
use pi_tools::{CancelToken, Tool, ToolContext, ToolError};

/// How long a change of session waits for another writer's short append.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The user messages of every entry of the session file (not only the active branch, as
/// upstream lists them), with their text: `{messages: [{entryId, text}]}`.
pub(super) fn fork_messages(file: Option<&Path>) -> Json {
    let mut list = Vec::new();
    if let Some(s) = file.and_then(|f| Session::open(f).ok()) {
        for (i, e) in s.entries.iter().enumerate() {
            if e.kind != Kind::Message {
                continue;
            }
            let Ok(line) = s.line(i as u32) else {
                continue;
            };
            let Ok(v) = pi_base::json::to_value(&line) else {
                continue;
            };
            let m = &v["message"];
            if m["role"] != "user" {
                continue;
            }
            let text = content_text(&m["content"]);
            if !text.is_empty() {
                list.push(json!({"entryId": e.id.as_str(), "text": text}));
            }
        }
    }
    json!({ "messages": list })
}

/// The text of a message's `content`: the string, or its text blocks concatenated.
fn content_text(content: &Json) -> String {
    match content {
        Json::String(t) => t.clone(),
        Json::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

/// What `get_commands` lists, as upstream's fields: program tools (`source: "extension"`),
/// prompt templates (`prompt`) and skills (`skill`, named `skill:<name>`), each with its
/// `sourceInfo` (`path`, `source`, `scope`, `origin`, `baseDir`).
/// Program tools of the project (under `<cwd>/.pi/`) have scope `project`, the others `user`.
pub fn commands_json(
    resources: &pi_prompt::resources::Resources,
    tools: &[Tool],
    cwd: &Path,
) -> Json {
    let mut list = Vec::new();
    let info = |path: &Path, source: &str, scope: &str, base: Option<&Path>| {
        let mut o = json!({"path": path.to_string_lossy(), "source": source,
                           "scope": scope, "origin": "top-level"});
        if let Some(b) = base {
            o["baseDir"] = json!(b.to_string_lossy());
        }
        o
    };
    for t in tools {
        if let Tool::Custom(c) = t {
            let d = c.definition();
            let path = c.source_path().unwrap_or_default();
            let base = path.parent().map(Path::to_path_buf);
            let scope = if path.starts_with(cwd.join(".pi")) {
                "project"
            } else {
                "user"
            };
            list.push(json!({
                "name": d.name,
                "description": d.description,
                "source": "extension",
                "sourceInfo": info(&path, "local", scope, base.as_deref()),
            }));
        }
    }
    for t in &resources.templates {
        list.push(json!({
            "name": t.name,
            "description": t.description,
            "source": "prompt",
            "sourceInfo": info(&t.path, t.source.source, t.source.scope.name(), Some(&t.source.base_dir)),
        }));
    }
    for s in &resources.skills {
        list.push(json!({
            "name": format!("skill:{}", s.name),
            "description": s.description,
            "source": "skill",
            "sourceInfo": info(&s.path, s.source.source, s.source.scope.name(), Some(&s.source.base_dir)),
        }));
    }
    Json::Array(list)
}

/// Whether a `bash` command asks to keep its output out of the model's context
/// (`excludeFromContext`).
pub(super) fn excluded(body: &Map<String, Json>) -> bool {
    body.get("excludeFromContext")
        .is_some_and(|v| v.as_bool() == Some(true))
}

/// A `bashExecution` message (upstream's record of a user's shell command); `exclude`
/// keeps it out of the model's context (`excludeFromContext: true`, after the timestamp as
/// 1.6 writes it).
pub(super) fn bash_message(command: &str, r: &pi_tools::bash::Execution, exclude: bool) -> Message {
    let mut m = Obj::new();
    m.set("role", Value::str("bashExecution"));
    m.set("command", Value::str(command));
    m.set("output", Value::str(&r.output));
    m.set(
        "exitCode",
        r.exit_code
            .map_or(Value::Null, |c| Value::Num(f64::from(c))),
    );
    m.set("cancelled", Value::Bool(r.cancelled));
    m.set("truncated", Value::Bool(r.truncated));
    if let Some(p) = &r.full_output_path {
        m.set("fullOutputPath", Value::str(&p.to_string_lossy()));
    }
    m.set("timestamp", Value::Num(pi_base::clock::now_ms() as f64));
    if exclude {
        m.set("excludeFromContext", Value::Bool(true));
    }
    Value::Obj(m)
}

/// The response data of `bash` (upstream's `BashResult`).
pub(super) fn bash_result(r: &pi_tools::bash::Execution) -> Json {
    let mut o = json!({
        "output": r.output,
        "exitCode": r.exit_code,
        "cancelled": r.cancelled,
        "truncated": r.truncated,
    });
    if r.exit_code.is_none() {
        // Upstream's undefined is left out.
        if let Some(m) = o.as_object_mut() {
            m.remove("exitCode");
        }
    }
    if let Some(p) = &r.full_output_path {
        o["fullOutputPath"] = json!(p.to_string_lossy());
    }
    o
}

/// A session read for the process to work on: its store, context and facts.
struct Loaded {
    store: FileStore,
    messages: Vec<Message>,
    last_compaction: Option<i64>,
    info: Info,
    cwd: PathBuf,
    model: Option<(String, String)>,
    thinking_level: Option<String>,
}

fn load(path: &Path, agent_dir: &Path) -> anyhow::Result<Loaded> {
    let s = Session::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let header = s
        .header
        .clone()
        .ok_or_else(|| anyhow::anyhow!("{} is not a session file", path.display()))?;
    let cwd = PathBuf::from(&header.cwd);
    if !cwd.is_dir() {
        anyhow::bail!(
            "the session's working directory {} does not exist (session {})",
            pi_base::text::escape(&cwd.to_string_lossy()),
            pi_base::text::escape(&path.to_string_lossy())
        );
    }
    let c = pi_agent::context::build(&s, s.leaf())
        .with_context(|| format!("cannot read {}", path.display()))?;
    let last_compaction = c.info.compaction.and_then(|i| compaction_time(&s, i));
    let store = FileStore::open(path, agent_dir, LOCK_WAIT)?;
    Ok(Loaded {
        store,
        messages: c.messages,
        last_compaction,
        info: Info {
            session_id: header.id.clone(),
            session_file: Some(path.to_owned()),
            session_name: s.name().map(str::to_owned),
        },
        cwd,
        model: c.info.model_ids(),
        thinking_level: c
            .info
            .thinking_level
            .as_ref()
            .and_then(Value::as_jstr)
            .map(|l| l.text().into_owned()),
    })
}

impl<'c, H: Hooks> Server<'_, 'c, H> {
    /// Works on `store` (its context `messages`) from now on; the old session is unlocked.
    fn adopt(
        &mut self,
        store: Option<FileStore>,
        messages: Vec<Message>,
        last_compaction: Option<i64>,
        info: Info,
        cwd: &Path,
    ) {
        let old = self.shared.info.session_file.clone();
        self.session.switch_to(store, messages, last_compaction);
        let file = self.session.store.as_ref().map(|s| s.path().to_owned());
        let ctx = Arc::make_mut(&mut self.session.config.tool_ctx);
        ctx.session_file = file.clone();
        ctx.cwd = cwd.to_owned();
        self.session.hooks.session_changed(cwd, file.as_deref());
        {
            let mut m = self.shared.mirror.borrow_mut();
            m.messages = self.session.messages.clone();
            m.steering.clear();
            m.follow_up.clear();
        }
        self.shared.info = info;
        // Full-output files the old session does not name go now.
        pi_tools::bash::remove_unreferenced_logs(old.as_deref());
    }

    fn cwd(&self) -> PathBuf {
        self.session.config.tool_ctx.cwd.clone()
    }

    /// `new_session {parentSession?}`: an empty session in the folder of the current one,
    /// starting with the model and the thinking level.
    pub(super) async fn new_session(&mut self, b: &Map<String, Json>) -> anyhow::Result<Reply> {
        let parent = match b.get("parentSession") {
            None | Some(Json::Null) => None,
            Some(Json::String(p)) => Some(p.clone()),
            Some(_) => return Ok(Err("\"parentSession\" must be a string".into())),
        };
        if self.session.hooks.before_switch("new", None).await {
            return Ok(Ok(Some(json!({"cancelled": true}))));
        }
        let cwd = self.cwd();
        let cwd_text = cwd.to_string_lossy().into_owned();
        let dir = self
            .session
            .store()
            .and_then(|s| s.path().parent().map(Path::to_path_buf));
        let (store, id, file) = match dir {
            Some(dir) => {
                let (path, header) = fork::create_empty(&dir, &cwd_text, parent.as_deref())?;
                let agent_dir = self.session.config.credentials.agent_dir.clone();
                let mut store = FileStore::open(&path, &agent_dir, LOCK_WAIT)?;
                let c = &self.session.config;
                store.append_model_change(&c.target.model.provider, &c.target.model.id)?;
                store.append_thinking_level(&c.thinking_level)?;
                let id = pi_base::json::get_str(&header, "id")
                    .map(|s| s.into_owned())
                    .unwrap_or_default();
                (Some(store), id, Some(path))
            }
            // Without a session file (--no-session) the new session is in memory too.
            None => (None, pi_agent::agent::store::new_header(&cwd_text).0, None),
        };
        let info = Info {
            session_id: id,
            session_file: file,
            session_name: None,
        };
        self.adopt(store, Vec::new(), None, info, &cwd);
        Ok(Ok(Some(json!({"cancelled": false}))))
    }

    /// `switch_session {sessionPath}`: works on that session from now on, in its working
    /// directory, with its model (when it has a key) and thinking level.
    pub(super) async fn switch_session(&mut self, b: &Map<String, Json>) -> anyhow::Result<Reply> {
        let path = match text_field(b, "sessionPath") {
            Ok(p) => std::path::absolute(p).unwrap_or_else(|_| PathBuf::from(p)),
            Err(e) => return Ok(Err(e)),
        };
        if !path.is_file() {
            return Ok(Err(format!("Session file not found: {}", path.display())));
        }
        if self
            .session
            .hooks
            .before_switch("resume", Some(&path))
            .await
        {
            return Ok(Ok(Some(json!({"cancelled": true}))));
        }
        let agent_dir = self.session.config.credentials.agent_dir.clone();
        let old = self.session.store.take();
        let loaded = match load(&path, &agent_dir) {
            Ok(l) => l,
            Err(e) => {
                self.session.store = match old {
                    Some(o) => {
                        let p = o.path().to_owned();
                        let leaf = o.leaf().map(str::to_owned);
                        drop(o);
                        let mut s = FileStore::open(&p, &agent_dir, LOCK_WAIT)?;
                        s.set_leaf(leaf);
                        Some(s)
                    }
                    None => None,
                };
                return Ok(Err(format!("{e:#}")));
            }
        };
        drop(old);
        let Loaded {
            store,
            messages,
            last_compaction,
            info,
            cwd,
            model,
            thinking_level,
        } = loaded;
        self.adopt(Some(store), messages, last_compaction, info, &cwd);
        if let Some((provider, id)) = model {
            self.use_model(&provider, &id);
        }
        let level = thinking_level.unwrap_or_else(|| self.session.config.thinking_level.clone());
        let c = &self.session.config;
        let level = models::clamp_thinking_level(&c.target.model, &c.target.details, &level);
        if level != self.session.config.thinking_level {
            self.session.config.thinking_level = level.to_owned();
            write(
                &self.shared.out,
                &json!({"type": "thinking_level_changed", "level": level}),
            );
        }
        Ok(Ok(Some(json!({"cancelled": false}))))
    }

    /// Uses the model recorded by a session when the registry has it with a key (nothing is
    /// recorded: the session names it already).
    fn use_model(&mut self, provider: &str, id: &str) {
        let c = &self.session.config;
        let reg = &c.credentials.registry;
        let Some(m) = reg.find(provider, id) else {
            return;
        };
        if pi_ai::auth::source(&c.credentials.agent_dir, reg, provider).is_none() {
            return;
        }
        let Some(target) = pi_ai::Target::new(m.clone(), reg.details_of(provider, id)) else {
            return;
        };
        let accepts = target.model.accepts_images();
        self.session.config.target = target;
        Arc::make_mut(&mut self.session.config.tool_ctx).model_accepts_images = Some(accepts);
    }

    /// `fork {entryId}` (a user message: the new session ends before it, and its text is
    /// returned) and `clone` (the whole active path).
    pub(super) async fn fork(
        &mut self,
        b: &Map<String, Json>,
        clone: bool,
    ) -> anyhow::Result<Reply> {
        let command = if clone { "clone" } else { "fork" };
        let Some(src) = self.shared.info.session_file.clone() else {
            return Ok(Err(format!(
                "Cannot {command}: the session is not recorded (--no-session)"
            )));
        };
        let entry_id = if clone {
            match self
                .session
                .store()
                .and_then(|s| s.leaf().map(str::to_owned))
            {
                Some(l) => l,
                None => {
                    return Ok(Err("Cannot clone session: no current entry selected".into()));
                }
            }
        } else {
            match text_field(b, "entryId") {
                Ok(e) => e.to_owned(),
                Err(e) => return Ok(Err(e)),
            }
        };
        let position = if clone { "at" } else { "before" };
        if self.session.hooks.before_fork(&entry_id, position).await {
            let mut data = json!({"cancelled": true});
            if !clone {
                data["text"] = json!("");
            }
            return Ok(Ok(Some(data)));
        }
        let s = Session::open(&src).with_context(|| format!("cannot read {}", src.display()))?;
        let Some(k) = s.get(&entry_id) else {
            return Ok(Err("Invalid entry ID for forking".into()));
        };
        let (end, text) = if clone {
            (Some(k), None)
        } else {
            let line = s.line(k)?;
            let v: Json = pi_base::json::to_value(&line).unwrap_or(Json::Null);
            if s.entries[k as usize].kind != Kind::Message || v["message"]["role"] != "user" {
                return Ok(Err("Invalid entry ID for forking".into()));
            }
            let text = content_text(&v["message"]["content"]);
            let parent = s.entries[k as usize].parent;
            let end = (parent != pi_session::store::NONE).then_some(parent);
            (end, Some(text))
        };
        let cwd = s
            .header
            .as_ref()
            .map(|h| h.cwd.clone())
            .unwrap_or_else(|| self.cwd().to_string_lossy().into_owned());
        let dir = src.parent().map(Path::to_path_buf).unwrap_or_default();
        let path = fork::write_fork(&s, &src, end, &cwd, &dir)?;
        drop(s);
        let agent_dir = self.session.config.credentials.agent_dir.clone();
        let l = load(&path, &agent_dir)?;
        self.adopt(Some(l.store), l.messages, l.last_compaction, l.info, &l.cwd);
        Ok(Ok(Some(match text {
            Some(t) => json!({"text": t, "cancelled": false}),
            None => json!({"cancelled": false}),
        })))
    }

    /// `cycle_model`: the next of the models with a key (`get_available_models`), or `null`
    /// when there is only one.
    pub(super) fn cycle_model(&mut self, snap: &Snapshot) -> anyhow::Result<Reply> {
        let list = &snap.models;
        if list.len() <= 1 {
            return Ok(Ok(Some(Json::Null)));
        }
        let c = &self.session.config;
        let current = list
            .iter()
            .position(|m| {
                m["provider"] == c.target.model.provider.as_str()
                    && m["id"] == c.target.model.id.as_str()
            })
            .unwrap_or(0);
        let next = &list[(current + 1) % list.len()];
        let mut body = Map::new();
        body.insert("provider".into(), next["provider"].clone());
        body.insert("modelId".into(), next["id"].clone());
        Ok(match self.set_model(&body)? {
            Ok(Some(model)) => Ok(Some(json!({
                "model": model,
                "thinkingLevel": self.session.config.thinking_level,
                "isScoped": false,
            }))),
            other => other,
        })
    }

    /// `export_html {outputPath?}`: the page of `pi session export` (default
    /// `pi-session-<file name>.html` in the working directory); returns the path as given.
    pub(super) fn export_html(&self, b: &Map<String, Json>) -> Reply {
        let Some(src) = self.shared.info.session_file.clone() else {
            return Err("Cannot export in-memory session to HTML".into());
        };
        let given = match b.get("outputPath") {
            None | Some(Json::Null) => {
                let stem = src
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("pi-session-{stem}.html")
            }
            Some(Json::String(p)) => p.clone(),
            Some(_) => return Err("\"outputPath\" must be a string".into()),
        };
        let dest = self.cwd().join(&given);
        write_html(&src, &dest).map_err(|e| format!("{e:#}"))?;
        Ok(Some(json!({ "path": given })))
    }

    /// `bash {command, excludeFromContext?}`: runs while other commands are served
    /// (`abort_bash` stops it); its output is streamed as `bash_execution_update` events
    /// (with the command's `id`); the result is recorded as a `bashExecution` message.
    pub(super) async fn bash(
        &mut self,
        cmd: Command,
        input: &mut mpsc::UnboundedReceiver<Vec<u8>>,
        snap: &Snapshot,
    ) -> anyhow::Result<Option<Stop>> {
        let command = match text_field(&cmd.body, "command") {
            Ok(c) => c.to_owned(),
            Err(e) => {
                respond(&self.shared.out, &cmd.id, "bash", Err(e));
                return Ok(None);
            }
        };
        let ctx: Arc<ToolContext> = self.session.config.tool_ctx.clone();
        let cancel = CancelToken::new();
        let out = self.shared.out.clone();
        let c2 = cancel.clone();
        let cmd_text = command.clone();
        let id = cmd.id.clone();
        let exclude = excluded(&cmd.body);
        let (result, end) = self
            .busy(
                move |_s| bash_future(ctx, cmd_text, c2, out, id),
                cancel,
                input,
                snap,
                Work::Bash,
            )
            .await;
        let reply = match result {
            Ok(r) => {
                self.record_bash(bash_message(&command, &r, exclude))?;
                Ok(Some(bash_result(&r)))
            }
            Err(e) => Err(e.0),
        };
        respond(&self.shared.out, &cmd.id, "bash", reply);
        self.after_busy(end)
    }
}

/// A `bash` command running: streams its output as `bash_execution_update` events
/// (`{id?, delta}`, 1.6's), each chunk as it comes.
pub(super) type BashFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<pi_tools::bash::Execution, ToolError>>>,
>;

pub(super) fn bash_future(
    ctx: Arc<ToolContext>,
    command: String,
    cancel: CancelToken,
    out: super::Out,
    id: Option<Json>,
) -> BashFuture {
    Box::pin(async move {
        // Chunks cross a channel: the command's future must be `Send`.
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let run = async move {
            let mut chunk = move |t: &str| {
                let _ = tx.send(t.to_owned());
            };
            pi_tools::bash::execute(&ctx, &command, &cancel, &mut chunk).await
        };
        let pump = async {
            while let Some(t) = rx.recv().await {
                let mut e = Map::new();
                e.insert("type".into(), json!("bash_execution_update"));
                if let Some(id) = &id {
                    e.insert("id".into(), id.clone());
                }
                e.insert("delta".into(), json!(t));
                write(&out, &Json::Object(e));
            }
        };
        tokio::join!(run, pump).0
    })
}

impl<'c, H: Hooks> Server<'_, 'c, H> {
    /// Records a `bashExecution` message and adds it to the context.
    pub(super) fn record_bash(&mut self, m: Message) -> anyhow::Result<()> {
        if let Some(store) = self.session.store_mut() {
            store.append_message(&m)?;
        }
        self.session.messages.push(m.clone());
        self.shared.mirror.borrow_mut().messages.push(m);
        Ok(())
    }
}

/// Writes the HTML page of the session at `src` to `dest` (through a temporary file, 0600);
/// a session file is never overwritten.
fn write_html(src: &Path, dest: &Path) -> anyhow::Result<()> {
    if dest.exists() {
        let same = std::fs::canonicalize(dest).ok() == std::fs::canonicalize(src).ok();
        let is_session = pi_session::find::read_header(dest).is_some();
        if same || is_session {
            anyhow::bail!(
                "{} is a session file; a session file is never overwritten",
                dest.display()
            );
        }
    }
    let s = Session::open(src).with_context(|| format!("cannot read {}", src.display()))?;
    let labels = crate::render::labels(&s);
    let mut f = pi_base::fs::AtomicFile::create(dest)
        .with_context(|| format!("cannot create a file beside {}", dest.display()))?;
    crate::render::html::write_page(&s, s.leaf(), &labels, None, f.writer())?;
    f.commit()
        .with_context(|| format!("cannot write {}", dest.display()))
}

/// The entries of a session file (header left out), in append order, each as its line.
fn entry_lines(s: &Session) -> std::io::Result<Vec<Vec<u8>>> {
    let order: Vec<u32> = (0..s.entries.len() as u32).collect();
    let mut lines = Vec::with_capacity(order.len());
    s.for_each_line(&order, |_, line| {
        lines.push(line.trim_ascii().to_vec());
        Ok(())
    })?;
    Ok(lines)
}

/// `leafId`: the given leaf, else the file's last entry, else `null`.
fn leaf_json(s: Option<&Session>, leaf: Option<String>) -> Vec<u8> {
    let leaf = leaf.or_else(|| {
        let s = s?;
        let i = s.leaf()?;
        Some(s.entries[i as usize].id.as_str().to_owned())
    });
    match leaf {
        Some(l) => {
            let mut v = Vec::new();
            pi_base::json::write_str(&mut v, &l);
            v
        }
        None => b"null".to_vec(),
    }
}

fn open_for_read(file: Option<&Path>) -> Result<Option<Session>, String> {
    match file {
        None => Ok(None),
        Some(f) => Session::open(f)
            .map(Some)
            .map_err(|e| format!("cannot read {}: {e}", f.display())),
    }
}

/// `get_entries {since?}`: every entry in append order (after `since`, when given), with
/// the leaf: `{"entries": [...], "leafId"}` as JSON text. A session without a file
/// (`--no-session`) has none.
pub(super) fn entries(
    file: Option<&Path>,
    leaf: Option<String>,
    since: Option<&Json>,
) -> Result<Vec<u8>, String> {
    let since = match since {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(s.as_str()),
        Some(_) => return Err("\"since\" must be a string".into()),
    };
    let s = open_for_read(file)?;
    let lines = match &s {
        Some(s) => entry_lines(s).map_err(|e| format!("{e}"))?,
        None => Vec::new(),
    };
    let start = match since {
        None => 0,
        Some(id) => match s.as_ref().and_then(|s| s.get(id)) {
            Some(k) => k as usize + 1,
            None => return Err(format!("Entry not found: {id}")),
        },
    };
    let mut out = b"{\"entries\":[".to_vec();
    for (k, l) in lines[start.min(lines.len())..].iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        out.extend_from_slice(l);
    }
    out.extend_from_slice(b"],\"leafId\":");
    out.extend(leaf_json(s.as_ref(), leaf));
    out.push(b'}');
    Ok(out)
}

/// `get_tree`: the entries as a tree, `{"tree": [{entry, children, label?,
/// labelTimestamp?}], "leafId"}` as JSON text, as 1.6's `getTree` builds it: roots are
/// the entries without a parent (or whose parent is missing), children in timestamp order.
/// Written without recursion: a session is a chain as long as its history.
pub(super) fn tree(file: Option<&Path>, leaf: Option<String>) -> Result<Vec<u8>, String> {
    let s = open_for_read(file)?;
    let Some(sess) = &s else {
        let mut out = b"{\"tree\":[],\"leafId\":".to_vec();
        out.extend(leaf_json(None, leaf));
        out.push(b'}');
        return Ok(out);
    };
    let lines = entry_lines(sess).map_err(|e| format!("{e}"))?;
    let n = lines.len();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (i, r) in sess.entries.iter().enumerate() {
        if r.parent == pi_session::store::NONE || r.parent as usize >= n {
            roots.push(i as u32);
        } else {
            children[r.parent as usize].push(i as u32);
        }
    }
    let stamp = |i: u32| {
        pi_base::json::get_str(&lines[i as usize], "timestamp")
            .map(|t| t.into_owned())
            .unwrap_or_default()
    };
    for c in &mut children {
        c.sort_by_cached_key(|&i| stamp(i));
    }
    let labels: std::collections::HashMap<String, (String, String)> = sess
        .resolved_labels()
        .into_iter()
        .map(|(id, l, t)| (id.as_str().to_owned(), (l, t)))
        .collect();
    let mut out = b"{\"tree\":[".to_vec();
    // (siblings, position): the lists being written, innermost last.
    let mut stack: Vec<(&[u32], usize)> = vec![(&roots, 0)];
    while let Some((list, pos)) = stack.pop() {
        if pos < list.len() {
            let i = list[pos];
            if pos > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"entry\":");
            out.extend_from_slice(&lines[i as usize]);
            out.extend_from_slice(b",\"children\":[");
            stack.push((list, pos + 1));
            stack.push((&children[i as usize], 0));
            continue;
        }
        // A list is done: close it, and the node that holds it (the roots have none).
        out.push(b']');
        if let Some(&(parent_list, next)) = stack.last() {
            let node = parent_list[next - 1];
            let id = sess.entries[node as usize].id.as_str();
            if let Some((l, t)) = labels.get(id) {
                out.extend_from_slice(b",\"label\":");
                pi_base::json::write_str(&mut out, l);
                out.extend_from_slice(b",\"labelTimestamp\":");
                pi_base::json::write_str(&mut out, t);
            }
            out.push(b'}');
        }
    }
    out.extend_from_slice(b",\"leafId\":");
    out.extend(leaf_json(s.as_ref(), leaf));
    out.push(b'}');
    Ok(out)
}

impl<H: Hooks> Server<'_, '_, H> {
    /// `branch {entryId, summary?}` (`pi chat`'s `/branch`): moves the leaf to the entry
    /// (an id, a unique prefix, or `root`), as `pi session branch` records it (a
    /// `branch_summary` with the summary, else a `custom` "branch" entry); the context is
    /// the path to it from now on.
    pub(super) fn branch(&mut self, b: &Map<String, Json>) -> anyhow::Result<Reply> {
        let entry = match text_field(b, "entryId") {
            Ok(e) => e.to_owned(),
            Err(e) => return Ok(Err(e)),
        };
        let summary = b
            .get("summary")
            .and_then(Json::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let Some(src) = self.shared.info.session_file.clone() else {
            return Ok(Err("Cannot branch: the session is not recorded".into()));
        };
        let s = Session::open(&src).with_context(|| format!("cannot read {}", src.display()))?;
        let target = match s.resolve_entry(&entry) {
            Ok(i) => Some(s.entries[i as usize].id.as_str().to_owned()),
            Err(_) if entry == "root" => None,
            Err(e) => return Ok(Err(e.to_string())),
        };
        drop(s);
        let Some(mut store) = self.session.store.take() else {
            return Ok(Err("Cannot branch: the session is not recorded".into()));
        };
        let from = store.leaf().map(str::to_owned);
        store.set_leaf(target.clone());
        let r = match summary {
            Some(text) => store.append(
                "branch_summary",
                vec![
                    ("fromId", jstr(from.as_deref().unwrap_or("root"))),
                    ("summary", jstr(text)),
                    ("fromHook", b"false".to_vec()),
                ],
            ),
            None => {
                let mut data = b"{\"from\":".to_vec();
                data.extend(from.as_deref().map_or_else(|| b"null".to_vec(), jstr));
                data.push(b'}');
                store.append(
                    "custom",
                    vec![("customType", jstr("branch")), ("data", data)],
                )
            }
        };
        let context = r
            .map_err(anyhow::Error::from)
            .and_then(|_| store.context().map_err(anyhow::Error::from));
        let (messages, last) = match context {
            Ok(c) => c,
            Err(e) => {
                self.session.store = Some(store);
                return Err(e);
            }
        };
        let count = messages.len();
        self.session.switch_to(Some(store), messages, last);
        self.shared.mirror.borrow_mut().messages = self.session.messages.clone();
        Ok(Ok(Some(json!({"leafId": target, "messages": count}))))
    }

    /// `label {entryId, label}` (`pi chat`'s `/label`): labels an entry (an empty label
    /// clears it), as `pi session label` records it.
    pub(super) fn label(&mut self, b: &Map<String, Json>) -> anyhow::Result<Reply> {
        let (entry, label) = match (text_field(b, "entryId"), text_field(b, "label")) {
            (Ok(e), Ok(l)) => (e.to_owned(), l.trim().to_owned()),
            (Err(e), _) | (_, Err(e)) => return Ok(Err(e)),
        };
        let Some(src) = self.shared.info.session_file.clone() else {
            return Ok(Err("Cannot label: the session is not recorded".into()));
        };
        let s = Session::open(&src).with_context(|| format!("cannot read {}", src.display()))?;
        let target = match s.resolve_entry(&entry) {
            Ok(i) => s.entries[i as usize].id.as_str().to_owned(),
            Err(e) => return Ok(Err(e.to_string())),
        };
        drop(s);
        let Some(store) = self.session.store_mut() else {
            return Ok(Err("Cannot label: the session is not recorded".into()));
        };
        let mut fields = vec![("targetId", jstr(&target))];
        if !label.is_empty() {
            fields.push(("label", jstr(&label)));
        }
        store.append("label", fields)?;
        Ok(Ok(Some(json!({"entryId": target}))))
    }
}
