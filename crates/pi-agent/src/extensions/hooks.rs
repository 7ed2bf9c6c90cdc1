//! Running hooks: each is a shell command that gets one JSON object on stdin (the event)
//! and may print one JSON object on stdout (its answer; nothing means "carry on").
//!
//! Every event object has `event` (its name), `cwd` and `sessionFile` (or null), plus the
//! fields of the event. Besides its event's own fields, any answer may carry
//! `appendEntry` (`{customType, data}`, or a list: recorded as `custom` entries) and
//! `customMessage` (`{customType, content, display?, details?}`, or a list: added to the
//! context and recorded as `custom_message` entries). Hooks of one event run one after
//! another, in order; each sees what the earlier ones changed.
//!
//! A hook fails when it cannot be started, exits with a status other than 0, runs past its
//! timeout (its process group is killed), or prints something that is not a JSON object.
//! A failure is reported (`extension_error`, and a warning on stderr); its `onError`
//! decides whether it stops what the hook guards ([`OnError`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value as Json, json};

use super::Project;
use super::config::{HookEvent, HookSet, HookSpec, OnError};
use super::env::Policy;
use super::process::{self, RunError, Spec};
use crate::agent::Message;
use crate::agent::hooks::{Effects, HookError, Hooks, Input, ToolCall};
use crate::compact::{Compact, CompactionReason, CompactionResult, Plan};
use pi_base::js;
use pi_tools::{CancelToken, Content, ToolResult};

use crate::agent::{message_from_json as from_json, message_to_json as to_json};

fn to_json_list(ms: &[Message]) -> Json {
    Json::Array(ms.iter().map(to_json).collect())
}

/// Where hooks run and what they are told about the session.
#[derive(Debug, Clone)]
pub struct Runner {
    pub hooks: HookSet,
    /// The session's working directory (the hooks' working directory).
    pub cwd: PathBuf,
    pub session_file: Option<PathBuf>,
    /// Set in every hook's environment besides `PI_HOOK_EVENT`, `PI_CWD` and
    /// `PI_SESSION_FILE`.
    pub env: Vec<(String, OsString)>,
    /// What hooks get of pi's environment.
    pub policy: Arc<Policy>,
}

/// What one hook gave.
enum Answer {
    /// It printed nothing (or was cancelled).
    Nothing,
    Object(Map<String, Json>),
    Failed(String),
}

impl Runner {
    pub fn new(hooks: HookSet, cwd: PathBuf, session_file: Option<PathBuf>) -> Runner {
        Runner {
            hooks,
            cwd,
            session_file,
            env: Vec::new(),
            policy: Arc::default(),
        }
    }

    /// The event object a hook reads.
    fn payload(&self, event: HookEvent, fields: Map<String, Json>) -> Vec<u8> {
        let mut o = Map::new();
        o.insert("event".into(), json!(event.as_str()));
        o.insert("cwd".into(), json!(self.cwd.to_string_lossy()));
        o.insert(
            "sessionFile".into(),
            match &self.session_file {
                Some(p) => json!(p.to_string_lossy()),
                None => Json::Null,
            },
        );
        o.extend(fields);
        let mut bytes = js::stringify(&Json::Object(o));
        bytes.push(b'\n');
        bytes
    }

    /// Runs one hook with `payload` on its stdin.
    async fn call(&self, h: &HookSpec, payload: &[u8], cancel: Option<&CancelToken>) -> Answer {
        let mut env = vec![
            ("PI_HOOK_EVENT".to_owned(), OsString::from(h.event.as_str())),
            ("PI_CWD".to_owned(), self.cwd.clone().into_os_string()),
        ];
        if let Some(f) = &self.session_file {
            env.push(("PI_SESSION_FILE".to_owned(), f.clone().into_os_string()));
        }
        env.extend(self.env.iter().cloned());
        let spec = Spec {
            argv: vec!["/bin/sh".into(), "-c".into(), h.command.clone().into()],
            cwd: self.cwd.clone(),
            policy: self.policy.clone(),
            env,
            stdin: payload.to_vec(),
            timeout: Some(h.timeout),
            capture_stderr: false,
        };
        let done = match process::run(&spec, cancel).await {
            Ok(d) => d,
            Err(RunError::Cancelled) => return Answer::Nothing,
            Err(e) => return Answer::Failed(e.to_string()),
        };
        if !done.status.success() {
            return Answer::Failed(format!(
                "it ended with {}",
                process::describe_status(&done.status)
            ));
        }
        let text = String::from_utf8_lossy(&done.stdout);
        let text = text.trim();
        if text.is_empty() {
            return Answer::Nothing;
        }
        match serde_json::from_str::<Json>(text) {
            Ok(Json::Object(o)) => Answer::Object(o),
            Ok(_) => Answer::Failed(format!(
                "it printed JSON that is not an object: {}",
                preview(text)
            )),
            Err(e) => Answer::Failed(format!(
                "it printed something that is not JSON ({e}): {}",
                preview(text)
            )),
        }
    }
}

