//! `pi session label`

use crate::error::ExitStatus;
use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::SessionArg;
use crate::error::usage;
use pi_session::append::{Appender, NewEntry, Parent};
use pi_session::entry::jstr;

// SESSION may be left out before ENTRY, which clap cannot tell from the optional LABEL after
// it: the values are sorted out in `run`, and the usage is written out.
#[derive(Debug, Args)]
#[command(
    override_usage = "pi session label [OPTIONS] [SESSION] <ENTRY> <LABEL>\n       \
    pi session label [OPTIONS] [SESSION] <ENTRY> --clear"
)]
pub struct LabelArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// The entry to label (id or unique prefix)
    #[arg(value_name = "ENTRY")]
    pub entry: Option<String>,
    /// The label (an empty one clears it)
    #[arg(value_name = "LABEL")]
    pub label: Option<String>,
    /// Remove the entry's label
    #[arg(long, conflicts_with = "label")]
    pub clear: bool,
}

pub fn run(args: LabelArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let needed = if args.clear { 1 } else { 2 };
    let (session, [entry, label]) = args.session.split([args.entry, args.label], needed)?;
    let Some(entry) = entry else {
        return Err(usage("the entry to label is missing"));
    };
    match (&label, args.clear) {
        (None, false) => return Err(usage("the label is missing (--clear removes a label)")),
        (Some(_), true) => return Err(usage("give a label or --clear, not both")),
        _ => {}
    }
    let path = ctx.session_path(session.as_deref())?;
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let target = ap.resolve_entry(&entry)?;
    let mut entry = NewEntry::new("label", Parent::Leaf).field("targetId", jstr(&target));
    if let Some(l) = label.as_deref().filter(|l| !l.is_empty()) {
        entry = entry.field("label", jstr(l));
    }
    let lines = ap.append(&[entry])?;
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(ExitStatus::Success)
}
