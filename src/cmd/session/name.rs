//! `pi session name`

use crate::error::ExitStatus;
use clap::Args;

use crate::cmd::Ctx;
use crate::session::append::{Appender, NewEntry, Parent};
use crate::session::entry::jstr;

#[derive(Debug, Args)]
pub struct NameArgs {
    /// The session
    pub session: String,
    /// The new name (surrounding whitespace is removed; an empty name clears it)
    pub name: String,
}

pub fn run(args: NameArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let path = ctx.session_path(Some(&args.session))?;
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let entry = NewEntry::new("session_info", Parent::Leaf).field("name", jstr(args.name.trim()));
    let lines = ap.append(&[entry])?;
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(ExitStatus::Success)
}