/// The start of a hook's output, for messages.
fn preview(text: &str) -> String {
    let one: String = text.chars().take(120).collect();
    let one = one.replace('\n', "\\n");
    if text.chars().count() > 120 {
        format!("{one}…")
    } else {
        one
    }
}

/// The `customType` of `o` (a non-empty string); `what` names `o` in the error.
fn custom_type<'a>(o: &'a Map<String, Json>, what: &str) -> Result<&'a str, String> {
    o.get("customType")
        .and_then(Json::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("{what} needs \"customType\" (a non-empty string)"))
}

/// A custom message from a hook's answer (upstream's `CustomMessage`).
fn custom_message(v: &Json) -> Result<Message, String> {
    let o = v
        .as_object()
        .ok_or("a custom message must be an object {customType, content, display?, details?}")?;
    let ty = custom_type(o, "a custom message")?;
    let content = match o.get("content") {
        Some(c @ Json::String(_)) => c.clone(),
        Some(c @ Json::Array(blocks)) if !blocks.is_empty() => {
            check_blocks(blocks, "a custom message's content")?;
            c.clone()
        }
        _ => {
            return Err(
                "a custom message needs \"content\" (a string or a non-empty list of blocks)"
                    .into(),
            );
        }
    };
    let display = match o.get("display") {
        None => true,
        Some(Json::Bool(b)) => *b,
        Some(_) => return Err("\"display\" of a custom message must be true or false".into()),
    };
    let mut m = Map::new();
    m.insert("role".into(), json!("custom"));
    m.insert("customType".into(), json!(ty));
    m.insert("content".into(), content);
    m.insert("display".into(), json!(display));
    if let Some(d) = o.get("details") {
        m.insert("details".into(), d.clone());
    }
    m.insert("timestamp".into(), json!(pi_base::clock::now_ms()));
    Ok(from_json(&Json::Object(m)))
}

/// An answer may only have the fields its event knows (a misspelt `block` must not let a
/// call through unnoticed).
fn known_keys(answer: &Map<String, Json>, allowed: &[&str]) -> Result<(), String> {
    match answer.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => {
            let mut known: Vec<&str> = allowed.to_vec();
            known.extend(["appendEntry", "customMessage"]);
            Err(format!(
                "unknown field \"{k}\" in its answer (this event takes: {})",
                known.join(", ")
            ))
        }
    }
}

/// Checks content blocks a hook gives (a custom message's or a tool result's): text and
/// image blocks only, with their fields of the right types.
fn check_blocks(blocks: &[Json], what: &str) -> Result<(), String> {
    for (k, b) in blocks.iter().enumerate() {
        let ok = match b.get("type").and_then(Json::as_str) {
            Some("text") => b.get("text").is_some_and(Json::is_string),
            Some("image") => {
                b.get("data").is_some_and(Json::is_string)
                    && b.get("mimeType").is_some_and(Json::is_string)
            }
            _ => false,
        };
        if !ok {
            return Err(format!(
                "{what}[{k}] must be {{\"type\": \"text\", \"text\": …}} or {{\"type\": \"image\", \"data\": …, \"mimeType\": …}}"
            ));
        }
    }
    Ok(())
}

