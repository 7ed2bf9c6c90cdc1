//! `pi compact`, and the model side of `pi session branch --summarize`.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use clap::Args;
use serde_json::{Value as Json, json};

use crate::cmd::Ctx;
use crate::compact::{self, Budget, Compaction, NoPlan, Plan, Summarizer};
use crate::context::settings::{DEFAULT_RESERVE_TOKENS, Settings as ContextSettings};
use crate::context::value::Value;
use crate::context::{self, tokens};
use crate::error::{Exit, FAILURE, USAGE};
use crate::js;
use crate::llm::config::{self, Chosen, SelectError, Settings as LlmSettings};
use crate::llm::{Client, Event, Options, Target, auth};
use crate::models::Registry;
use crate::session::append::{AppendError, Appender, NewEntry, Parent};
use crate::session::entry::jstr;
use crate::session::{Kind, Session, find};

pub const EXIT_STATUS: &str = "\
Exit status:
  0  success (with --if-needed: also when nothing needed compacting)
  1  the operation failed: the model call failed, the session changed meanwhile, or (--all) a session failed
  2  usage error or invalid input (nothing was written)
  3  --if-needed --exit-code: nothing needed compacting
  130  interrupted (Ctrl-C); nothing was written";

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The session [default: the most recent one of the current directory]
    #[arg(conflicts_with = "all")]
    pub session: Option<String>,
    /// Compact the path to this entry (id or unique prefix) instead of the leaf; the
    /// compaction entry is appended as its child
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub leaf: Option<String>,
    /// Compact every session under the sessions directory (with --cwd: of that directory),
    /// printing one outcome record per session; sessions locked by a running writer are
    /// skipped
    #[arg(long)]
    pub all: bool,
    /// With --all: only the sessions of DIR
    #[arg(long, value_name = "DIR", requires = "all")]
    pub cwd: Option<PathBuf>,
    /// Compact only when the context is above the threshold the agent compacts at
    /// (contextWindow − reserveTokens); otherwise print {"compacted":false,…} and exit 0
    #[arg(long)]
    pub if_needed: bool,
    /// With --if-needed: exit with status 3 when nothing needed compacting
    #[arg(long, requires = "if_needed")]
    pub exit_code: bool,
    /// Print the plan (cut point, tokensBefore, what is summarized and kept, split turn,
    /// file lists) without calling a model or writing anything
    #[arg(long)]
    pub dry_run: bool,
    /// Use the summary in FILE (`-` for stdin) instead of asking a model; the file lists are
    /// appended to it
    #[arg(long, value_name = "FILE", conflicts_with_all = ["all", "dry_run", "model", "instructions"])]
    pub summary_file: Option<PathBuf>,
    /// Extra instructions for the summary (what to focus on)
    #[arg(long, value_name = "TEXT")]
    pub instructions: Option<String>,
    /// The model that writes the summary, as PROVIDER/ID [default: the session's model if it
    /// has a key, else defaultProvider/defaultModel from settings.json]
    #[arg(long, value_name = "PROVIDER/ID")]
    pub model: Option<String>,
    /// Tokens kept free below the context window; the summary may use 80% of it [default:
    /// compaction.reserveTokens from settings.json, else 16384]
    #[arg(long, value_name = "N")]
    pub reserve_tokens: Option<u64>,
    /// Tokens of recent messages kept as they are [default: compaction.keepRecentTokens
    /// from settings.json, else 20000]
    #[arg(long, value_name = "N")]
    pub keep_recent_tokens: Option<u64>,
    /// The context window for --if-needed [default: the session's model's, else the
    /// summary model's]
    #[arg(long, value_name = "N")]
    pub context_window: Option<u64>,
    /// Run COMMAND before the summary is written, after the session_before_compact hooks
    /// of settings.json; EVENT must be session_before_compact (repeatable)
    ///
    /// The hook reads the plan as JSON on stdin and may answer {"cancel":true} or
    /// {"summary":"…"} (used instead of a model's). See `commands/pi-extensions.md`.
    #[arg(long = "hook", value_name = "EVENT=COMMAND")]
    pub hook: Vec<String>,
}

