//! `pi compact`: the arguments, then a [`Job`] run on one session or every session.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;
use serde_json::Value as Json;

use crate::cmd::Ctx;
use crate::cmd::args::{ModelArgs, SessionArg, positive};
use crate::cmd::watch::Progress;
use crate::error::ExitStatus;
use crate::progress::Bar;
use pi_agent::compact::job::{self, Job, Outcome, Request};
use pi_agent::context::settings::Settings as ContextSettings;
use pi_agent::extensions::config::{HookEvent, check_flags_for};
use pi_agent::extensions::hooks::{ProgramHooks, for_session};
use pi_ai::config::Settings as LlmSettings;
use pi_ai::models::Registry;
use pi_session::find;

pub const EXIT_STATUS: &str = "\
Exit status:
  0  success (with --if-needed: also when nothing needed compacting)
  1  the operation failed: the model call failed, the session changed meanwhile, or (--all) a session failed
  2  usage error or invalid input (nothing was written)
  3  --if-needed --exit-code: nothing needed compacting
  130  interrupted (Ctrl-C); nothing was written";

#[derive(Debug, Args)]
#[command(mut_arg("model", |a| a.help(
    "The model that writes the summary, as PROVIDER/ID [default: the session's model if it \
     has a key, else defaultProvider/defaultModel from settings.json]"
)))]
pub struct CompactArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Compact the path to this entry (id or unique prefix) instead of the leaf; the
    /// compaction entry is appended as its child
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub leaf: Option<String>,
    /// Compact every session under the sessions directory (with --cwd: of that directory),
    /// printing one outcome record per session; sessions locked by a running writer are
    /// skipped
    #[arg(long, conflicts_with_all = ["session", "session_opt"])]
    pub all: bool,
    /// With --all: only the sessions of DIR
    #[arg(long, value_name = "DIR", requires = "all")]
    pub cwd: Option<PathBuf>,
    /// With --all: print records only for the sessions compacted or failed, and the
    /// summary record only when there was one (for cron: silent when nothing happened)
    #[arg(short = 'q', long, requires = "all")]
    pub quiet: bool,
    /// Compact only when the context is above the threshold the agent compacts at
    /// (contextWindow − reserveTokens); otherwise print {"compacted":false,…} and exit 0
    #[arg(long)]
    pub if_needed: bool,
    /// Exit with status 3 when nothing was compacted: nothing needed it (--if-needed), or
    /// there was nothing to compact
    #[arg(long)]
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
    #[command(flatten)]
    pub model: ModelArgs,
    /// Tokens kept free below the context window; the summary may use 80% of it [default:
    /// compaction.reserveTokens from settings.json, else 16384]
    #[arg(long, value_name = "N", value_parser = positive)]
    pub reserve_tokens: Option<u64>,
    /// Tokens of recent messages kept as they are [default: compaction.keepRecentTokens
    /// from settings.json, else 20000]
    #[arg(long, value_name = "N", value_parser = positive)]
    pub keep_recent_tokens: Option<u64>,
    /// The context window for --if-needed [default: the session's model's, else the
    /// summary model's]
    #[arg(long, value_name = "N", value_parser = positive)]
    pub context_window: Option<u64>,
    /// Run COMMAND before the summary is written, after the session_before_compact hooks
    /// of settings.json; EVENT must be session_before_compact (repeatable)
    ///
    /// The hook reads the plan as JSON on stdin and may answer {"cancel":true} or
    /// {"summary":"…"} (used instead of a model's). See `man pi-extensions`.
    #[arg(long = "hook", value_name = "EVENT=COMMAND")]
    pub hook: Vec<String>,
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

/// The job the arguments describe, with settings read once.
fn job(args: &CompactArgs, ctx: &Ctx) -> anyhow::Result<Job> {
    let registry = Registry::load(&ctx.dirs.agent_dir);
    let context = ContextSettings::load(&ctx.dirs.agent_dir, &ctx.cwd);
    let llm = LlmSettings::load(&ctx.dirs.agent_dir, &ctx.cwd);
    for w in registry.warnings.iter().chain(&context.warnings) {
        crate::error::warn(w);
    }
    Ok(Job {
        agent_dir: ctx.dirs.agent_dir.clone(),
        cwd: ctx.cwd.clone(),
        registry,
        context,
        llm,
        request: Request {
            leaf: args.leaf.clone(),
            if_needed: args.if_needed,
            dry_run: args.dry_run,
            instructions: args.instructions.clone(),
            model: args.model.pair(),
            reserve_tokens: args.reserve_tokens,
            keep_recent_tokens: args.keep_recent_tokens,
            context_window: args.context_window,
            summary: args.summary_file.as_deref().map(read_summary).transpose()?,
            // Nothing to compact is a skip, not a failure (the reference's 1.6).
            skip_unplannable: true,
            wait: !args.all,
        },
        rt: pi_agent::runtime::Lazy::new(),
        warned: HashSet::new(),
    })
}

