//! `pi session new`

use crate::error::ExitStatus;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cmd::Ctx;
use crate::error::usage;
use pi_base::{clock, ids as rng, json};
use pi_session::{entry, find};

#[derive(Debug, Args)]
pub struct NewArgs {
    /// Working directory the session belongs to [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Session id [default: a new time-ordered UUID (v7)]
    #[arg(long)]
    pub id: Option<String>,
    /// Name the session (written as a session_info entry after the header)
    #[arg(long)]
    pub name: Option<String>,
    /// Record the session this one comes from (a path, id or id prefix) in the header
    #[arg(long, value_name = "SESSION")]
    pub parent_session: Option<String>,
}

fn check_id(id: &str) -> anyhow::Result<()> {
    if id.is_empty()
        || id == "."
        || id == ".."
        || id.chars().any(|c| c == '/' || c == '\\' || c.is_control())
    {
        return Err(usage(format!(
            "invalid session id {id:?}: it becomes part of a file name, so it must be non-empty \
             and free of slashes and control characters"
        )));
    }
    Ok(())
}

pub fn run(args: NewArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let cwd = ctx.cwd_arg(args.cwd.as_deref())?;
    let dir = ctx.dirs.session_dir_for(&cwd);
    let now = clock::now_ms();
    let mut rng = rng::Rng::new(|| now as u64);
    // A chosen id is claimed under the lock of the session directory, held until the file
    // is in place: of several creators of one id, exactly one succeeds.
    let (id, claim) = match args.id {
        Some(id) => {
            check_id(&id)?;
            let claim = find::claim_id(&dir, &id)?;
            (id, Some(claim))
        }
        None => (rng.uuid_v7(now), None),
    };
    let parent = match &args.parent_session {
        Some(p) => Some(
            ctx.session_path(Some(p))
                .context("cannot find the parent session")?
                .to_string_lossy()
                .into_owned(),
        ),
        None => None,
    };
    let ts = clock::format_iso(now);
    let mut header = Vec::new();
    header.extend_from_slice(b"{\"type\":\"session\",\"version\":3,\"id\":");
    json::write_str(&mut header, &id);
    header.extend_from_slice(b",\"timestamp\":");
    json::write_str(&mut header, &ts);
    header.extend_from_slice(b",\"cwd\":");
    json::write_str(&mut header, &cwd);
    if let Some(p) = &parent {
        header.extend_from_slice(b",\"parentSession\":");
        json::write_str(&mut header, p);
    }
    header.push(b'}');
    let mut lines = vec![header];
    if let Some(name) = &args.name {
        let eid = rng.short_id();
        lines.push(entry::entry_line(
            "session_info",
            &eid,
            None,
            &ts,
            &[("name", &entry::jstr(name.trim()))],
        ));
    }
    let path = dir.join(format!("{}_{id}.jsonl", clock::file_stamp(now)));
    let _private = pi_base::fs::PrivateUmask::set(); // 0600 (new folders 0700)
    pi_base::fs::write_with(&path, false, |w| {
        for l in &lines {
            w.write_all(l)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })
    .with_context(|| format!("cannot create {}", path.display()))?;
    drop(claim);
    ctx.out.line(path.to_string_lossy().as_bytes())?;
    Ok(ExitStatus::Success)
}
