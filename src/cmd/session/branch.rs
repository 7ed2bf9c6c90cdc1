//! `pi session branch`

use crate::error::ExitStatus;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::{FormatArgs, ModelArgs, SessionArg};
use crate::cmd::watch::Progress;
use pi_agent::compact::branch::{self, BranchSummary, Moved};
use pi_agent::extensions::config::{HookEvent, check_flags_for};
use pi_agent::extensions::hooks::{
    Tree, before_tree, effect_entries, for_session, tree_preparation,
};
use pi_ai::config::Settings as LlmSettings;
use pi_ai::models::Registry;
use pi_session::append::{Appender, NewEntry, Parent};

#[derive(Debug, Args)]
#[command(
    allow_missing_positional = true,
    group(
        clap::ArgGroup::new("summarize_options")
            .args(["model"])
            .multiple(true)
            .requires("summarize")
    ),
    mut_arg("model", |a| a.help(
        "With --summarize: the model, as PROVIDER/ID [default: the session's model if it has a \
         key, else defaultProvider/defaultModel from settings.json]"
    ))
)]
pub struct BranchArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// The entry to continue from (id or unique prefix), or `root` to start a new root;
    /// without it, the branch tips are listed (those of another session with -s SESSION)
    pub entry: Option<String>,
    /// Summarize the path being left (written as a branch_summary entry)
    #[arg(long, value_name = "TEXT", conflicts_with = "summary_file")]
    pub summary: Option<String>,
    /// Read the summary from a file (`-` for stdin)
    #[arg(long, value_name = "FILE")]
    pub summary_file: Option<PathBuf>,
    /// Have a model summarize the path being left (the entries from the leaf back to the
    /// common ancestor with ENTRY), as the agent does when it leaves a branch
    #[arg(long, conflicts_with_all = ["summary", "summary_file"])]
    pub summarize: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    /// With --summarize: what the summary should focus on
    #[arg(long, value_name = "TEXT", requires = "summarize")]
    pub instructions: Option<String>,
    /// Run COMMAND before the leaf moves, after the session_before_tree hooks of
    /// settings.json; EVENT must be session_before_tree (repeatable)
    ///
    /// The hook reads the move as JSON on stdin and may answer {"cancel":true} or
    /// {"summary":"…"} (written as the branch summary). See `man pi-extensions`.
    #[arg(long = "hook", value_name = "EVENT=COMMAND")]
    pub hook: Vec<String>,
    /// Without ENTRY: the listing's format
    #[command(flatten)]
    pub format: FormatArgs,
}

/// What the session_before_tree hooks decided.
pub struct Hooked {
    /// A summary a hook supplied, with its details.
    pub summary: Option<(String, Option<serde_json::Value>)>,
    /// Entries to append after the branch entry.
    pub extra: Vec<NewEntry>,
}

/// Runs the session_before_tree hooks for moving the leaf of `path` to `entry`. `Ok(None)`:
/// a hook cancelled the move (reported).
fn run_hooks(args: &BranchArgs, ctx: &Ctx, path: &Path) -> anyhow::Result<Option<Hooked>> {
    let s = ctx.open(path)?;
    let cwd = s
        .header
        .as_ref()
        .map_or_else(|| ctx.cwd.clone(), |h| PathBuf::from(&h.cwd));
    let (hooks, warnings) = for_session(
        &ctx.dirs.agent_dir,
        &cwd,
        &ctx.cwd,
        &args.hook,
        path,
        HookEvent::SessionBeforeTree,
        crate::error::warn,
    );
    for w in &warnings {
        crate::error::warn(w);
    }
    let Some(mut ph) = hooks else {
        return Ok(Some(Hooked {
            summary: None,
            extra: Vec::new(),
        }));
    };
    let target = branch::resolve_target(&s, args.entry.as_deref().unwrap_or_default())?;
    let wants = args.summary.is_some() || args.summary_file.is_some() || args.summarize;
    let preparation = tree_preparation(&s, target, wants)
        .with_context(|| format!("cannot read {}", path.display()))?;
    drop(s);
    let rt = pi_agent::runtime::build()?;
    let decision = rt.block_on(before_tree(&mut ph, preparation));
    let extra = effect_entries(&ph.take());
    match decision {
        Tree::Cancel(why) => {
            crate::error::note(&format!(
                "the move was cancelled by a session_before_tree hook{}; nothing was written",
                why.map(|w| format!(" ({w})")).unwrap_or_default()
            ));
            Ok(None)
        }
        Tree::Summary(text, details) => Ok(Some(Hooked {
            summary: Some((text, details)),
            extra,
        })),
        Tree::Proceed => Ok(Some(Hooked {
            summary: None,
            extra,
        })),
    }
}

