//! `pi session use`

use crate::error::ExitStatus;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cmd::Ctx;
use pi_session::find::{self, Chosen, FindError};

pub const EXIT_STATUS: &str = "\
Exit status:
  0  the session was pinned, or the pin removed, or (without arguments) a pin is printed
  1  no session is pinned, or the pinned one is gone; the pin could not be written
  2  usage error, or SESSION names no session (nothing was written)";

#[derive(Debug, Args)]
pub struct UseArgs {
    /// The session to pin: a path, a session id, a unique prefix or short id of one
    #[arg(value_name = "SESSION", conflicts_with = "clear")]
    pub session: Option<String>,
    /// Remove the pin: commands go back to the most recent session
    #[arg(long)]
    pub clear: bool,
    /// The directory whose pin to set, print or clear [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

pub fn run(args: UseArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let cwd = ctx.cwd_arg(args.cwd.as_deref())?;
    let pin = find::pin_file(&ctx.dirs, &cwd);
    if args.clear {
        let had = find::clear_pin(&ctx.dirs, &cwd)
            .with_context(|| format!("cannot remove the pin {}", pin.display()))?;
        if !had {
            crate::error::note(&format!("no session was pinned for {cwd}"));
        }
        return Ok(ExitStatus::Success);
    }
    let Some(arg) = args.session else {
        let Some(value) = find::read_pin(&ctx.dirs, &cwd) else {
            crate::error::note(&format!("no session is pinned for {cwd}"));
            return Ok(ExitStatus::Failure);
        };
        // The pin as it resolves now: a session that is gone is an error, as for every
        // command that would use it.
        let path = find::resolve(Some(&value), &ctx.dirs, &cwd).map_err(|e| FindError::Stale {
            from: Chosen::Pin,
            value,
            cause: Box::new(e),
        })?;
        ctx.out.line(path.to_string_lossy().as_bytes())?;
        return Ok(ExitStatus::Success);
    };
    let path = find::resolve(Some(&arg), &ctx.dirs, &ctx.cwd_str())?;
    find::write_pin(&ctx.dirs, &cwd, &path)
        .with_context(|| format!("cannot write the pin {}", pin.display()))?;
    ctx.out.line(path.to_string_lossy().as_bytes())?;
    if crate::cmd::session_env().is_some() {
        crate::error::warn(
            "PI_SESSION is set in this shell and comes before the pin; unset it to use the pin",
        );
    }
    Ok(ExitStatus::Success)
}
