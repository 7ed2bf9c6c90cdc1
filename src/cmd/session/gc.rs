//! `pi session gc`

use std::path::PathBuf;

use clap::{ArgGroup, Args};
use serde_json::json;

use crate::cmd::Ctx;
use crate::cmd::args::{FormatArgs, ScopeArgs};
use crate::error::ExitStatus;
use crate::output::{Style, escape};
use pi_base::fs::StaleTemporary;
use pi_session::gc::{self, Candidate, Criteria, Disposal, Keep};

pub const EXIT_STATUS: &str = "\
Exit status:
  0  done (also when no session was picked, or some were kept)
  1  a session could not be moved or deleted
  2  usage error (no criterion, an invalid age or size)";

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("criteria").required(true).multiple(true)
    .args(["older_than", "larger_than", "empty"])))]
pub struct GcArgs {
    /// Sessions last modified more than AGE ago: 30m, 12h, 30d, 8w
    #[arg(long, value_name = "AGE", value_parser = age)]
    pub older_than: Option<Limit>,
    /// Sessions larger than SIZE: bytes, or with a suffix K, M, G (powers of 1024)
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub larger_than: Option<Limit>,
    /// Sessions with no message at all
    #[arg(long)]
    pub empty: bool,
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Move the sessions into DIR, at the same place below it as below the sessions
    /// directory [default: <agent dir>/archive]
    #[arg(long, value_name = "DIR", conflicts_with = "delete")]
    pub archive: Option<PathBuf>,
    /// Delete the sessions instead of archiving them
    #[arg(long)]
    pub delete: bool,
    /// Change nothing: print what would be done
    #[arg(long)]
    pub dry_run: bool,
    /// Also take sessions that a kept session names as its parent (forked from)
    #[arg(long)]
    pub include_parents: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// An age or a size as a number, with the text it was given as.
#[derive(Debug, Clone)]
pub struct Limit {
    pub value: u64,
    pub text: String,
}

fn age(s: &str) -> Result<Limit, String> {
    match pi_session::usage::dates::parse_age(s.trim()) {
        Some(ms) => Ok(Limit {
            value: ms.unsigned_abs(),
            text: s.trim().to_owned(),
        }),
        None => Err("expected an age such as 30m, 12h, 30d or 8w".to_owned()),
    }
}

fn size(s: &str) -> Result<Limit, String> {
    match gc::parse_size(s) {
        Some(value) => Ok(Limit {
            value,
            text: s.trim().to_owned(),
        }),
        None => Err("expected a size such as 500K, 10M or 1G".to_owned()),
    }
}

pub fn run(args: GcArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let criteria = Criteria {
        older_than: args
            .older_than
            .as_ref()
            .map(|l| (i64::try_from(l.value).unwrap_or(i64::MAX), l.text.clone())),
        larger_than: args.larger_than.as_ref().map(|l| (l.value, l.text.clone())),
        empty: args.empty,
        now_ms: pi_base::clock::now_ms(),
    };
    let disposal = if args.delete {
        Disposal::Delete
    } else {
        Disposal::Archive {
            root: match &args.archive {
                Some(d) => lexical(&ctx.cwd.join(d)),
                None => ctx.dirs.agent_dir.join("archive"),
            },
            sessions_root: ctx.dirs.sessions_root(),
        }
    };
    let in_scope: Vec<PathBuf> = args
        .scope
        .dirs(ctx)?
        .iter()
        .flat_map(|d| pi_session::find::jsonl_files(d))
        .collect();
    let mut live: Vec<PathBuf> = pi_session::find::all_session_dirs(&ctx.dirs)
        .iter()
        .flat_map(|d| pi_session::find::jsonl_files(d))
        .collect();
    live.extend(in_scope.iter().cloned());
    let children = gc::children(&live);
    let summaries = pi_session::summary::Cache::read_only(&ctx.dirs.agent_dir);
    let mut cands = gc::select(&in_scope, &criteria, &summaries);
    gc::run(
        &mut cands,
        &gc::Plan {
            disposal: &disposal,
            dry_run: args.dry_run,
            include_parents: args.include_parents,
            children: &children,
        },
    );
    // Temporary files of writers killed before they finished (fork, migrate, new).
    let temporaries: Vec<StaleTemporary> = args
        .scope
        .dirs(ctx)?
        .iter()
        .flat_map(|d| pi_base::fs::stale_temporaries(d))
        .collect();
    let temporaries: Vec<StaleTemporary> = if args.dry_run {
        temporaries
    } else {
        temporaries
            .into_iter()
            .filter(|t| std::fs::remove_file(&t.path).is_ok())
            .collect()
    };
    if !args.dry_run {
        // The records of sessions that are gone only take room.
        let live: Vec<PathBuf> = live.into_iter().filter(|p| p.exists()).collect();
        gc::prune_caches(&ctx.dirs.agent_dir, &live);
    }
    report(ctx, &args, &disposal, &cands, &temporaries)?;
    let failed = cands
        .iter()
        .filter(|c| matches!(c.keep, Some(Keep::Failed(_))))
        .count();
    if failed > 0 {
        return Err(crate::error::failed(format!(
            "{failed} session{} could not be {}",
            if failed == 1 { "" } else { "s" },
            if args.delete { "deleted" } else { "archived" }
        )));
    }
    Ok(ExitStatus::Success)
}

/// `path` with `.` and `..` components resolved without looking at the file system (the
/// archive directory need not exist yet).
fn lexical(path: &std::path::Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn action(c: &Candidate, disposal: &Disposal) -> &'static str {
    match (&c.keep, disposal) {
        (Some(_), _) => "keep",
        (None, Disposal::Delete) => "delete",
        (None, Disposal::Archive { .. }) => "archive",
    }
}

fn reason(c: &Candidate) -> String {
    match &c.keep {
        Some(k) => k.to_string(),
        None => c.reasons.join(", "),
    }
}

fn report(
    ctx: &mut Ctx,
    args: &GcArgs,
    disposal: &Disposal,
    cands: &[Candidate],
    temporaries: &[StaleTemporary],
) -> std::io::Result<()> {
    let verb = if args.delete { "delete" } else { "archive" };
    let gone: Vec<&Candidate> = cands.iter().filter(|c| c.keep.is_none()).collect();
    let bytes: u64 = gone.iter().map(|c| c.bytes).sum();
    let kept = cands.len() - gone.len();
    if ctx.out.human(args.format.get()) {
        return human(
            ctx,
            args,
            disposal,
            (cands, temporaries),
            (gone.len(), bytes, kept),
        );
    }
    for c in cands {
        let mut rec = json!({
            "path": c.path, "id": c.id, "bytes": c.bytes,
            "modified": pi_base::clock::format_iso(c.modified_ms),
            "reason": reason(c), "action": action(c, disposal),
        });
        if let (None, Some(to)) = (&c.keep, &c.to) {
            rec["to"] = json!(to);
        }
        ctx.out.json(&rec)?;
    }
    for t in temporaries {
        ctx.out.json(&json!({
            "path": t.path, "temporary": true, "bytes": t.bytes, "pid": t.pid,
            "reason": temporary_reason(t), "action": "delete",
        }))?;
    }
    let mut total = json!({
        "total": true, "action": verb, "sessions": gone.len(), "bytes": bytes,
        "kept": kept, "dryRun": args.dry_run,
    });
    if !temporaries.is_empty() {
        total["temporaries"] = json!(temporaries.len());
    }
    if let Disposal::Archive { root, .. } = disposal {
        total["to"] = json!(root);
    }
    ctx.out.json(&total)
}

fn temporary_reason(t: &StaleTemporary) -> String {
    format!(
        "temporary file of process {}, which is gone (a write cut short)",
        t.pid
    )
}

fn human(
    ctx: &mut Ctx,
    args: &GcArgs,
    disposal: &Disposal,
    (cands, temporaries): (&[Candidate], &[StaleTemporary]),
    (n, bytes, kept): (usize, u64, usize),
) -> std::io::Result<()> {
    let st = Style {
        on: ctx.out.color(),
    };
    let now = pi_base::clock::now_ms();
    for c in cands {
        let act = action(c, disposal);
        let act = match act {
            "keep" => st.green(&format!("{act:<7}")),
            _ => st.red(&format!("{act:<7}")),
        };
        let size = crate::render::text::size(usize::try_from(c.bytes).unwrap_or(usize::MAX));
        let line = format!(
            "{act}  {:>8}  {:>10}  {}\n         {}",
            size,
            pi_base::clock::age(now, c.modified_ms),
            escape(&c.path.to_string_lossy()),
            st.dim(&escape(&reason(c)))
        );
        ctx.out.line(line.as_bytes())?;
    }
    let what = |n: usize| format!("{n} session{}", if n == 1 { "" } else { "s" });
    let size = crate::render::text::size(usize::try_from(bytes).unwrap_or(usize::MAX));
    let mut sum = match (args.dry_run, disposal) {
        (true, Disposal::Delete) => format!("would delete {} ({size})", what(n)),
        (false, Disposal::Delete) => format!("deleted {} ({size})", what(n)),
        (dry, Disposal::Archive { root, .. }) => format!(
            "{} {} ({size}) to {}",
            if dry { "would archive" } else { "archived" },
            what(n),
            escape(&root.to_string_lossy())
        ),
    };
    for t in temporaries {
        let size = crate::render::text::size(usize::try_from(t.bytes).unwrap_or(usize::MAX));
        let line = format!(
            "{}  {:>8}  {:>10}  {}\n         {}",
            st.red(&format!("{:<7}", "delete")),
            size,
            "",
            escape(&t.path.to_string_lossy()),
            st.dim(&temporary_reason(t))
        );
        ctx.out.line(line.as_bytes())?;
    }
    if kept > 0 {
        sum.push_str(&format!("; kept {}", what(kept)));
    }
    if !temporaries.is_empty() {
        let n = temporaries.len();
        sum.push_str(&format!(
            "; {} {n} temporary file{}",
            if args.dry_run {
                "would remove"
            } else {
                "removed"
            },
            if n == 1 { "" } else { "s" }
        ));
    }
    if args.dry_run {
        sum.push_str(" (dry run: nothing changed)");
    }
    ctx.out.line(st.bold(&sum).as_bytes())
}