/// What happened to one session.
enum Outcome {
    /// The entry line written.
    Compacted(Vec<u8>),
    /// Nothing to do, and why: `{"compacted":false,…}`.
    Not(serde_json::Map<String, Json>),
    /// The plan of a dry run.
    Planned(serde_json::Map<String, Json>),
    Interrupted,
}

fn not(reason: &str, message: String) -> serde_json::Map<String, Json> {
    let mut m = serde_json::Map::new();
    m.insert("compacted".into(), false.into());
    m.insert("reason".into(), reason.into());
    m.insert("message".into(), message.into());
    m
}

/// What every session of a run shares.
struct Shared {
    registry: Registry,
    context: ContextSettings,
    llm: LlmSettings,
    model_flag: Option<(String, String)>,
    summary: Option<String>,
    runtime: Option<tokio::runtime::Runtime>,
    client: Option<Client>,
}

impl Shared {
    fn runtime(&mut self) -> anyhow::Result<(&tokio::runtime::Runtime, &Client)> {
        if self.runtime.is_none() {
            self.runtime = Some(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("cannot start the async runtime")?,
            );
        }
        if self.client.is_none() {
            self.client = Some(Client::new().map_err(|e| anyhow::anyhow!(e))?);
        }
        match (&self.runtime, &self.client) {
            (Some(r), Some(c)) => Ok((r, c)),
            _ => Err(anyhow::anyhow!("the async runtime is unavailable")),
        }
    }
}

fn parse_model(arg: &str) -> anyhow::Result<(String, String)> {
    crate::cmd::context::parse_model_arg(arg)
}

fn read_summary(path: &Path) -> anyhow::Result<String> {
    let text = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read the summary from stdin")?;
        s
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| crate::error::usage(format!("cannot read {}: {e}", path.display())))?
    };
    if text.trim().is_empty() {
        return Err(crate::error::usage("the summary is empty"));
    }
    // A file ends in a newline; the file lists follow after a blank line.
    Ok(text.trim_end().to_owned())
}

/// Checks `--hook` flags of a command that runs only the hooks of `event`.
pub fn check_hook_flags(
    flags: &[String],
    event: crate::extensions::config::HookEvent,
) -> anyhow::Result<()> {
    crate::extensions::config::check_flags(flags).map_err(crate::error::usage)?;
    for f in flags {
        let name = f.split_once('=').map_or(f.as_str(), |(n, _)| n.trim());
        if name != event.as_str() {
            return Err(crate::error::usage(format!(
                "invalid --hook '{f}': this command runs only {event} hooks"
            )));
        }
    }
    Ok(())
}