/// The roles of agent messages a `context` hook may send.
const ROLES: [&str; 8] = [
    "system",
    "user",
    "assistant",
    "toolResult",
    "custom",
    "bashExecution",
    "branchSummary",
    "compactionSummary",
];

/// One value or a list of them.
fn one_or_many(v: &Json) -> Vec<&Json> {
    match v {
        Json::Array(a) => a.iter().collect(),
        v => vec![v],
    }
}

/// Takes `appendEntry` and `customMessage` out of an answer into `fx`; a malformed one is
/// the hook's failure.
fn take_extras(answer: &mut Map<String, Json>, fx: &mut Effects) -> Result<(), String> {
    if let Some(v) = answer.remove("appendEntry") {
        for e in one_or_many(&v) {
            let o = e
                .as_object()
                .ok_or("\"appendEntry\" must be {customType, data} or a list of them")?;
            let ty = custom_type(o, "\"appendEntry\"")?;
            fx.entries
                .push((ty.to_owned(), o.get("data").cloned().unwrap_or(Json::Null)));
        }
    }
    if let Some(v) = answer.remove("customMessage") {
        for m in one_or_many(&v) {
            fx.messages.push(custom_message(m)?);
        }
    }
    Ok(())
}

/// The entries hooks asked for outside a run (`pi compact`, `pi session branch`): `custom`
/// and `custom_message` entries chained after the command's own entry.
pub fn effect_entries(fx: &Effects) -> Vec<pi_session::append::NewEntry> {
    use pi_session::append::{NewEntry, Parent};
    use pi_session::entry::jstr;
    let mut out = Vec::new();
    for (ty, data) in &fx.entries {
        out.push(
            NewEntry::new("custom", Parent::Leaf)
                .field("customType", jstr(ty))
                .field("data", js::stringify(data)),
        );
    }
    for m in &fx.messages {
        let mut e = NewEntry::new("custom_message", Parent::Leaf);
        for k in ["customType", "content", "display", "details"] {
            if let Some(v) = m.get(k) {
                e = e.field(k, v.to_json());
            }
        }
        out.push(e);
    }
    out
}

/// The hooks of a run as [`Hooks`] of the agent loop.
pub struct ProgramHooks {
    pub runner: Runner,
    cancel: Option<CancelToken>,
    fx: Effects,
    /// Told of every failure as it happens (the caller prints it; the failures are also
    /// collected for the run's events).
    warn: fn(&str),
}

/// How a hook's failure is described.
fn failure_text(h: &HookSpec, error: &str) -> String {
    format!("hook `{}` ({}) failed: {error}", h.command, h.event)
}

impl ProgramHooks {
    /// Hooks run by `runner`; `warn` is told of each failure as it happens.
    pub fn new(runner: Runner, warn: fn(&str)) -> ProgramHooks {
        ProgramHooks {
            runner,
            cancel: None,
            fx: Effects::default(),
            warn,
        }
    }

    /// Records a failure; `true` when it stops what the hook guards.
    fn failed(&mut self, h: &HookSpec, error: String) -> bool {
        (self.warn)(&failure_text(h, &error));
        self.fx.errors.push(HookError {
            hook: h.command.clone(),
            event: h.event.as_str().to_owned(),
            error,
        });
        h.on_error == OnError::Block && !h.event.is_notification()
    }

