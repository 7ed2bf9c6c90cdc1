//! `pi session name`

use crate::error::ExitStatus;
use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::SessionArg;
use pi_session::append::{Appender, NewEntry, Parent};
use pi_session::entry::jstr;

#[derive(Debug, Args)]
#[command(allow_missing_positional = true)]
pub struct NameArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// The new name (surrounding whitespace is removed; an empty name clears it)
    pub name: String,
}

pub fn run(args: NameArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let (session, [name]) = args.session.split([Some(args.name)], 1)?;
    // clap requires NAME, so one value is always left for it.
    let name = name.unwrap_or_default();
    let path = ctx.session_path(session.as_deref())?;
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let entry = NewEntry::new("session_info", Parent::Leaf).field("name", jstr(name.trim()));
    let lines = ap.append(&[entry])?;
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(ExitStatus::Success)
}