pub fn run(args: CompactArgs, ctx: &mut Ctx) -> anyhow::Result<u8> {
    check_hook_flags(
        &args.hook,
        crate::extensions::config::HookEvent::SessionBeforeCompact,
    )?;
    if args.reserve_tokens == Some(0) || args.keep_recent_tokens == Some(0) {
        return Err(crate::error::usage(
            "--reserve-tokens and --keep-recent-tokens must be positive",
        ));
    }
    if args.context_window == Some(0) {
        return Err(crate::error::usage("--context-window must be positive"));
    }
    let registry = Registry::load(&ctx.dirs.agent_dir);
    for w in &registry.warnings {
        crate::error::warn(w);
    }
    let context = ContextSettings::load(&ctx.dirs.agent_dir, &ctx.cwd);
    let llm = LlmSettings::load(&ctx.dirs.agent_dir, &ctx.cwd);
    for w in context.warnings.iter() {
        crate::error::warn(w);
    }
    let mut shared = Shared {
        registry,
        context,
        llm,
        model_flag: args.model.as_deref().map(parse_model).transpose()?,
        summary: args.summary_file.as_deref().map(read_summary).transpose()?,
        runtime: None,
        client: None,
    };
    if !args.all {
        let path = ctx.session_path(args.session.as_deref())?;
        let outcome = compact_one(ctx, &mut shared, &args, &path, true)?;
        return finish_one(ctx, &args, &path, outcome);
    }
    // Every session of the sessions directory (or of one directory).
    let dirs = match &args.cwd {
        Some(d) => vec![ctx.dirs.session_dir_for(&ctx.cwd_arg(Some(d))?)],
        None => find::all_session_dirs(&ctx.dirs),
    };
    let files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| find::jsonl_files(d))
        .filter(|p| find::read_header(p).is_some())
        .collect();
    let (mut compacted, mut failed) = (0usize, 0usize);
    for path in &files {
        let mut rec = serde_json::Map::new();
        rec.insert("session".into(), path.to_string_lossy().into_owned().into());
        match probe_lock(ctx, path) {
            Ok(None) => {}
            Ok(Some(skip)) => {
                rec.extend(skip);
                ctx.out.json(&Json::Object(rec))?;
                ctx.out.flush()?;
                continue;
            }
            Err(e) => {
                failed += 1;
                rec.insert("compacted".into(), false.into());
                rec.insert("error".into(), error_text(&e).into());
                ctx.out.json(&Json::Object(rec))?;
                ctx.out.flush()?;
                continue;
            }
        }
        match compact_one(ctx, &mut shared, &args, path, false) {
            Ok(Outcome::Compacted(line)) => {
                compacted += 1;
                rec.insert("compacted".into(), true.into());
                let entry: Json = serde_json::from_slice(&line).unwrap_or(Json::Null);
                rec.insert("entry".into(), entry);
            }
            Ok(Outcome::Not(m)) | Ok(Outcome::Planned(m)) => rec.extend(m),
            Ok(Outcome::Interrupted) => {
                ctx.out.flush()?;
                crate::error::note(
                    "interrupted; nothing was written to the session being compacted",
                );
                return Ok(130);
            }
            Err(e) => {
                failed += 1;
                rec.insert("compacted".into(), false.into());
                rec.insert("error".into(), error_text(&e).into());
            }
        }
        ctx.out.json(&Json::Object(rec))?;
        ctx.out.flush()?;
    }
    if failed > 0 {
        crate::error::note(&format!(
            "{failed} of {} sessions failed (see their records)",
            files.len()
        ));
        return Ok(FAILURE);
    }
    if args.exit_code && compacted == 0 && !args.dry_run {
        return Ok(3);
    }
    Ok(0)
}

