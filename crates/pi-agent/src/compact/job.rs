//! A compaction job (`pi compact`): its settings resolved once, then applied to one session
//! after another. For each: the path to the leaf is planned; with `if_needed` only a context
//! above the threshold goes on; the `session_before_compact` hooks may cancel it or supply the
//! summary; otherwise a given summary or the model's is used; the entry is recorded under the
//! lock if the session did not move on meanwhile.
//!
//! Nothing here prints: warnings and the progress of a model call go to a [`Watch`], and
//! failures are [`JobError`]s.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value as Json, json};

use super::hook::{BeforeCompact, Compact, CompactionReason};
use super::record::{self, Extra, RecordError};
use super::{Budget, Compaction, NoPlan, Plan, Summarizer, SummaryError};
use crate::context::settings::{DEFAULT_RESERVE_TOKENS, Settings as ContextSettings};
use crate::context::tokens::{self, Need};
use crate::context::{self as ctx};
use crate::runtime::{self, SetupError};
use pi_ai::config::{self, ModelError, Settings as LlmSettings};
use pi_ai::models::Registry;
use pi_ai::value::Value;
use pi_ai::{Event, Target};
use pi_base::js;
use pi_session::append::AppendError;
use pi_session::store::{EntryLookupError, OpenError};
use pi_session::{Kind, Session};

/// What the user asked for, the same for every session of the job.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Compact the path to this entry (id or prefix) instead of the leaf.
    pub leaf: Option<String>,
    /// Only above the threshold.
    pub if_needed: bool,
    /// Plan only: nothing is asked or written.
    pub dry_run: bool,
    /// Extra instructions for the summary.
    pub instructions: Option<String>,
    /// The model that writes the summary (`None`: the session's, else the default).
    pub model: Option<(String, String)>,
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
    /// The window `if_needed` judges by (`None`: the model's).
    pub context_window: Option<u64>,
    /// A summary written elsewhere, used instead of a model's.
    pub summary: Option<String>,
    /// A session that cannot be compacted (too small, already compacted) is skipped with
    /// a record instead of failing the job (`--all`).
    pub skip_unplannable: bool,
    /// Wait for the session's lock (else a locked session is skipped).
    pub wait: bool,
}

/// What happened to one session.
#[derive(Debug)]
pub enum Outcome {
    /// The compaction entry's line, as written.
    Compacted(Vec<u8>),
    /// Nothing was done, and why: `{"compacted":false,"reason":…,"message":…,…}`.
    Skipped(Map<String, Json>),
    /// The plan of a dry run.
    Planned(Map<String, Json>),
    /// Ctrl-C while hooks ran or the model wrote; nothing was written.
    Interrupted,
}

impl Outcome {
    /// A hook cancelled the compaction.
    pub fn cancelled(&self) -> bool {
        matches!(self, Outcome::Skipped(m) if m.get("reason").and_then(Json::as_str) == Some("cancelled"))
    }
}

/// Why a session could not be compacted.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Entry(#[from] EntryLookupError),
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    NoPlan(NoPlan),
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The model did not write the summary (`model`: `provider/id`).
    #[error("{error}; nothing was written")]
    Summary { error: SummaryError, model: String },
    /// Not written: the session moved on meanwhile, or could not be appended to.
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Append(#[from] AppendError),
    #[error(transparent)]
    Setup(#[from] SetupError),
}

/// Told what happens: warnings, and a model writing a summary.
pub trait Watch {
    fn warning(&self, message: &str);
    /// The session was read; `name` is its name, if it has one.
    fn opened(&self, name: Option<&str>) {
        let _ = name;
    }
    /// A model starts writing (`label`: what and with which model).
    fn summarizing(&self, label: &str) {
        let _ = label;
    }
    /// An event of the model's response (text arriving, a retry).
    fn event(&self, e: &Event) {
        let _ = e;
    }
    /// The model is done (or failed, or was interrupted).
    fn summarized(&self) {}
}

impl JobError {
    /// The summary model could not be reached (see [`SummaryError::is_unreachable`]).
    pub fn model_unreachable(&self) -> bool {
        matches!(self, JobError::Summary { error, .. } if error.is_unreachable())
    }

    /// The summary model answered, if only with an error.
    pub fn model_answered(&self) -> bool {
        matches!(self, JobError::Summary { error, .. } if !error.is_unreachable())
    }
}

/// `{"compacted":false,"reason":…,"message":…}`.
pub fn skipped(reason: &str, message: impl Into<String>) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("compacted".into(), false.into());
    m.insert("reason".into(), reason.into());
    m.insert("message".into(), message.into().into());
    m
}

