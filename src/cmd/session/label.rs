//! `pi session label`

use crate::error::ExitStatus;
use clap::Args;

use crate::cmd::Ctx;
use crate::session::append::{Appender, NewEntry, Parent};
use crate::session::entry::jstr;

#[derive(Debug, Args)]
pub struct LabelArgs {
    /// The session
    pub session: String,
    /// The entry to label (id or unique prefix)
    pub entry: String,
    /// The label
    #[arg(required_unless_present = "clear")]
    pub label: Option<String>,
    /// Remove the entry's label
    #[arg(long, conflicts_with = "label")]
    pub clear: bool,
}

pub fn run(args: LabelArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let path = ctx.session_path(Some(&args.session))?;
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let target = ap.resolve_entry(&args.entry)?;
    let mut entry = NewEntry::new("label", Parent::Leaf).field("targetId", jstr(&target));
    if let Some(l) = args.label.as_deref().filter(|l| !l.is_empty()) {
        entry = entry.field("label", jstr(l));
    }
    let lines = ap.append(&[entry])?;
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(ExitStatus::Success)
}