/// The message of an error with its causes, on one line.
fn error_text(e: &anyhow::Error) -> String {
    e.chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// `Some(record)` when the session must be skipped because a writer holds it or it cannot
/// be appended to.
fn probe_lock(ctx: &Ctx, path: &Path) -> anyhow::Result<Option<serde_json::Map<String, Json>>> {
    match Appender::try_open(path, None) {
        Ok(Some(_)) => Ok(None),
        Ok(None) => Ok(Some(not(
            "locked",
            "another process is writing to the session".into(),
        ))),
        Err(AppendError::OldVersion { version, .. }) => Ok(Some(not(
            "needs-migration",
            format!("a version {version} file; run `pi session migrate` first"),
        ))),
        Err(e) => {
            let _ = ctx;
            Err(e.into())
        }
    }
}

fn finish_one(
    ctx: &mut Ctx,
    args: &CompactArgs,
    path: &Path,
    outcome: Outcome,
) -> anyhow::Result<u8> {
    match outcome {
        Outcome::Compacted(line) => {
            ctx.out.line(&line)?;
            Ok(0)
        }
        Outcome::Planned(mut m) => {
            m.insert("session".into(), path.to_string_lossy().into_owned().into());
            ctx.out.json(&Json::Object(m))?;
            Ok(0)
        }
        Outcome::Not(mut m) => {
            let cancelled = m.get("reason").and_then(Json::as_str) == Some("cancelled");
            m.insert("session".into(), path.to_string_lossy().into_owned().into());
            ctx.out.json(&Json::Object(m))?;
            Ok(if cancelled && !args.if_needed {
                FAILURE
            } else if args.exit_code {
                3
            } else {
                0
            })
        }
        Outcome::Interrupted => {
            crate::error::note("interrupted; nothing was written");
            Ok(130)
        }
    }
}

/// The thinking level of the session at the end of the path (the reference's rule on
/// resume): its latest `thinking_level_change`, else `defaultThinkingLevel`, else medium.
fn thinking_level(
    s: &Session,
    leaf: u32,
    plan: &context::Plan,
    llm: &LlmSettings,
) -> Option<String> {
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

fn no_window() -> anyhow::Error {
    Exit::new(
        USAGE,
        anyhow::anyhow!("--if-needed needs a context window, and none is known for this session"),
    )
    .hint("pass --context-window N, or --model PROVIDER/ID, or define the session's model in models.json")
    .into()
}

fn compact_one(
    ctx: &mut Ctx,
    shared: &mut Shared,
    args: &CompactArgs,
    path: &Path,
    wait: bool,
) -> anyhow::Result<Outcome> {
    let s = ctx.open(path)?;
    let leaf = match &args.leaf {
        Some(l) => s.resolve_entry(l)?,
        None => match s.leaf() {
            Some(l) => l,
            None => {
                return Ok(Outcome::Not(not(
                    "too-small",
                    "the session has no entries".into(),
                )));
            }
        },
    };
    let leaf_id = s.entries[leaf as usize].id.to_string();
    let cplan = context::Plan::new(&s, Some(leaf))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let session_model = cplan.info.model_ids();
    let budget = Budget {
        reserve_tokens: args
            .reserve_tokens
            .or(shared.context.reserve_tokens)
            .unwrap_or(DEFAULT_RESERVE_TOKENS),
        keep_recent_tokens: args
            .keep_recent_tokens
            .or(shared.llm.keep_recent_tokens)
            .unwrap_or(config::DEFAULT_KEEP_RECENT_TOKENS),
    };
    let already = s.entries[leaf as usize].kind == Kind::Compaction;
    if args.if_needed {
        if already {
            let mut m = not(
                "already-compacted",
                "the last entry of the path is a compaction".into(),
            );
            m.insert("leaf".into(), leaf_id.into());
            return Ok(Outcome::Not(m));
        }
        if !shared.context.compaction_enabled {
            return Ok(Outcome::Not(not(
                "compaction-disabled",
                "compaction.enabled is false in settings.json".into(),
            )));
        }
        let window = match args.context_window {
            Some(w) => w,
            None => {
                let from = |m: Option<&(String, String)>| {
                    m.and_then(|(p, id)| shared.registry.find(p, id))
                        .map(|m| m.context_window)
                        .filter(|w| *w > 0)
                };
                from(session_model.as_ref())
                    .or_else(|| from(shared.model_flag.as_ref()))
                    .ok_or_else(no_window)?
            }
        };
        let mut meter = tokens::Meter::default();
        let _ = cplan
            .each(&s, |m| {
                meter.add(&m.value, m.after_compaction);
                Ok(())
            })
            .with_context(|| format!("cannot read {}", path.display()))?;
        let est = meter.estimate();
        let stale = cplan.info.compaction.is_some() && !meter.reported_after_compaction();
        let threshold = window as f64 - budget.reserve_tokens as f64;
        let needed =
            !stale && tokens::should_compact(est.tokens, window, budget.reserve_tokens, true);
        if !needed {
            let mut m = if stale {
                not(
                    "usage-predates-compaction",
                    "no reply since the latest compaction: the reported usage describes the context before it".into(),
                )
            } else {
                not(
                    "below-threshold",
                    format!(
                        "{} tokens ≤ threshold {}",
                        js::number(est.tokens),
                        js::number(threshold)
                    ),
                )
            };
            m.insert("leaf".into(), leaf_id.clone().into());
            m.insert("tokens".into(), js::json_number(est.tokens));
            m.insert("contextWindow".into(), json!(window));
            m.insert("reserveTokens".into(), json!(budget.reserve_tokens));
            m.insert("threshold".into(), js::json_number(threshold));
            return Ok(Outcome::Not(m));
        }
    }
    let plan = match compact::prepare(&s, leaf, budget)
        .with_context(|| format!("cannot read {}", path.display()))?
    {
        Ok(p) => p,
        Err(NoPlan::AlreadyCompacted) if args.all => {
            return Ok(Outcome::Not(not(
                "already-compacted",
                NoPlan::AlreadyCompacted.to_string(),
            )));
        }
        Err(NoPlan::TooSmall) if args.all => {
            return Ok(Outcome::Not(not("too-small", NoPlan::TooSmall.to_string())));
        }
        Err(e) => {
            return Err(Exit::new(FAILURE, anyhow::anyhow!("{e}"))
                .hint(match e {
                    NoPlan::AlreadyCompacted => {
                        "the leaf is a compaction entry; continue the session first"
                    }
                    NoPlan::TooSmall => "there is nothing before the recent messages to summarize",
                })
                .into());
        }
    };
    if args.dry_run {
        let model = select_model(shared, &ctx.dirs.agent_dir, session_model.as_ref())
            .ok()
            .map(|(t, _)| format!("{}/{}", t.model.provider, t.model.id));
        return Ok(Outcome::Planned(compact::record::plan_record(
            &s, &plan, model,
        )));
    }
    if s.version() < crate::session::VERSION {
        // Found before asking a model: such a file cannot be appended to.
        return Err(AppendError::OldVersion {
            path: path.to_owned(),
            version: s.version(),
        }
        .into());
    }
    // The session_before_compact hooks may cancel it or supply the summary.
    let cwd = s
        .header
        .as_ref()
        .map_or_else(|| ctx.cwd.clone(), |h| PathBuf::from(&h.cwd));
    let (set, warnings) = crate::extensions::config::load(&ctx.dirs.agent_dir, &cwd, &args.hook);
    for w in &warnings {
        crate::error::warn(w);
    }
    let mut hooked: Option<Compaction> = None;
    let mut hook_details: Option<Json> = None;
    let mut extra = Vec::new();
    use crate::extensions::config::HookEvent;
    if set.has(HookEvent::SessionBeforeCompact) {
        use crate::extensions::hooks::{ProgramHooks, Runner, before_compact, effect_entries};
        let runner_cwd = if cwd.is_dir() {
            cwd.clone()
        } else {
            ctx.cwd.clone()
        };
        let mut ph = ProgramHooks::new(Runner::new(set, runner_cwd, Some(path.to_owned())));
        let reason = if args.if_needed {
            crate::agent::event::CompactionReason::Threshold
        } else {
            crate::agent::event::CompactionReason::Manual
        };
        let (rt, _) = shared.runtime()?;
        let decision = match block_on(
            rt,
            before_compact(&mut ph, &plan, reason, args.instructions.as_deref()),
        ) {
            Some(d) => d,
            None => return Ok(Outcome::Interrupted),
        };
        extra = effect_entries(&ph.take());
        match decision {
            crate::agent::hooks::Compact::Cancel => {
                let mut m = not(
                    "cancelled",
                    "a session_before_compact hook cancelled the compaction".into(),
                );
                m.insert("leaf".into(), leaf_id.into());
                return Ok(Outcome::Not(m));
            }
            crate::agent::hooks::Compact::Use(r) => {
                let (read, modified) = plan.file_ops.lists();
                hook_details = Some(r.details);
                hooked = Some(Compaction {
                    summary: r.summary,
                    first_kept_entry_id: r.first_kept_entry_id,
                    tokens_before: r.tokens_before,
                    read_files: read,
                    modified_files: modified,
                });
            }
            crate::agent::hooks::Compact::Proceed => {}
        }
    }
    let compaction = match (hooked, &shared.summary) {
        (Some(c), _) => c,
        (None, Some(text)) => compact::summarize::finish(&plan, text.clone()),
        (None, None) => {
            let level = thinking_level(&s, leaf, &cplan, &shared.llm);
            match summarize(
                ctx,
                shared,
                &plan,
                session_model.as_ref(),
                level,
                args.instructions.as_deref(),
            )? {
                Some(c) => c,
                None => return Ok(Outcome::Interrupted),
            }
        }
    };
    drop(s);
    let written = compact::record::Extra {
        details: hook_details,
        entries: extra,
    };
    let recorded = compact::record::record(
        path,
        &ctx.dirs.agent_dir,
        &leaf_id,
        &compaction,
        &written,
        args.leaf.is_some(),
        wait,
    )
    .map_err(|e| match e {
        e @ compact::record::RecordError::LeafMoved { .. } => {
            anyhow::Error::from(Exit::new(FAILURE, e).hint("run pi compact again"))
        }
        compact::record::RecordError::Append(a) => anyhow::Error::from(a),
    })?;
    match recorded {
        Some(line) => Ok(Outcome::Compacted(line)),
        None => Ok(Outcome::Not(not(
            "locked",
            "another process started writing to the session while the summary was written; nothing was written".into(),
        ))),
    }
}

fn select_model(
    shared: &Shared,
    agent_dir: &Path,
    session_model: Option<&(String, String)>,
) -> Result<(Target, Chosen), SelectError> {
    config::select(
        &shared.registry,
        agent_dir,
        &shared.llm,
        shared.model_flag.as_ref(),
        session_model,
    )
}

/// The model, its key and headers, as options of a call; errors read for the user.
fn model_options(
    shared: &Shared,
    agent_dir: &Path,
    session_model: Option<&(String, String)>,
) -> anyhow::Result<(Target, Options)> {
    let (target, _) = select_model(shared, agent_dir, session_model).map_err(|e| {
        let hint = match &e {
            SelectError::Unknown(_) => "`pi models --all` lists the models pi knows; define others in models.json",
            SelectError::Unsupported { .. } => "pick another model with --model, or define the model in models.json with \"api\": \"openai-completions\"",
            SelectError::None => "pass --model PROVIDER/ID, or set defaultProvider and defaultModel in settings.json",
        };
        anyhow::Error::from(Exit::new(USAGE, e).hint(hint))
    })?;
    let provider = target.model.provider.clone();
    let a = auth::resolve(agent_dir, &shared.registry, &target.model, &target.details)
        .map_err(|e| anyhow::Error::from(Exit::new(FAILURE, anyhow::anyhow!(e))))?;
    if a.api_key.is_none() {
        let env = auth::env_vars(&provider);
        let how = match env.last() {
            Some(v) => format!(
                "set {v}, or add {{\"{provider}\": {{\"type\": \"api_key\", \"key\": …}}}} to auth.json"
            ),
            None => format!(
                "set \"apiKey\" for provider \"{provider}\" in models.json, or add it to auth.json"
            ),
        };
        return Err(Exit::new(
            FAILURE,
            anyhow::anyhow!("no API key for provider \"{provider}\""),
        )
        .hint(how)
        .into());
    }
    let opts = Options {
        api_key: a.api_key.clone(),
        headers: a.headers.clone(),
        retry: shared.llm.retry,
        thinking_budgets: shared.llm.thinking_budgets.clone(),
        secrets: a.secrets.clone(),
        ..Options::default()
    };
    Ok((target, opts))
}

/// A progress line on stderr while a model writes (only on a terminal).
struct Spinner {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    status: Arc<Mutex<String>>,
}

impl Spinner {
    fn start(label: String, chars: Arc<AtomicUsize>) -> Option<Spinner> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let status = Arc::new(Mutex::new(label));
        let (s2, st2) = (stop.clone(), status.clone());
        let handle = std::thread::spawn(move || {
            let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut k = 0usize;
            while !s2.load(Ordering::Relaxed) {
                let text = st2.lock().map(|s| s.clone()).unwrap_or_default();
                let n = chars.load(Ordering::Relaxed);
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K{} {text}{}",
                    frames[k % frames.len()],
                    if n > 0 {
                        format!(" ({n} characters)")
                    } else {
                        String::new()
                    }
                );
                let _ = err.flush();
                drop(err);
                k += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        });
        Some(Spinner {
            stop,
            handle: Some(handle),
            status,
        })
    }

    fn set(&self, text: String) {
        if let Ok(mut s) = self.status.lock() {
            *s = text;
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Runs `fut` on the runtime; `None` when Ctrl-C came first (the call is dropped).
fn block_on<T>(
    rt: &tokio::runtime::Runtime,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    rt.block_on(async {
        tokio::select! {
            r = fut => Some(r),
            _ = tokio::signal::ctrl_c() => None,
        }
    })
}

fn summary_failed(e: String, target: &Target) -> anyhow::Error {
    let hint = if crate::llm::overflow::is_overflow_message(&e) {
        Some(format!(
            "the summary request is larger than {}/{} accepts; use --model with a larger context window",
            target.model.provider, target.model.id
        ))
    } else if e
        .split(": ")
        .any(|p| p.starts_with("401 ") || p.starts_with("403 "))
    {
        Some(format!(
            "check the API key of provider \"{}\"",
            target.model.provider
        ))
    } else {
        None
    };
    let mut x = Exit::new(FAILURE, anyhow::anyhow!("{e}; nothing was written"));
    if let Some(h) = hint {
        x = x.hint(h);
    }
    x.into()
}

/// Asks the model for the summary; `None` when interrupted.
fn summarize(
    ctx: &Ctx,
    shared: &mut Shared,
    plan: &Plan,
    session_model: Option<&(String, String)>,
    thinking: Option<String>,
    instructions: Option<&str>,
) -> anyhow::Result<Option<Compaction>> {
    let (target, options) = model_options(shared, &ctx.dirs.agent_dir, session_model)?;
    let (rt, client) = shared.runtime()?;
    let chars = Arc::new(AtomicUsize::new(0));
    let spinner = Spinner::start(
        format!(
            "summarizing with {}/{}",
            target.model.provider, target.model.id
        ),
        chars.clone(),
    );
    let progress = |e: &Event| progress(e, &chars, spinner.as_ref());
    let summarizer = Summarizer {
        client,
        target: &target,
        options,
        thinking_level: thinking,
        progress: &progress,
    };
    let result = block_on(rt, summarizer.compact(plan, instructions));
    drop(spinner);
    match result {
        None => Ok(None),
        Some(Ok(c)) => Ok(Some(c)),
        Some(Err(e)) => Err(summary_failed(e, &target)),
    }
}

fn progress(e: &Event, chars: &AtomicUsize, spinner: Option<&Spinner>) {
    match e {
        Event::TextDelta { delta, .. } | Event::ThinkingDelta { delta, .. } => {
            chars.fetch_add(delta.chars().count(), Ordering::Relaxed);
        }
        Event::Retry {
            attempt,
            max_retries,
            delay_ms,
            error,
        } => {
            let text = format!(
                "retrying ({attempt}/{max_retries}) in {:.1} s after: {error}",
                *delay_ms as f64 / 1000.0
            );
            match spinner {
                Some(s) => s.set(text),
                None => crate::error::note(&text),
            }
        }
        _ => {}
    }
}

/// `pi session branch S ENTRY --summarize`: summarizes the path being left with a model and
/// appends the `branch_summary` entry (or, when nothing is left behind, the plain branch
/// entry). The model is called before the session is locked; if the leaf moved meanwhile,
/// nothing is written.
pub fn summarize_branch(
    session: &str,
    entry: &str,
    model: Option<&str>,
    instructions: Option<&str>,
    extra: Vec<NewEntry>,
    ctx: &mut Ctx,
) -> anyhow::Result<u8> {
    let path = ctx.session_path(Some(session))?;
    let s = ctx.open(&path)?;
    let target = match s.resolve_entry(entry) {
        Ok(i) => Some(i),
        Err(_) if entry == "root" => None,
        Err(e) => return Err(e.into()),
    };
    let target_id = target.map(|t| s.entries[t as usize].id.to_string());
    let old_leaf = s.leaf();
    let old_leaf_id = old_leaf.map(|l| s.entries[l as usize].id.to_string());
    let (entries, _) = compact::branch::collect(&s, old_leaf, target);
    let registry = Registry::load(&ctx.dirs.agent_dir);
    for w in &registry.warnings {
        crate::error::warn(w);
    }
    let llm = LlmSettings::load(&ctx.dirs.agent_dir, &ctx.cwd);
    let session_model = context::Plan::new(&s, old_leaf)
        .ok()
        .and_then(|p| p.info.model_ids());
    let mut shared = Shared {
        registry,
        context: ContextSettings::default(),
        llm,
        model_flag: model.map(parse_model).transpose()?,
        summary: None,
        runtime: None,
        client: None,
    };
    let parent = match &target_id {
        Some(id) => Parent::Id(id.clone()),
        None => Parent::Root,
    };
    let new_entry = if entries.is_empty() {
        crate::error::note("nothing is left behind on this branch: no summary");
        let from = match &old_leaf_id {
            Some(l) => jstr(l),
            None => b"null".to_vec(),
        };
        let mut data = b"{\"from\":".to_vec();
        data.extend_from_slice(&from);
        data.push(b'}');
        NewEntry::new("custom", parent)
            .field("customType", jstr("branch"))
            .field("data", data)
    } else {
        let (target_model, options) =
            model_options(&shared, &ctx.dirs.agent_dir, session_model.as_ref())?;
        let window = match target_model.model.context_window {
            0 => 128_000,
            w => w,
        };
        let reserve = shared
            .llm
            .branch_reserve_tokens
            .unwrap_or(config::DEFAULT_BRANCH_RESERVE_TOKENS);
        let prepared = compact::branch::prepare(&s, &entries, window.saturating_sub(reserve))
            .with_context(|| format!("cannot read {}", path.display()))?;
        let (rt, client) = shared.runtime()?;
        let chars = Arc::new(AtomicUsize::new(0));
        let spinner = Spinner::start(
            format!(
                "summarizing the branch with {}/{}",
                target_model.model.provider, target_model.model.id
            ),
            chars.clone(),
        );
        let progress = |e: &Event| progress(e, &chars, spinner.as_ref());
        let summarizer = Summarizer {
            client,
            target: &target_model,
            options,
            thinking_level: None,
            progress: &progress,
        };
        let result = block_on(
            rt,
            summarizer.branch(&prepared.messages, &prepared.file_ops, instructions),
        );
        drop(spinner);
        let (summary, read, modified) = match result {
            None => {
                crate::error::note("interrupted; nothing was written");
                return Ok(130);
            }
            Some(Err(e)) => return Err(summary_failed(e, &target_model)),
            Some(Ok(x)) => x,
        };
        let details = json!({"readFiles": read, "modifiedFiles": modified});
        NewEntry::new("branch_summary", parent)
            .field("fromId", jstr(target_id.as_deref().unwrap_or("root")))
            .field("summary", jstr(&summary))
            .field("details", serde_json::to_vec(&details)?)
            .field("fromHook", b"false".to_vec())
    };
    drop(s);
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let now = ap.leaf.as_ref().map(|l| l.as_str().to_owned());
    if now != old_leaf_id {
        return Err(Exit::new(
            FAILURE,
            anyhow::anyhow!(
                "the session changed while the summary was written: its leaf moved from {} to {}; nothing was written",
                old_leaf_id.as_deref().unwrap_or("(none)"),
                now.as_deref().unwrap_or("(none)")
            ),
        )
        .hint("run the command again")
        .into());
    }
    let mut batch = vec![new_entry];
    batch.extend(extra);
    let lines = ap.append(&batch)?;
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(0)
}