/// Compacts one session with the hooks of `--hook` and the settings (a trusted project's
/// too). A warning already in `warned` (the same untrusted project, say) is not repeated.
fn compact(
    job: &mut Job,
    ctx: &Ctx,
    flags: &[String],
    path: &Path,
    progress: &Progress,
    warned: &mut HashSet<String>,
) -> Result<Outcome, job::JobError> {
    job.run(path, progress, |cwd| -> Option<ProgramHooks> {
        let (hooks, warnings) = for_session(
            &ctx.dirs.agent_dir,
            cwd,
            &ctx.cwd,
            flags,
            path,
            HookEvent::SessionBeforeCompact,
            crate::error::warn,
        );
        for w in warnings {
            if !warned.contains(&w) {
                progress.print(|| crate::error::warn(&w));
                warned.insert(w);
            }
        }
        hooks
    })
}

pub fn run(args: CompactArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    check_flags_for(&args.hook, HookEvent::SessionBeforeCompact).map_err(crate::error::usage)?;
    let mut job = job(&args, ctx)?;
    if args.all {
        return all(&args, &mut job, ctx);
    }
    let path = ctx.session_path(args.session.get()?)?;
    let mut warned = HashSet::new();
    let outcome = compact(
        &mut job,
        ctx,
        &args.hook,
        &path,
        &Progress::default(),
        &mut warned,
    )?;
    let cancelled = outcome.cancelled();
    let session = |mut m: serde_json::Map<String, Json>| {
        m.insert("session".into(), path.to_string_lossy().into_owned().into());
        Json::Object(m)
    };
    match outcome {
        Outcome::Compacted(line) => ctx.out.line(&line)?,
        Outcome::Planned(m) => ctx.out.json(&session(m))?,
        Outcome::Skipped(m) => {
            let unplannable = matches!(
                m.get("reason").and_then(Json::as_str),
                Some("too-small" | "already-compacted")
            );
            if unplannable && let Some(why) = m.get("message").and_then(Json::as_str) {
                crate::error::note(&format!("{why}; nothing was written"));
            }
            ctx.out.json(&session(m))?;
            if cancelled && !args.if_needed {
                return Ok(ExitStatus::Failure);
            }
            if args.exit_code {
                return Ok(ExitStatus::NothingToDo);
            }
        }
        Outcome::Interrupted => {
            crate::error::note("interrupted; nothing was written");
            return Ok(ExitStatus::Interrupted);
        }
    }
    Ok(ExitStatus::Success)
}

/// After this many sessions in a row whose model could not be reached, `--all` stops.
const UNREACHABLE_IN_A_ROW: usize = 3;

/// How the sessions of a `--all` run went: the summary record's counts.
#[derive(Debug, Default)]
struct Counts {
    compacted: usize,
    skipped: usize,
    locked: usize,
    failed: usize,
    not_attempted: usize,
}

impl Counts {
    fn record(&self, stopped: bool) -> Json {
        let mut m = serde_json::Map::new();
        m.insert("type".into(), "summary".into());
        m.insert("time".into(), now().into());
        m.insert("compacted".into(), self.compacted.into());
        m.insert("skipped".into(), self.skipped.into());
        m.insert("locked".into(), self.locked.into());
        m.insert("failed".into(), self.failed.into());
        if stopped {
            m.insert("notAttempted".into(), self.not_attempted.into());
        }
        Json::Object(m)
    }
}

/// The time of a record.
fn now() -> String {
    pi_base::clock::format_iso(pi_base::clock::now_ms())
}

