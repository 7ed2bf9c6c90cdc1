//! `pi trust`: let a project's hooks and tools run, list the projects trusted, revoke.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Value as Json, json};

use crate::cmd::Ctx;
use crate::error::ExitStatus;
use pi_tools::trust::{Status, Store, TrustError};

pub const EXIT_STATUS: &str = "\
Exit status:
  0  success (--revoke: also when the project was not trusted)
  1  the trust store could not be read or written
  2  usage error: DIR is not a directory";

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The project's directory [default: the current directory]
    pub dir: Option<PathBuf>,
    /// List the trusted projects, each with its state: trusted, changed (its files are no
    /// longer those trusted; with the files that changed) or missing
    #[arg(long, conflicts_with_all = ["dir", "revoke"])]
    pub list: bool,
    /// Forget the project: its hooks and tools no longer run
    #[arg(long)]
    pub revoke: bool,
}

/// A store error as the user sees it: a directory that is not one is a usage error.
fn error(e: TrustError) -> anyhow::Error {
    match e {
        TrustError::NotADirectory(_) => crate::error::usage(e),
        e => crate::error::failed(e),
    }
}

pub fn run(args: TrustArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let store = Store::new(&ctx.dirs.agent_dir);
    if args.list {
        for (record, status) in store.list().map_err(error)? {
            let mut rec = json!({
                "dir": record.dir,
                "state": status.as_str(),
                "trustedAt": record.trusted_at,
                "sha256": record.sha256,
            });
            if let Status::Changed(files) = &status {
                rec["changed"] = json!(files);
            }
            ctx.out.json(&rec)?;
        }
        return Ok(ExitStatus::Success);
    }
    let dir = ctx.cwd.join(args.dir.as_deref().unwrap_or(".".as_ref()));
    if args.revoke {
        let (dir, was) = store.revoke(&dir).map_err(error)?;
        ctx.out
            .json(&json!({"dir": dir, "state": "untrusted", "revoked": was}))?;
        return Ok(ExitStatus::Success);
    }
    let record = store
        .trust(&dir, &pi_base::clock::format_iso(pi_base::clock::now_ms()))
        .map_err(error)?;
    let files: Vec<&String> = record.files.keys().collect();
    let rec: Json = json!({
        "dir": record.dir,
        "state": "trusted",
        "trustedAt": record.trusted_at,
        "sha256": record.sha256,
        "files": files,
    });
    ctx.out.json(&rec)?;
    Ok(ExitStatus::Success)
}