/// `Some(record)` when the session at `path` is to be skipped without reading it: another
/// process holds its lock, or it must be migrated first.
pub fn probe(path: &Path) -> Result<Option<Map<String, Json>>, AppendError> {
    match pi_session::append::Appender::try_open(path, None) {
        Ok(Some(_)) => Ok(None),
        Ok(None) => Ok(Some(skipped(
            "locked",
            "another process is writing to the session",
        ))),
        Err(AppendError::OldVersion { version, .. }) => Ok(Some(skipped(
            "needs-migration",
            format!("a version {version} file; run `pi session migrate` first"),
        ))),
        Err(e) => Err(e),
    }
}

/// The settings of a job, and the runtime its model calls and hooks run on.
pub struct Job {
    pub agent_dir: PathBuf,
    /// The working directory of hooks when a session's own does not exist.
    pub cwd: PathBuf,
    pub registry: Registry,
    pub context: ContextSettings,
    pub llm: LlmSettings,
    pub request: Request,
    pub rt: runtime::Lazy,
    /// Warnings already given (each is given once per job, not once per session).
    pub warned: std::collections::HashSet<String>,
}

/// A session opened at the leaf to compact.
struct Opened {
    s: Session,
    path: PathBuf,
    leaf: u32,
    leaf_id: String,
    plan: ctx::Plan,
}

impl Opened {
    fn read_error(&self) -> impl FnOnce(std::io::Error) -> JobError + '_ {
        |source| JobError::Read {
            path: self.path.clone(),
            source,
        }
    }

    fn session_model(&self) -> Option<(String, String)> {
        self.plan.info.model_ids()
    }
}

impl Job {
    /// The context window a session is judged by: `--context-window`, else its model's,
    /// else the summary model's (as named by `--model`); `None` when none is known.
    fn judged_window(&self, session_model: Option<&(String, String)>) -> Option<u64> {
        if let Some(w) = self.request.context_window {
            return Some(w);
        }
        let from = |m: Option<&(String, String)>| {
            m.and_then(|(p, id)| self.registry.find(p, id))
                .map(|m| m.context_window)
                .filter(|w| *w > 0)
        };
        let default = self.default_model();
        from(session_model)
            .or_else(|| from(default.as_ref()))
            .or_else(|| from(self.request.model.as_ref()))
    }

    /// `defaultProvider`/`defaultModel` of settings.json: the model a session without one
    /// would continue with, so the window it is judged by.
    fn default_model(&self) -> Option<(String, String)> {
        self.llm
            .default_provider
            .clone()
            .zip(self.llm.default_model.clone())
    }