    /// Runs the hooks of `event` that `filter` keeps, one after another, each with the
    /// payload `make` builds now (so it sees the earlier hooks' changes); `on_answer`
    /// handles each answer (`Err`: the answer was malformed, a failure of the hook) and
    /// returns `true` to stop running the remaining hooks. Returns the hook whose
    /// blocking failure stopped the event, if one did.
    async fn each<S: Clone>(
        &mut self,
        event: HookEvent,
        state: &mut S,
        filter: impl Fn(&HookSpec) -> bool,
        make: impl Fn(&S) -> Map<String, Json>,
        allowed: &[&str],
        mut on_answer: impl FnMut(&mut S, Map<String, Json>) -> Result<bool, String>,
    ) -> Option<String> {
        let hooks: Vec<HookSpec> = self
            .runner
            .hooks
            .of(event)
            .filter(|h| filter(h))
            .cloned()
            .collect();
        // Notifications run even after a cancel (they have their own timeout).
        let cancel = if event.is_notification() {
            None
        } else {
            self.cancel.clone()
        };
        for h in hooks {
            let payload = self.runner.payload(event, make(state));
            let answer = self.runner.call(&h, &payload, cancel.as_ref()).await;
            // An answer is taken whole or not at all: changes go to copies first.
            let mut next = state.clone();
            let mut fx = Effects::default();
            let result = match answer {
                Answer::Nothing => Ok(false),
                Answer::Failed(e) => Err(e),
                Answer::Object(mut o) => take_extras(&mut o, &mut fx)
                    .and_then(|()| known_keys(&o, allowed))
                    .and_then(|()| on_answer(&mut next, o)),
            };
            match result {
                Ok(done) => {
                    *state = next;
                    self.fx.entries.extend(fx.entries);
                    self.fx.messages.extend(fx.messages);
                    if done {
                        return None;
                    }
                }
                Err(e) => {
                    let text = failure_text(&h, &e);
                    if self.failed(&h, e) {
                        return Some(text);
                    }
                }
            }
        }
        None
    }

    /// Runs a notification's hooks.
    async fn notify(&mut self, event: HookEvent, fields: Map<String, Json>) {
        if !self.runner.hooks.has(event) {
            return;
        }
        self.each(
            event,
            &mut (),
            |_| true,
            |_| fields.clone(),
            &[],
            |_, _| Ok(false),
        )
        .await;
    }

    /// Runs the hooks of an event they may cancel (`{"cancel": true}`, or a failure that
    /// blocks); `true` when one did.
    async fn cancellable(&mut self, event: HookEvent, payload: Map<String, Json>) -> bool {
        if !self.runner.hooks.has(event) {
            return false;
        }
        let mut cancelled = false;
        let stop = self
            .each(
                event,
                &mut cancelled,
                |_| true,
                |_| payload.clone(),
                &["cancel"],
                |c, answer| {
                    *c = cancels(&answer);
                    Ok(*c)
                },
            )
            .await;
        cancelled || stop.is_some()
    }

    /// Reports an extension that could not run (it is part of the next effects taken, as
    /// an `extension_error`); the caller has warned about it already.
    pub fn report(&mut self, e: HookError) {
        self.fx.errors.push(e);
    }

    /// Takes the effects gathered so far.
    pub fn take(&mut self) -> Effects {
        std::mem::take(&mut self.fx)
    }
}

fn fields(pairs: Vec<(&str, Json)>) -> Map<String, Json> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The `preparation` object of `session_before_compact`.
pub(crate) fn compact_preparation(plan: &Plan) -> Json {
    let (read, modified) = plan.file_ops.lists();
    json!({
        "firstKeptEntryId": plan.first_kept_entry_id,
        "tokensBefore": plan.tokens_before,
        "isSplitTurn": plan.split_turn,
        "previousSummary": plan.previous_summary,
        "messagesToSummarize": to_json_list(&plan.history.messages),
        "turnPrefixMessages": to_json_list(&plan.turn_prefix.messages),
        "readFiles": read,
        "modifiedFiles": modified,
    })
}

/// A summary a `session_before_compact` hook supplied: `{"compaction": {summary, details?}}`
/// or `{"summary": "…"}`.
fn supplied_compaction(
    answer: &Map<String, Json>,
    plan: &Plan,
) -> Result<Option<CompactionResult>, String> {
    let (summary, details) = match (answer.get("compaction"), answer.get("summary")) {
        (Some(Json::Object(c)), _) => (
            c.get("summary")
                .and_then(Json::as_str)
                .ok_or("\"compaction\" needs \"summary\" (a string)")?,
            c.get("details").cloned(),
        ),
        (Some(_), _) => return Err("\"compaction\" must be an object {summary, details?}".into()),
        (None, Some(Json::String(s))) => (s.as_str(), None),
        (None, Some(_)) => return Err("\"summary\" must be a string".into()),
        (None, None) => return Ok(None),
    };
    if summary.trim().is_empty() {
        return Err("the summary is empty".into());
    }
    let (read, modified) = plan.file_ops.lists();
    Ok(Some(CompactionResult {
        summary: summary.to_owned(),
        first_kept_entry_id: plan.first_kept_entry_id.clone(),
        tokens_before: plan.tokens_before,
        estimated_tokens_after: None,
        usage: None,
        details: details.unwrap_or_else(|| crate::agent::store::file_details(&read, &modified)),
    }))
}

