//! `pi session resume`

use crate::error::ExitStatus;
use std::path::PathBuf;

use clap::Args;

use crate::cmd::Ctx;
use pi_session::find;

pub const EXIT_STATUS: &str = "\
Exit status:
  0  a session was found; its path is printed
  1  the directory has no session
  2  usage error";

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The working directory whose sessions to look at [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

pub fn run(args: ResumeArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let cwd = ctx.cwd_arg(args.cwd.as_deref())?;
    let path = find::resolve(None, &ctx.dirs, &cwd)?;
    ctx.out.line(path.to_string_lossy().as_bytes())?;
    Ok(ExitStatus::Success)
}