    /// The budget of a session whose model is `session_model`: the reserves (fitted to the
    /// window the session is judged by, with a warning the first time they had to be), and
    /// the window of the model that would write the summary (what its request can carry).
    fn budget(&mut self, session_model: Option<&(String, String)>, watch: &dyn Watch) -> Budget {
        let r = &self.request;
        // `compaction.modelOverrides` of the model whose window the session is judged by.
        let (over_reserve, over_keep) =
            session_model
                .or(r.model.as_ref())
                .map_or((None, None), |(p, id)| {
                    let o = &self.llm.compaction_overrides;
                    (o.reserve_tokens(p, id), o.keep_recent_tokens(p, id))
                });
        let configured = tokens::Reserves {
            reserve_tokens: r
                .reserve_tokens
                .or(over_reserve)
                .or(self.context.reserve_tokens)
                .unwrap_or(DEFAULT_RESERVE_TOKENS),
            keep_recent_tokens: r
                .keep_recent_tokens
                .or(over_keep)
                .or(self.llm.keep_recent_tokens)
                .unwrap_or(config::DEFAULT_KEEP_RECENT_TOKENS),
        };
        let summary_model = self.summary_model(session_model);
        let window = summary_model.as_ref().map_or(0, |t| t.model.context_window);
        let (judged, whose) = match self.judged_window(session_model) {
            Some(w) if self.request.context_window.is_some() => (w, None),
            Some(w) => {
                let default = self.default_model();
                let known = |m: &&(String, String)| {
                    self.registry
                        .find(&m.0, &m.1)
                        .is_some_and(|m| m.context_window > 0)
                };
                let whose = session_model
                    .filter(known)
                    .or(default.as_ref().filter(known))
                    .or(self.request.model.as_ref())
                    .map(|(p, id)| format!("{p}/{id}"));
                (w, whose)
            }
            None => (
                window,
                summary_model.map(|t| format!("{}/{}", t.model.provider, t.model.id)),
            ),
        };
        let fitted = configured.fit(judged);
        // Once per run: the setting is the same for every session.
        if let Some(w) = fitted.warning("reserveTokens", whose.as_deref())
            && self.warned.insert("reserveTokens".to_owned())
        {
            watch.warning(&w);
        }
        Budget {
            window,
            reserve_tokens: fitted.used.reserve_tokens,
            keep_recent_tokens: fitted.used.keep_recent_tokens,
        }
    }

    /// Compacts the session at `path`. `hooks` makes the `session_before_compact` hooks of
    /// a session from its working directory (`None`: there are none).
    pub fn run<H: BeforeCompact>(
        &mut self,
        path: &Path,
        watch: &dyn Watch,
        hooks: impl FnOnce(&Path) -> Option<H>,
    ) -> Result<Outcome, JobError> {
        let s = Session::open(path)?;
        watch.opened(s.name());
        for w in s.skipped_warnings() {
            watch.warning(&w);
        }
        let leaf = match &self.request.leaf {
            Some(l) => s.resolve_entry(l)?,
            None => match s.leaf() {
                Some(l) => l,
                None => {
                    return Ok(Outcome::Skipped(skipped(
                        "too-small",
                        "the session has no entries",
                    )));
                }
            },
        };
        let plan = ctx::Plan::new(&s, Some(leaf)).map_err(|source| JobError::Read {
            path: path.to_owned(),
            source,
        })?;
        let o = Opened {
            leaf_id: s.entries[leaf as usize].id.to_string(),
            s,
            path: path.to_owned(),
            leaf,
            plan,
        };
        let budget = self.budget(o.session_model().as_ref(), watch);
        if self.request.if_needed
            && let Some(m) = self.not_needed(&o, budget.reserve_tokens)?
        {
            return Ok(Outcome::Skipped(m));
        }
        let plan = match super::prepare(&o.s, leaf, budget).map_err(o.read_error())? {
            Ok(p) => p,
            Err(e) if self.request.skip_unplannable => {
                let reason = match e {
                    NoPlan::AlreadyCompacted => "already-compacted",
                    NoPlan::TooSmall => "too-small",
                };
                return Ok(Outcome::Skipped(skipped(reason, e.to_string())));
            }
            Err(e) => return Err(JobError::NoPlan(e)),
        };
        if self.request.dry_run {
            let model = self
                .summary_model(o.session_model().as_ref())
                .map(|t| format!("{}/{}", t.model.provider, t.model.id));
            return Ok(Outcome::Planned(record::plan_record(&o.s, &plan, model)));
        }
        if o.s.version() < pi_session::VERSION {
            // Found before asking a model: such a file cannot be appended to.
            return Err(JobError::Append(AppendError::OldVersion {
                path: path.to_owned(),
                version: o.s.version(),
            }));
        }
        let hook_cwd =
            o.s.header
                .as_ref()
                .map_or_else(|| self.cwd.clone(), |h| PathBuf::from(&h.cwd));
        let (compaction, extra) = match self.summary(&o, &plan, watch, hooks(&hook_cwd))? {
            Step::Done(c, extra) => (*c, extra),
            Step::Stop(outcome) => return Ok(outcome),
        };
        let leaf_id = o.leaf_id.clone();
        drop(o);
        let recorded = record::record(
            path,
            &self.agent_dir,
            &leaf_id,
            &compaction,
            &extra,
            self.request.leaf.is_some(),
            self.request.wait,
        )?;
        Ok(match recorded {
            Some(line) => Outcome::Compacted(line),
            None => Outcome::Skipped(skipped(
                "locked",
                "another process started writing to the session while the summary was written; nothing was written",
            )),
        })
    }