/// `--summarize`: the model writes the summary of the path being left.
fn summarize(
    args: &BranchArgs,
    ctx: &mut Ctx,
    path: &Path,
    extra: Vec<NewEntry>,
) -> anyhow::Result<ExitStatus> {
    let registry = Registry::load(&ctx.dirs.agent_dir);
    for w in &registry.warnings {
        crate::error::warn(w);
    }
    let mut job = BranchSummary {
        agent_dir: ctx.dirs.agent_dir.clone(),
        registry,
        llm: LlmSettings::load(&ctx.dirs.agent_dir, &ctx.cwd),
        model: args.model.pair(),
        instructions: args.instructions.clone(),
        rt: pi_agent::runtime::Lazy::new(),
    };
    match job.run(
        path,
        args.entry.as_deref().unwrap_or_default(),
        extra,
        &Progress::default(),
    )? {
        Moved::Interrupted => {
            crate::error::note("interrupted; nothing was written");
            Ok(ExitStatus::Interrupted)
        }
        Moved::Written { lines, summarized } => {
            if !summarized {
                crate::error::note("nothing is left behind on this branch: no summary");
            }
            for l in &lines {
                ctx.out.line(l)?;
            }
            Ok(ExitStatus::Success)
        }
    }
}

/// The summary given with --summary or --summary-file, or by a hook (with its details).
fn given_summary(
    args: &BranchArgs,
    hooked: Option<(String, Option<serde_json::Value>)>,
) -> anyhow::Result<Option<(String, Option<serde_json::Value>)>> {
    if let Some((text, details)) = hooked {
        return Ok(Some((
            text,
            Some(details.unwrap_or_else(|| serde_json::json!({}))),
        )));
    }
    Ok(match (&args.summary, &args.summary_file) {
        (Some(s), _) => Some((s.clone(), None)),
        (None, Some(f)) if f.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read the summary from stdin")?;
            Some((s, None))
        }
        (None, Some(f)) => Some((
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?,
            None,
        )),
        (None, None) => None,
    })
}

pub fn run(mut args: BranchArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    check_flags_for(&args.hook, HookEvent::SessionBeforeTree).map_err(crate::error::usage)?;
    let (session, [entry]) = std::mem::take(&mut args.session).split([args.entry.take()], 1)?;
    let Some(entry) = entry else {
        return list_tips(session.as_deref(), &args, ctx);
    };
    args.entry = Some(entry);
    let path = ctx.session_path(session.as_deref())?;
    let Some(hooked) = run_hooks(&args, ctx, &path)? else {
        return Ok(ExitStatus::Failure);
    };
    if args.summarize && hooked.summary.is_none() {
        return summarize(&args, ctx, &path, hooked.extra);
    }
    let summary = given_summary(&args, hooked.summary)?;
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let target = match ap.resolve_entry(args.entry.as_deref().unwrap_or_default()) {
        Ok(id) => Some(id),
        Err(_) if args.entry.as_deref() == Some("root") => None,
        Err(e) => return Err(e.into()),
    };
    let parent = match &target {
        Some(id) => Parent::Id(id.clone()),
        None => Parent::Root,
    };
    let entry = match summary {
        // `fromId` is the leaf being left (the reference 1.6), `root` without one.
        Some((text, details)) => branch::summary_entry(
            parent,
            ap.leaf.as_ref().map_or("root", |l| l.as_str()),
            &text,
            details.as_ref().map(pi_base::js::stringify),
            None,
            details.is_some(),
        ),
        None => branch::move_entry(parent, ap.leaf.as_ref().map(|l| l.as_str())),
    };
    let mut batch = vec![entry];
    batch.extend(hooked.extra);
    let lines = ap.append(&batch)?;
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(ExitStatus::Success)
}

/// A branch tip: an entry without children, or the leaf.
struct Tip {
    idx: u32,
    timestamp: Option<i64>,
    preview: String,
    role: Option<String>,
}