/// Whether an answer says `cancel: true`.
fn cancels(answer: &Map<String, Json>) -> bool {
    answer.get("cancel").is_some_and(js::truthy)
}

/// The `session_before_compact` hooks: what to do with the compaction planned as `plan`.
pub(crate) async fn before_compact(
    hooks: &mut ProgramHooks,
    plan: &Plan,
    reason: CompactionReason,
    instructions: Option<&str>,
) -> Compact {
    let mut decision = Compact::Proceed;
    let preparation = compact_preparation(plan);
    let stop = hooks
        .each(
            HookEvent::SessionBeforeCompact,
            &mut decision,
            |_| true,
            |_| {
                fields(vec![
                    ("reason", json!(reason.as_str())),
                    ("customInstructions", json!(instructions)),
                    ("preparation", preparation.clone()),
                ])
            },
            &["cancel", "summary", "compaction"],
            |d, answer| {
                if cancels(&answer) {
                    *d = Compact::Cancel;
                    return Ok(true);
                }
                if let Some(r) = supplied_compaction(&answer, plan)? {
                    *d = Compact::Use(r);
                    return Ok(true);
                }
                Ok(false)
            },
        )
        .await;
    if stop.is_some() {
        return Compact::Cancel;
    }
    decision
}

/// The hooks of `event` for the session at `path` whose working directory is `cwd`: those of
/// the global settings, of the project's when it is trusted, and of `flags`, run in `cwd` (in
/// `fallback_cwd` when `cwd` is gone). `None` when there are none; then the warnings met
/// (an untrusted project's refusal among them). `warn` is told of the hooks' failures.
pub fn for_session(
    agent_dir: &Path,
    cwd: &Path,
    fallback_cwd: &Path,
    flags: &[String],
    path: &Path,
    event: HookEvent,
    warn: fn(&str),
) -> (Option<ProgramHooks>, Vec<String>) {
    let project = Project::load(agent_dir, cwd);
    let mut warnings = project.warnings.clone();
    warnings.extend(project.refused.clone());
    let (set, hook_warnings) = crate::extensions::config::load(agent_dir, &project, flags);
    warnings.extend(hook_warnings);
    if !set.has(event) {
        return (None, warnings);
    }
    let run_in = if cwd.is_dir() { cwd } else { fallback_cwd };
    let mut runner = Runner::new(set, run_in.to_owned(), Some(path.to_owned()));
    runner.policy = project.policy;
    (Some(ProgramHooks::new(runner, warn)), warnings)
}

impl crate::compact::BeforeCompact for ProgramHooks {
    async fn before_compact(
        &mut self,
        plan: &Plan,
        reason: CompactionReason,
        instructions: Option<&str>,
    ) -> Compact {
        before_compact(self, plan, reason, instructions).await
    }

    fn take_entries(&mut self) -> Vec<pi_session::append::NewEntry> {
        effect_entries(&self.take())
    }
}

/// What the `session_before_tree` hooks decided about a move of the leaf.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    Proceed,
    Cancel(Option<String>),
    /// Write this branch summary (with these details, if given).
    Summary(String, Option<Json>),
}

/// The `preparation` object of `session_before_tree` for moving the leaf of `s` to
/// `target` (`None`: a new root): `targetId`, `oldLeafId`, `commonAncestorId`,
/// `entriesToSummarize` (the entries left behind, oldest first), `userWantsSummary`.
pub fn tree_preparation(
    s: &pi_session::Session,
    target: Option<u32>,
    user_wants_summary: bool,
) -> std::io::Result<Json> {
    let old_leaf = s.leaf();
    let (entries, ancestor) = crate::compact::branch::collect(s, old_leaf, target);
    let id = |i: Option<u32>| match i {
        Some(i) => Json::from(s.entries[i as usize].id.to_string()),
        None => Json::Null,
    };
    let mut list = Vec::new();
    s.for_each_line(&entries, |_, line| {
        list.push(serde_json::from_slice(line).unwrap_or(Json::Null));
        Ok(())
    })?;
    Ok(json!({
        "targetId": id(target),
        "oldLeafId": id(old_leaf),
        "commonAncestorId": id(ancestor),
        "entriesToSummarize": list,
        "userWantsSummary": user_wants_summary,
    }))
}