    /// `--if-needed`: the record of a session that needs no compaction (`reserve`: the
    /// reserve fitted to the window).
    fn not_needed(&self, o: &Opened, reserve: u64) -> Result<Option<Map<String, Json>>, JobError> {
        if o.s.entries[o.leaf as usize].kind == Kind::Compaction {
            let mut m = skipped(
                "already-compacted",
                "the last entry of the path is a compaction",
            );
            m.insert("leaf".into(), o.leaf_id.clone().into());
            return Ok(Some(m));
        }
        if !self.context.compaction_enabled {
            return Ok(Some(skipped(
                "compaction-disabled",
                "compaction.enabled is false in settings.json",
            )));
        }
        let Some(window) = self.judged_window(o.session_model().as_ref()) else {
            let mut m = skipped(
                "no-window",
                "no context window is known: the session names no model yet and settings.json \
                 no defaultProvider/defaultModel with a known window (--context-window N or \
                 --model PROVIDER/ID gives one)",
            );
            m.insert("leaf".into(), o.leaf_id.clone().into());
            return Ok(Some(m));
        };
        let mut meter = tokens::Meter::default();
        o.plan
            .each(&o.s, |m| {
                meter.add_entry(&m.value, Some(m.entry), m.after_compaction);
                Ok(())
            })
            .map_err(o.read_error())?;
        let path = o.s.path_to(o.leaf);
        let a = meter.assess(
            |e| tokens::usage_holds(&o.s, &path, e),
            o.plan.info.compaction.is_some(),
            window,
            reserve,
            true,
        );
        let mut m = match a.need {
            Need::Above => return Ok(None),
            Need::UsagePredatesCompaction => skipped(
                "usage-predates-compaction",
                "no reply since the latest compaction: the reported usage describes the context before it",
            ),
            Need::Below | Need::Disabled => skipped(
                "below-threshold",
                format!(
                    "{} tokens ≤ threshold {}",
                    js::number(a.estimate.tokens),
                    js::number(a.threshold)
                ),
            ),
        };
        m.insert("leaf".into(), o.leaf_id.clone().into());
        m.insert("tokens".into(), js::json_number(a.estimate.tokens));
        m.insert("contextWindow".into(), json!(window));
        m.insert("reserveTokens".into(), json!(reserve));
        m.insert("threshold".into(), js::json_number(a.threshold));
        Ok(Some(m))
    }

    /// The model that would write the summary, if one can be chosen.
    fn summary_model(&self, session_model: Option<&(String, String)>) -> Option<Target> {
        config::select(
            &self.registry,
            &self.agent_dir,
            &self.llm,
            self.request.model.as_ref(),
            session_model,
        )
        .ok()
        .map(|(t, _)| t)
    }

