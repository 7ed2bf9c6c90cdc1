//! `pi session branch`

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cmd::Ctx;
use crate::session::append::{Appender, NewEntry, Parent};
use crate::session::entry::jstr;

#[derive(Debug, Args)]
pub struct BranchArgs {
    /// The session
    pub session: String,
    /// The entry to continue from (id or unique prefix), or `root` to start a new root
    pub entry: String,
    /// Summarize the path being left (written as a branch_summary entry)
    #[arg(long, value_name = "TEXT", conflicts_with = "summary_file")]
    pub summary: Option<String>,
    /// Read the summary from a file (`-` for stdin)
    #[arg(long, value_name = "FILE")]
    pub summary_file: Option<PathBuf>,
    /// Have a model summarize the path being left (the entries from the leaf back to the
    /// common ancestor with ENTRY), as the agent does when it leaves a branch
    #[arg(long, conflicts_with_all = ["summary", "summary_file"])]
    pub summarize: bool,
    /// With --summarize: the model, as PROVIDER/ID [default: the session's model if it has a
    /// key, else defaultProvider/defaultModel from settings.json]
    #[arg(long, value_name = "PROVIDER/ID", requires = "summarize")]
    pub model: Option<String>,
    /// With --summarize: what the summary should focus on
    #[arg(long, value_name = "TEXT", requires = "summarize")]
    pub instructions: Option<String>,
}

pub fn run(args: BranchArgs, ctx: &mut Ctx) -> anyhow::Result<u8> {
    if args.summarize {
        return crate::cmd::compact::summarize_branch(
            &args.session,
            &args.entry,
            args.model.as_deref(),
            args.instructions.as_deref(),
            ctx,
        );
    }
    let path = ctx.session_path(Some(&args.session))?;
    let summary = match (&args.summary, &args.summary_file) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(f)) if f.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read the summary from stdin")?;
            Some(s)
        }
        (None, Some(f)) => Some(
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?,
        ),
        (None, None) => None,
    };
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let target = match ap.resolve_entry(&args.entry) {
        Ok(id) => Some(id),
        Err(_) if args.entry == "root" => None,
        Err(e) => return Err(e.into()),
    };
    let parent = match &target {
        Some(id) => Parent::Id(id.clone()),
        None => Parent::Root,
    };
    let entry = match summary {
        Some(text) => NewEntry::new("branch_summary", parent)
            .field("fromId", jstr(target.as_deref().unwrap_or("root")))
            .field("summary", jstr(&text))
            .field("fromHook", b"false".to_vec()),
        None => {
            let from = match &ap.leaf {
                Some(l) => jstr(l.as_str()),
                None => b"null".to_vec(),
            };
            let mut data = b"{\"from\":".to_vec();
            data.extend_from_slice(&from);
            data.push(b'}');
            NewEntry::new("custom", parent)
                .field("customType", jstr("branch"))
                .field("data", data)
        }
    };
    let lines = ap.append(&[entry])?;
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(0)
}