/// The `session_before_tree` hooks of `pi session branch`. `preparation` describes the
/// move (`targetId`, `oldLeafId`, `commonAncestorId`, `entriesToSummarize`,
/// `userWantsSummary`).
pub async fn before_tree(hooks: &mut ProgramHooks, preparation: Json) -> Tree {
    let mut decision = Tree::Proceed;
    let stop = hooks
        .each(
            HookEvent::SessionBeforeTree,
            &mut decision,
            |_| true,
            |_| fields(vec![("preparation", preparation.clone())]),
            &["cancel", "summary"],
            |d, answer| {
                if cancels(&answer) {
                    *d = Tree::Cancel(None);
                    return Ok(true);
                }
                let (text, details) = match answer.get("summary") {
                    None => return Ok(false),
                    Some(Json::String(s)) => (s.clone(), None),
                    Some(Json::Object(o)) => (
                        o.get("summary")
                            .and_then(Json::as_str)
                            .ok_or("\"summary\" needs \"summary\" (a string)")?
                            .to_owned(),
                        o.get("details").cloned(),
                    ),
                    Some(_) => {
                        return Err("\"summary\" must be a string or {summary, details?}".into());
                    }
                };
                if text.trim().is_empty() {
                    return Err("the summary is empty".into());
                }
                *d = Tree::Summary(text, details);
                Ok(true)
            },
        )
        .await;
    match stop {
        Some(why) => Tree::Cancel(Some(why)),
        None => decision,
    }
}

impl Hooks for ProgramHooks {
    fn use_cancel(&mut self, cancel: &CancelToken) {
        self.cancel = Some(cancel.clone());
    }

    async fn input(&mut self, text: String) -> Input {
        if !self.runner.hooks.has(HookEvent::Input) {
            return Input::Continue(text);
        }
        let mut state = Input::Continue(text);
        let stop = self
            .each(
                HookEvent::Input,
                &mut state,
                |_| true,
                |s| match s {
                    Input::Continue(t) => fields(vec![("text", json!(t))]),
                    Input::Handled => Map::new(),
                },
                &["action", "text"],
                |s, answer| match answer.get("action").and_then(Json::as_str) {
                    None | Some("continue") => Ok(false),
                    Some("handled") => {
                        *s = Input::Handled;
                        Ok(true)
                    }
                    Some("transform") => {
                        let t = answer
                            .get("text")
                            .and_then(Json::as_str)
                            .ok_or("\"transform\" needs \"text\" (a string)")?;
                        *s = Input::Continue(t.to_owned());
                        Ok(false)
                    }
                    Some(other) => Err(format!(
                        "unknown action \"{other}\" (continue, transform or handled)"
                    )),
                },
            )
            .await;
        if let Some(why) = stop {
            self.fx.stop = Some(why);
        }
        state
    }

    async fn before_agent_start(
        &mut self,
        prompt: &str,
        system_prompt: &mut String,
        extra: &mut Vec<Message>,
    ) {
        if !self.runner.hooks.has(HookEvent::BeforeAgentStart) {
            return;
        }
        let mut state = (system_prompt.clone(), Vec::new());
        let stop = self
            .each(
                HookEvent::BeforeAgentStart,
                &mut state,
                |_| true,
                |(sp, _)| fields(vec![("prompt", json!(prompt)), ("systemPrompt", json!(sp))]),
                &["systemPrompt", "appendSystemPrompt", "message", "messages"],
                |(sp, msgs), answer| {
                    match answer.get("systemPrompt") {
                        None => {}
                        Some(Json::String(s)) => *sp = s.clone(),
                        Some(_) => return Err("\"systemPrompt\" must be a string".into()),
                    }
                    match answer.get("appendSystemPrompt") {
                        None => {}
                        Some(Json::String(s)) if s.is_empty() => {}
                        Some(Json::String(s)) => {
                            sp.push_str("\n\n");
                            sp.push_str(s);
                        }
                        Some(_) => return Err("\"appendSystemPrompt\" must be a string".into()),
                    }
                    for key in ["message", "messages"] {
                        if let Some(v) = answer.get(key) {
                            for m in one_or_many(v) {
                                msgs.push(custom_message(m)?);
                            }
                        }
                    }
                    Ok(false)
                },
            )
            .await;
        if let Some(why) = stop {
            self.fx.stop = Some(why);
            return;
        }
        *system_prompt = state.0;
        extra.extend(state.1);
    }