    /// The summary: a hook's, the given one, or the model's.
    fn summary<H: BeforeCompact>(
        &mut self,
        o: &Opened,
        plan: &Plan,
        watch: &dyn Watch,
        hooks: Option<H>,
    ) -> Result<Step, JobError> {
        let mut extra = Extra::default();
        if let Some(mut h) = hooks {
            let reason = if self.request.if_needed {
                CompactionReason::Threshold
            } else {
                CompactionReason::Manual
            };
            let instructions = self.request.instructions.clone();
            let Some(decision) =
                self.rt
                    .interruptible(h.before_compact(plan, reason, instructions.as_deref()))?
            else {
                return Ok(Step::Stop(Outcome::Interrupted));
            };
            extra.entries = h.take_entries();
            match decision {
                Compact::Cancel => {
                    let mut m = skipped(
                        "cancelled",
                        "a session_before_compact hook cancelled the compaction",
                    );
                    m.insert("leaf".into(), o.leaf_id.clone().into());
                    return Ok(Step::Stop(Outcome::Skipped(m)));
                }
                Compact::Use(r) => {
                    let (read, modified) = plan.file_ops.lists();
                    extra.details = Some(r.details);
                    let c = Compaction {
                        summary: r.summary,
                        first_kept_entry_id: r.first_kept_entry_id,
                        tokens_before: r.tokens_before,
                        read_files: read,
                        modified_files: modified,
                        usage: Default::default(),
                        system: plan.system.clone(),
                    };
                    return Ok(Step::Done(Box::new(c), extra));
                }
                Compact::Proceed => {}
            }
        }
        if let Some(text) = &self.request.summary {
            return Ok(Step::Done(
                Box::new(super::summarize::finish(plan, text.clone())),
                extra,
            ));
        }
        let level = thinking_level(&o.s, o.leaf, &o.plan, &self.llm);
        match self.ask_model(o.session_model().as_ref(), plan, level, watch)? {
            Some(c) => Ok(Step::Done(Box::new(c), extra)),
            None => Ok(Step::Stop(Outcome::Interrupted)),
        }
    }

    /// Asks the model for the summary; `None` when interrupted.
    fn ask_model(
        &mut self,
        session_model: Option<&(String, String)>,
        plan: &Plan,
        thinking: Option<String>,
        watch: &dyn Watch,
    ) -> Result<Option<Compaction>, JobError> {
        let (target, auth) = config::resolve(
            &self.registry,
            &self.agent_dir,
            &self.llm,
            self.request.model.as_ref(),
            session_model,
        )?;
        let model = format!("{}/{}", target.model.provider, target.model.id);
        let options = self.llm.call_options(auth);
        let instructions = self.request.instructions.clone();
        let (rt, client) = self.rt.with_client()?;
        watch.summarizing(&format!("summarizing with {model}"));
        let progress = |e: &Event| watch.event(e);
        let summarizer = Summarizer {
            client,
            target: &target,
            options,
            thinking_level: thinking,
            progress: &progress,
        };
        let result = runtime::interruptible(rt, summarizer.compact(plan, instructions.as_deref()));
        watch.summarized();
        match result {
            None => Ok(None),
            Some(Ok(c)) => Ok(Some(c)),
            Some(Err(error)) => Err(JobError::Summary { error, model }),
        }
    }
}

/// Where the summary step ended.
enum Step {
    Done(Box<Compaction>, Extra),
    Stop(Outcome),
}

/// The thinking level of the session at the end of the path (the reference's rule on
/// resume): its latest `thinking_level_change`, else `defaultThinkingLevel`, else medium.
fn thinking_level(s: &Session, leaf: u32, plan: &ctx::Plan, llm: &LlmSettings) -> Option<String> {
    let changed = s
        .path_to(leaf)
        .iter()
        .any(|&i| s.entries[i as usize].kind == Kind::ThinkingLevelChange);
    if changed {
        return plan
            .info
            .thinking_level
            .as_ref()
            .and_then(Value::as_jstr)
            .map(|l| l.text().into_owned());
    }
    Some(
        llm.default_thinking_level
            .clone()
            .unwrap_or_else(|| "medium".to_owned()),
    )
}
