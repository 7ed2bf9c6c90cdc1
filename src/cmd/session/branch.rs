//! `pi session branch`

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cmd::Ctx;
use crate::session::append::{Appender, NewEntry, Parent};
use crate::session::entry::jstr;

#[derive(Debug, Args)]
pub struct BranchArgs {
    /// The session
    pub session: String,
    /// The entry to continue from (id or unique prefix), or `root` to start a new root
    pub entry: String,
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
    /// With --summarize: the model, as PROVIDER/ID [default: the session's model if it has a
    /// key, else defaultProvider/defaultModel from settings.json]
    #[arg(long, value_name = "PROVIDER/ID", requires = "summarize")]
    pub model: Option<String>,
    /// With --summarize: what the summary should focus on
    #[arg(long, value_name = "TEXT", requires = "summarize")]
    pub instructions: Option<String>,
    /// Run COMMAND before the leaf moves, after the session_before_tree hooks of
    /// settings.json; EVENT must be session_before_tree (repeatable)
    ///
    /// The hook reads the move as JSON on stdin and may answer {"cancel":true} or
    /// {"summary":"…"} (written as the branch summary). See `commands/pi-extensions.md`.
    #[arg(long = "hook", value_name = "EVENT=COMMAND")]
    pub hook: Vec<String>,
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
fn run_hooks(
    args: &BranchArgs,
    ctx: &Ctx,
    path: &std::path::Path,
) -> anyhow::Result<Option<Hooked>> {
    use crate::extensions::config::{self, HookEvent};
    use crate::extensions::hooks::{ProgramHooks, Runner, Tree, before_tree, effect_entries};
    let s = ctx.open(path)?;
    let cwd = s
        .header
        .as_ref()
        .map(|h| PathBuf::from(&h.cwd))
        .filter(|d| d.is_dir())
        .unwrap_or_else(|| ctx.cwd.clone());
    let (set, warnings) = config::load(&ctx.dirs.agent_dir, &cwd, &args.hook);
    for w in &warnings {
        crate::error::warn(w);
    }
    let none = Hooked {
        summary: None,
        extra: Vec::new(),
    };
    if !set.has(HookEvent::SessionBeforeTree) {
        return Ok(Some(none));
    }
    let target = match s.resolve_entry(&args.entry) {
        Ok(i) => Some(i),
        Err(_) if args.entry == "root" => None,
        Err(e) => return Err(e.into()),
    };
    let wants = args.summary.is_some() || args.summary_file.is_some() || args.summarize;
    let preparation = crate::extensions::hooks::tree_preparation(&s, target, wants)
        .with_context(|| format!("cannot read {}", path.display()))?;
    drop(s);
    let mut ph = ProgramHooks::new(Runner::new(set, cwd, Some(path.to_owned())));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
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

pub fn run(args: BranchArgs, ctx: &mut Ctx) -> anyhow::Result<u8> {
    crate::cmd::compact::check_hook_flags(
        &args.hook,
        crate::extensions::config::HookEvent::SessionBeforeTree,
    )?;
    let path = ctx.session_path(Some(&args.session))?;
    let Some(hooked) = run_hooks(&args, ctx, &path)? else {
        return Ok(crate::error::FAILURE);
    };
    if args.summarize && hooked.summary.is_none() {
        return crate::cmd::compact::summarize_branch(
            &args.session,
            &args.entry,
            args.model.as_deref(),
            args.instructions.as_deref(),
            hooked.extra,
            ctx,
        );
    }
    let mut details = None;
    let summary = match (&args.summary, &args.summary_file) {
        _ if hooked.summary.is_some() => hooked.summary.map(|(text, d)| {
            details = Some(d.unwrap_or_else(|| serde_json::json!({})));
            text
        }),
        (Some(s), _) => Some(s.clone()),
        (None, Some(f)) if f.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read the summary from stdin")?;
            Some(s)
        }
        (None, Some(f)) => Some(
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?,
        ),
        (None, None) => None,
    };
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let target = match ap.resolve_entry(&args.entry) {
        Ok(id) => Some(id),
        Err(_) if args.entry == "root" => None,
        Err(e) => return Err(e.into()),
    };
    let parent = match &target {
        Some(id) => Parent::Id(id.clone()),
        None => Parent::Root,
    };
    let entry = match summary {
        Some(text) => {
            let mut e = NewEntry::new("branch_summary", parent)
                .field("fromId", jstr(target.as_deref().unwrap_or("root")))
                .field("summary", jstr(&text));
            if let Some(d) = &details {
                e = e.field("details", crate::js::stringify(d));
            }
            e.field(
                "fromHook",
                if details.is_some() {
                    b"true".to_vec()
                } else {
                    b"false".to_vec()
                },
            )
        }
        None => {
            let from = match &ap.leaf {
                Some(l) => jstr(l.as_str()),
                None => b"null".to_vec(),
            };
            let mut data = b"{\"from\":".to_vec();
            data.extend_from_slice(&from);
            data.push(b'}');
            NewEntry::new("custom", parent)
                .field("customType", jstr("branch"))
                .field("data", data)
        }
    };
    let mut batch = vec![entry];
    batch.extend(hooked.extra);
    let lines = ap.append(&batch)?;
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(0)
}
