//! `pi session migrate`

use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::SessionArg;
use crate::error::ExitStatus;

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub session: SessionArg,
}

pub fn run(args: MigrateArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let path = ctx.session_path(args.session.get()?)?;
    let outcome = pi_session::migrate::rewrite(&path)?;
    for w in &outcome.warnings {
        crate::error::warn(w);
    }
    if outcome.dropped_lines > 0 {
        crate::error::warn(&format!(
            "{} unreadable line(s) were left out of the new file; they are in the backup",
            outcome.dropped_lines
        ));
    }
    ctx.out.json(&outcome)?;
    Ok(ExitStatus::Success)
}
