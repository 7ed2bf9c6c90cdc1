//! `pi session list`

use crate::error::ExitStatus;
use std::path::PathBuf;

use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::{DateRangeArgs, FormatArgs};
use crate::output::{Style, escape, term_width};
use pi_base::clock;
use pi_base::text::truncate;
use pi_session::summary::Cache;
use pi_session::{find, info};

#[derive(Debug, Args)]
pub struct ListArgs {
    /// List the sessions of every directory
    #[arg(long, conflicts_with = "cwd")]
    pub all: bool,
    /// List the sessions of DIR [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Only sessions last active in this span
    #[command(flatten)]
    pub dates: DateRangeArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// `$0.12`, `$12.35`, `<$0.01` for a positive cost under a cent, empty for none.
fn cost(c: f64) -> String {
    if c <= 0.0 {
        String::new()
    } else if c < 0.005 {
        "<$0.01".to_owned()
    } else {
        format!("${c:.2}")
    }
}

pub fn run(args: ListArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let cwd = ctx.cwd_arg(args.cwd.as_deref())?;
    let dirs = if args.all {
        find::all_session_dirs(&ctx.dirs)
    } else {
        vec![ctx.dirs.session_dir_for(&cwd)]
    };
    let files: Vec<PathBuf> = dirs.iter().flat_map(|d| find::jsonl_files(d)).collect();
    let mut infos = info::list(&files, &Cache::new(&ctx.dirs.agent_dir));
    infos.retain(|i| args.dates.contains(i.modified_ms));
    // Newest file first, as a command given no session picks the most recent one (ties:
    // the greater path first, as there).
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut keyed: Vec<_> = infos.into_iter().map(|i| (modified(&i.path), i)).collect();
    keyed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.path.cmp(&a.1.path)));
    let mut infos: Vec<info::SessionInfo> = keyed.into_iter().map(|(_, i)| i).collect();
    // The current session of the directory (PI_SESSION, the pin, the most recent); a pin
    // that names no session is said once, and the listing goes on.
    let current = match ctx.choose_session(None, &cwd) {
        Ok((path, _)) => Some(path),
        Err(e @ find::FindError::Stale { .. }) => {
            crate::error::warn(&e.to_string());
            None
        }
        Err(_) => None,
    };
    let short = find::ShortIds::of_all(&ctx.dirs);
    for i in &mut infos {
        i.short_id = Some(short.get(&i.id).to_owned());
        i.current = current.as_ref() == Some(&i.path);
    }
    if !ctx.out.human(args.format.get()) {
        for i in &infos {
            ctx.out.json(i)?;
        }
        return Ok(ExitStatus::Success);
    }
    let st = Style {
        on: ctx.out.color(),
    };
    if infos.is_empty() {
        crate::error::note("no sessions");
        return Ok(ExitStatus::Success);
    }
    let now = clock::now_ms();
    let width = term_width();
    let ids: Vec<String> = infos
        .iter()
        .map(|i| escape(i.short_id.as_deref().unwrap_or(&i.id)).into_owned())
        .collect();
    let id_width = ids
        .iter()
        .map(|id| pi_base::text::width(id))
        .max()
        .unwrap_or(0)
        .max(find::SHORT_ID_MIN);
    let head = format!(
        "  {:<10} {:>6} {:>8} {:>7}  {:<id_width$}  {}",
        "MODIFIED", "MSGS", "SIZE", "COST", "ID", "NAME / FIRST MESSAGE"
    );
    ctx.out.line(st.bold(&truncate(&head, width)).as_bytes())?;
    for (i, id) in infos.iter().zip(&ids) {
        let first = pi_session::preview::normalize(&i.first_message);
        let what = match &i.name {
            Some(n) => format!("{} — {}", escape(n), escape(&first)),
            None => escape(&first).into_owned(),
        };
        let fixed = 2 + 10 + 1 + 6 + 1 + 8 + 1 + 7 + 2 + id_width + 2;
        let mut line = format!(
            "{} {:<10} {:>6} {:>8} {:>7}  {}  {}",
            if i.current { st.bold("*") } else { " ".into() },
            clock::age(now, i.modified_ms),
            i.message_count,
            crate::render::text::size(usize::try_from(i.bytes).unwrap_or(usize::MAX)),
            cost(i.cost),
            st.yellow(&pi_base::text::pad_right(id, id_width)),
            truncate(&what, width.saturating_sub(fixed).max(10))
        );
        if args.all {
            line.push('\n');
            let indent = fixed - 1;
            line.push_str(&st.dim(&format!("{:>indent$}{}", "", escape(&i.cwd))));
        }
        ctx.out.line(line.as_bytes())?;
    }
    Ok(ExitStatus::Success)
}