/// `--all`: every session of the sessions directory (or of `--cwd`), one record each (with
/// `--quiet`, only for those compacted or failed), then a summary record (with `--quiet`,
/// only after one of those). Stops when
/// the model could not be reached for [`UNREACHABLE_IN_A_ROW`] sessions in a row.
fn all(args: &CompactArgs, job: &mut Job, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let files = all_sessions(args, ctx)?;
    let bar = Bar::new(files.len() as u64);
    let mut counts = Counts::default();
    let mut unreachable = 0usize;
    let mut warned = HashSet::new();
    let mut stopped = false;
    for (path, short) in &files {
        let mut rec = serde_json::Map::new();
        rec.insert("time".into(), Json::Null);
        rec.insert("session".into(), path.to_string_lossy().into_owned().into());
        if stopped {
            counts.not_attempted += 1;
            rec.extend(job::skipped(
                "not-attempted",
                format!(
                    "the run stopped: the model could not be reached for {UNREACHABLE_IN_A_ROW} sessions in a row"
                ),
            ));
            rec.insert("time".into(), now().into());
            ctx.out.json(&Json::Object(rec))?;
            continue;
        }
        let progress = Progress::of_one(&bar, short);
        let outcome = match job::probe(path) {
            Ok(Some(skip)) => Ok(Outcome::Skipped(skip)),
            Ok(None) => compact(job, ctx, &args.hook, path, &progress, &mut warned),
            Err(e) => Err(job::JobError::Append(e)),
        };
        let shown = match outcome {
            Ok(Outcome::Compacted(line)) => {
                counts.compacted += 1;
                unreachable = 0;
                rec.insert("compacted".into(), true.into());
                let entry: Json = serde_json::from_slice(&line).unwrap_or(Json::Null);
                rec.insert("entry".into(), entry);
                true
            }
            Ok(Outcome::Skipped(m)) if m.get("reason").and_then(Json::as_str) == Some("locked") => {
                counts.locked += 1;
                rec.extend(m);
                !args.quiet
            }
            Ok(Outcome::Skipped(m) | Outcome::Planned(m)) => {
                counts.skipped += 1;
                rec.extend(m);
                !args.quiet
            }
            Ok(Outcome::Interrupted) => {
                drop(bar);
                ctx.out.flush()?;
                crate::error::note(
                    "interrupted; nothing was written to the session being compacted",
                );
                return Ok(ExitStatus::Interrupted);
            }
            Err(e) => {
                counts.failed += 1;
                if e.model_unreachable() {
                    unreachable += 1;
                } else if e.model_answered() {
                    unreachable = 0;
                }
                let e = anyhow::Error::from(e);
                rec.insert("compacted".into(), false.into());
                rec.insert("error".into(), crate::error::one_line(&e).into());
                let label = progress.label();
                let e = e.context(format!(
                    "cannot compact session {label} ({})",
                    path.display()
                ));
                progress.print(|| {
                    crate::error::report(&e);
                });
                true
            }
        };
        bar.inc(1);
        if shown {
            rec.insert("time".into(), now().into());
            // Off the bar's line, which may share the terminal.
            bar.suspend(|| {
                ctx.out.json(&Json::Object(rec))?;
                ctx.out.flush()
            })?;
        }
        if unreachable >= UNREACHABLE_IN_A_ROW {
            stopped = true;
        }
    }
    drop(bar);
    end_of_all(args, &counts, stopped, files.len(), ctx)
}

/// The sessions `--all` goes through (those of `--cwd` only, when given), with their short
/// ids.
fn all_sessions(args: &CompactArgs, ctx: &Ctx) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let dirs = match &args.cwd {
        Some(d) => vec![ctx.dirs.session_dir_for(&ctx.cwd_arg(Some(d))?)],
        None => find::all_session_dirs(&ctx.dirs),
    };
    let short = find::ShortIds::of_all(&ctx.dirs);
    Ok(dirs
        .iter()
        .flat_map(|d| find::jsonl_files(d))
        .filter_map(|p| find::read_header(&p).map(|h| (p, short.get(&h.id).to_owned())))
        .collect())
}

/// The summary record of `--all`, and its exit status.
fn end_of_all(
    args: &CompactArgs,
    counts: &Counts,
    stopped: bool,
    total: usize,
    ctx: &mut Ctx,
) -> anyhow::Result<ExitStatus> {
    // Quiet: a run that compacted nothing and failed nowhere prints nothing at all.
    if !args.quiet || stopped || counts.compacted > 0 || counts.failed > 0 {
        ctx.out.json(&counts.record(stopped))?;
    }
    ctx.out.flush()?;
    if stopped {
        crate::error::note(&format!(
            "stopped: the model could not be reached for {UNREACHABLE_IN_A_ROW} sessions in a row; {} of {total} sessions not attempted",
            counts.not_attempted,
        ));
        return Ok(ExitStatus::Failure);
    }
    if counts.failed > 0 {
        crate::error::note(&format!(
            "{} of {total} sessions failed (see their records)",
            counts.failed,
        ));
        return Ok(ExitStatus::Failure);
    }
    if args.exit_code && counts.compacted == 0 && !args.dry_run {
        return Ok(ExitStatus::NothingToDo);
    }
    Ok(ExitStatus::Success)
}