/// `pi session branch` without ENTRY: one row per branch tip, in file order.
fn list_tips(
    session: Option<&str>,
    args: &BranchArgs,
    ctx: &mut Ctx,
) -> anyhow::Result<ExitStatus> {
    if args.summary.is_some()
        || args.summary_file.is_some()
        || args.summarize
        || !args.hook.is_empty()
    {
        return Err(crate::error::usage(
            "ENTRY is needed to move the leaf (--summary, --summarize and --hook go with it)",
        ));
    }
    let source = ctx.session_source(session)?;
    let (s, _) = ctx.open_source(source, pi_session::scan::NoVisit)?;
    let tips = tips_of(&s)?;
    let leaf = s.leaf();
    let labels: std::collections::HashMap<_, _> = s
        .resolved_labels()
        .into_iter()
        .map(|(id, l, _)| (id, l))
        .collect();
    if ctx.out.human(args.format.get()) {
        let st = crate::output::Style {
            on: ctx.out.color(),
        };
        let now = pi_base::clock::now_ms();
        let width = if ctx.out.tty {
            crate::output::term_width()
        } else {
            usize::MAX
        };
        for t in &tips {
            let e = &s.entries[t.idx as usize];
            let active = leaf == Some(t.idx);
            let age = t
                .timestamp
                .map_or_else(String::new, |ts| pi_base::clock::age(now, ts));
            let label = labels
                .get(&e.id)
                .map(|l| format!("[{}] ", crate::output::escape(l)))
                .unwrap_or_default();
            let head = format!(
                "{} {} {:>8}  {label}",
                if active { "*" } else { " " },
                crate::output::escape(e.id.as_str()),
                age
            );
            let room = width.saturating_sub(pi_base::text::width(&head)).max(12);
            let text = pi_base::text::truncate(&crate::output::escape(&t.preview), room);
            let head = if active { st.cyan(&head) } else { head };
            ctx.out.line(format!("{head}{text}").as_bytes())?;
        }
        return Ok(ExitStatus::Success);
    }
    for t in &tips {
        let e = &s.entries[t.idx as usize];
        let mut rec = serde_json::json!({
            "id": e.id.as_str(),
            "line": e.line,
            "active": leaf == Some(t.idx),
            "preview": t.preview,
        });
        if let Some(ts) = t.timestamp {
            rec["timestamp"] = pi_base::clock::format_iso(ts).into();
        }
        if let Some(r) = &t.role {
            rec["role"] = r.as_str().into();
        }
        if let Some(l) = labels.get(&e.id) {
            rec["label"] = l.as_str().into();
        }
        ctx.out.line(rec.to_string().as_bytes())?;
    }
    Ok(ExitStatus::Success)
}

/// The entries without children, and the leaf, in file order, each with the last message
/// (or summary) at or above it.
fn tips_of(s: &pi_session::Session) -> anyhow::Result<Vec<Tip>> {
    let n = s.entries.len();
    let parent: Vec<Option<u32>> = s
        .entries
        .iter()
        .map(|e| e.parent_id.as_ref().and_then(|p| s.get_id(p)))
        .collect();
    let mut has_child = vec![false; n];
    for p in parent.iter().flatten() {
        has_child[*p as usize] = true;
    }
    let leaf = s.leaf();
    let mut tips = Vec::new();
    for i in 0..n as u32 {
        if has_child[i as usize] && leaf != Some(i) {
            continue;
        }
        // A few steps up at most, usually; never more than 64.
        let mut at = Some(i);
        let mut shown = None;
        for _ in 0..64 {
            let Some(j) = at else { break };
            let line = s.line(j)?;
            let (ty, preview, role) = crate::cmd::session::tree::shown_line(&line);
            if matches!(
                ty.as_str(),
                "message" | "branch_summary" | "compaction" | "custom_message"
            ) {
                shown = Some((preview, role));
                break;
            }
            shown.get_or_insert((preview, role));
            at = parent[j as usize];
        }
        let line = s.line(i)?;
        let timestamp = serde_json::from_slice::<serde_json::Value>(&line)
            .ok()
            .and_then(|v| {
                v.get("timestamp")
                    .and_then(|t| t.as_str())
                    .and_then(pi_base::clock::parse_iso)
            });
        let (preview, role) = shown.unwrap_or_default();
        tips.push(Tip {
            idx: i,
            timestamp,
            preview,
            role,
        });
    }
    Ok(tips)
}
