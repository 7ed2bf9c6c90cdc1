//! `pi session fork`

use crate::error::ExitStatus;
use std::path::PathBuf;

use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::SessionArg;
use pi_session::fork;

#[derive(Debug, Args)]
pub struct ForkArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// The last entry to copy (id or unique prefix) [default: the leaf]
    ///
    /// Given alone, the value is SESSION; with --session, it is ENTRY.
    #[arg(value_name = "ENTRY")]
    pub entry: Option<String>,
    /// Same as ENTRY (as --leaf of the commands that read a session), for the most recent
    /// session without naming it
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Make the copy a session of DIR (stored with DIR's sessions) [default: the same
    /// directory and folder as the original]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

pub fn run(args: ForkArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let (session, [entry]) = args.session.split([args.entry], 0)?;
    let entry = match (entry, args.leaf) {
        (Some(_), Some(_)) => {
            return Err(crate::error::usage(
                "the entry is given twice: as ENTRY and with --leaf",
            ));
        }
        (e, l) => e.or(l),
    };
    let src = ctx.session_path(session.as_deref())?;
    // A new index of a large file is recorded while the copy runs (the copy waits on the
    // disk more than on the processor).
    let s = ctx.open_unrecorded(&src)?;
    let end = match &entry {
        Some(e) => Some(s.resolve_entry(e)?),
        None => s.leaf(),
    };
    let (cwd, dir) = match &args.cwd {
        Some(d) => {
            let cwd = ctx.cwd_arg(Some(d))?;
            let dir = ctx.dirs.session_dir_for(&cwd);
            (cwd, dir)
        }
        None => (
            s.header.as_ref().map(|h| h.cwd.clone()).unwrap_or_default(),
            src.parent().map(PathBuf::from).unwrap_or_default(),
        ),
    };
    let out_path = std::thread::scope(|sc| {
        sc.spawn(|| s.record_index());
        fork::write_fork(&s, &src, end, &cwd, &dir)
    })?;
    ctx.out.line(out_path.to_string_lossy().as_bytes())?;
    Ok(ExitStatus::Success)
}
