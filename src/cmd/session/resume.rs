//! `pi session resume`

use crate::error::ExitStatus;
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

use crate::cmd::Ctx;

pub const EXIT_STATUS: &str = "\
Exit status:
  0  a session was found; its path is printed
  1  the directory has no session, or PI_SESSION or the pin names a session that is gone
  2  usage error";

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// Print a JSON record instead: {"path", "from"}, where from is env (PI_SESSION), pin
    /// (`pi session use`) or most-recent
    #[arg(long)]
    pub json: bool,
    /// The working directory whose sessions to look at [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

pub fn run(args: ResumeArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let cwd = ctx.cwd_arg(args.cwd.as_deref())?;
    let (path, from) = ctx.choose_session(None, &cwd)?;
    if args.json {
        ctx.out
            .json(&serde_json::json!({"path": path, "from": from.key()}))?;
        return Ok(ExitStatus::Success);
    }
    ctx.out.line(path.to_string_lossy().as_bytes())?;
    // Which of the three it was, for a person (`S=$(pi session resume)` on a terminal); a
    // cron job's stderr stays quiet, and scripts that want to know ask with --json.
    if std::io::stderr().is_terminal() {
        crate::error::note(&format!("note: {}", from.describe()));
    }
    Ok(ExitStatus::Success)
}