    async fn context(&mut self, messages: Vec<Message>) -> Vec<Message> {
        if !self.runner.hooks.has(HookEvent::Context) {
            return messages;
        }
        let mut state = messages;
        let stop = self
            .each(
                HookEvent::Context,
                &mut state,
                |_| true,
                |ms| fields(vec![("messages", to_json_list(ms))]),
                &["messages"],
                |ms, answer| {
                    match answer.get("messages") {
                        None => {}
                        Some(Json::Array(a)) => {
                            for (k, m) in a.iter().enumerate() {
                                let role = m.get("role").and_then(Json::as_str);
                                if !role.is_some_and(|r| ROLES.contains(&r)) {
                                    return Err(format!(
                                        "\"messages\"[{k}] is not a message: it needs \"role\", one of {}",
                                        ROLES.join(", ")
                                    ));
                                }
                            }
                            *ms = a.iter().map(from_json).collect();
                        }
                        Some(_) => return Err("\"messages\" must be a list of messages".into()),
                    }
                    Ok(false)
                },
            )
            .await;
        if let Some(why) = stop {
            self.fx.stop = Some(why);
        }
        state
    }

    async fn tool_call(&mut self, id: &str, name: &str, args: &Json) -> ToolCall {
        let mut state = (args.clone(), None::<Option<String>>);
        let stop = self
            .each(
                HookEvent::ToolCall,
                &mut state,
                |h| h.matches_tool(name),
                |(input, _)| {
                    fields(vec![
                        ("toolCallId", json!(id)),
                        ("toolName", json!(name)),
                        ("input", input.clone()),
                    ])
                },
                &["block", "reason", "input"],
                |(input, block), answer| {
                    if answer.get("block").is_some_and(js::truthy) {
                        let reason = match answer.get("reason") {
                            None | Some(Json::Null) => None,
                            Some(Json::String(r)) => Some(r.clone()),
                            Some(_) => return Err("\"reason\" must be a string".into()),
                        };
                        *block = Some(reason);
                        return Ok(true);
                    }
                    match answer.get("input") {
                        None => {}
                        Some(i @ Json::Object(_)) => *input = i.clone(),
                        Some(_) => return Err("\"input\" must be an object of arguments".into()),
                    }
                    Ok(false)
                },
            )
            .await;
        if let Some(why) = stop {
            return ToolCall::Block(Some(format!("Blocked: {why}")));
        }
        match state {
            (_, Some(reason)) => ToolCall::Block(reason),
            (input, None) if &input != args => ToolCall::Modify(input),
            _ => ToolCall::Allow,
        }
    }

