//! `pi session fork`

use crate::error::ExitStatus;
use std::path::PathBuf;

use clap::Args;

use crate::cmd::Ctx;
use crate::session::fork;

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The session to copy from
    pub session: String,
    /// The last entry to copy (id or unique prefix) [default: the leaf]
    pub entry: Option<String>,
    /// Make the copy a session of DIR (stored with DIR's sessions) [default: the same
    /// directory and folder as the original]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

pub fn run(args: ForkArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let src = ctx.session_path(Some(&args.session))?;
    let s = ctx.open(&src)?;
    let end = match &args.entry {
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
    let out_path = fork::write_fork(&s, &src, end, &cwd, &dir)?;
    ctx.out.line(out_path.to_string_lossy().as_bytes())?;
    Ok(ExitStatus::Success)
}