    async fn tool_result(
        &mut self,
        id: &str,
        name: &str,
        args: &Json,
        result: ToolResult,
    ) -> ToolResult {
        let mut state = result;
        let stop = self
            .each(
                HookEvent::ToolResult,
                &mut state,
                |h| h.matches_tool(name),
                |r| {
                    let mut f = fields(vec![
                        ("toolCallId", json!(id)),
                        ("toolName", json!(name)),
                        ("input", args.clone()),
                    ]);
                    if let Json::Object(o) = r.to_json() {
                        f.extend(o);
                    }
                    f.insert("isError".into(), json!(r.is_error));
                    f
                },
                &["content", "details", "isError"],
                |r, answer| {
                    match answer.get("content") {
                        None => {}
                        Some(Json::String(s)) => r.content = vec![Content::text(s.clone())],
                        Some(c @ Json::Array(blocks)) => {
                            check_blocks(blocks, "\"content\"")?;
                            r.content =
                                serde_json::from_value::<Vec<Content>>(c.clone()).map_err(|e| {
                                    format!(
                                        "\"content\" is not a list of text and image blocks: {e}"
                                    )
                                })?;
                        }
                        Some(_) => {
                            return Err("\"content\" must be a string or a list of blocks".into());
                        }
                    }
                    if let Some(d) = answer.get("details") {
                        r.details = Some(d.clone());
                    }
                    match answer.get("isError") {
                        None => {}
                        Some(Json::Bool(b)) => r.is_error = *b,
                        Some(_) => return Err("\"isError\" must be true or false".into()),
                    }
                    Ok(false)
                },
            )
            .await;
        match stop {
            Some(why) => ToolResult::error(format!("Blocked: {why}")),
            None => state,
        }
    }

    async fn message_end(&mut self, message: Message) -> Message {
        self.notify(
            HookEvent::MessageEnd,
            fields(vec![("message", to_json(&message))]),
        )
        .await;
        message
    }

    async fn turn_end(&mut self, message: &Message, tool_results: &[Message]) {
        self.notify(
            HookEvent::TurnEnd,
            fields(vec![
                ("message", to_json(message)),
                ("toolResults", to_json_list(tool_results)),
            ]),
        )
        .await;
    }

    async fn agent_end(&mut self, messages: &[Message]) {
        self.notify(
            HookEvent::AgentEnd,
            fields(vec![("messages", to_json_list(messages))]),
        )
        .await;
    }

    async fn before_switch(&mut self, reason: &str, target: Option<&std::path::Path>) -> bool {
        let mut payload = vec![("reason", json!(reason))];
        if let Some(t) = target {
            payload.push(("targetSessionFile", json!(t.to_string_lossy())));
        }
        self.cancellable(HookEvent::SessionBeforeSwitch, fields(payload))
            .await
    }

    async fn before_fork(&mut self, entry_id: &str, position: &str) -> bool {
        let payload = fields(vec![
            ("entryId", json!(entry_id)),
            ("position", json!(position)),
        ]);
        self.cancellable(HookEvent::SessionBeforeFork, payload)
            .await
    }

    fn session_changed(&mut self, cwd: &std::path::Path, file: Option<&std::path::Path>) {
        self.runner.cwd = cwd.to_owned();
        self.runner.session_file = file.map(std::path::Path::to_path_buf);
    }

    fn take_effects(&mut self) -> Effects {
        self.take()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn extras() {
        let mut fx = Effects::default();
        let mut a = serde_json::from_str::<Map<String, Json>>(
            r#"{"appendEntry":[{"customType":"x","data":{"n":1}},{"customType":"y"}],
                "customMessage":{"customType":"note","content":"hi"},"other":1}"#,
        )
        .unwrap();
        take_extras(&mut a, &mut fx).unwrap();
        assert_eq!(fx.entries.len(), 2);
        assert_eq!(fx.entries[0], ("x".into(), json!({"n": 1})));
        assert_eq!(fx.entries[1].1, Json::Null);
        assert_eq!(fx.messages.len(), 1);
        let m = to_json(&fx.messages[0]);
        assert_eq!(m["role"], "custom");
        assert_eq!(m["display"], true);
        assert!(a.contains_key("other") && !a.contains_key("appendEntry"));
        let mut bad =
            serde_json::from_str::<Map<String, Json>>(r#"{"appendEntry":{"data":1}}"#).unwrap();
        assert!(take_extras(&mut bad, &mut fx).is_err());
        let mut bad =
            serde_json::from_str::<Map<String, Json>>(r#"{"customMessage":{"customType":"a"}}"#)
                .unwrap();
        assert!(take_extras(&mut bad, &mut fx).is_err());
    }

    #[test]
    fn previews_are_short() {
        let long = "x".repeat(500);
        assert_eq!(preview(&long).chars().count(), 121);
        assert_eq!(preview("a\nb"), "a\\nb");
    }
}
