//! `pi session fork`

use crate::error::ExitStatus;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::SessionArg;
use crate::session::id::{Id, IdSet};
use crate::session::{Kind, append, entry};
use crate::{clock, json, rng};

#[derive(Debug, Args)]
pub struct ForkArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// The last entry to copy (id or unique prefix) [default: the leaf]
    ///
    /// Given alone, the value is SESSION; with --session, it is ENTRY.
    #[arg(value_name = "ENTRY")]
    pub entry: Option<String>,
    /// Same as ENTRY (as --leaf of the commands that read a session), for the most recent
    /// session without naming it
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Make the copy a session of DIR (stored with DIR's sessions) [default: the same
    /// directory and folder as the original]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

pub fn run(args: ForkArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let (session, [entry]) = args.session.split([args.entry], 0)?;
    let entry = match (entry, args.leaf) {
        (Some(_), Some(_)) => {
            return Err(crate::error::usage(
                "the entry is given twice: as ENTRY and with --leaf",
            ));
        }
        (e, l) => e.or(l),
    };
    let src = ctx.session_path(session.as_deref())?;
    let s = ctx.open(&src)?;
    let end = match &entry {
        Some(e) => Some(s.resolve_entry(e)?),
        None => s.leaf(),
    };
    let path: Vec<u32> = end
        .map(|e| s.path_to(e))
        .unwrap_or_default()
        .into_iter()
        .filter(|&i| s.entries[i as usize].kind != Kind::Label)
        .collect();
    let (cwd, dir) = match &args.cwd {
        Some(d) => {
            let cwd = ctx.cwd_arg(Some(d))?;
            let dir = ctx.dirs.session_dir_for(&cwd);
            (cwd, dir)
        }
        None => (
            s.header.as_ref().map(|h| h.cwd.clone()).unwrap_or_default(),
            src.parent().map(PathBuf::from).unwrap_or_default(),
        ),
    };
    // Labels of entries on the copied path, recreated after it (with their timestamps).
    let mut on_path = IdSet::default();
    for &i in &path {
        on_path.insert(s.entries[i as usize].id.clone());
    }
    let now = clock::now_ms();
    let mut rng = rng::Rng::new(|| now as u64 ^ s.entries.len() as u64);
    let mut prev = path.last().map(|&i| s.entries[i as usize].id.to_string());
    let mut label_lines = Vec::new();
    for (target, label, ts) in s.resolved_labels() {
        if !on_path.contains(&target) {
            continue;
        }
        let mut id = rng.short_id();
        for _ in 0..100 {
            if !on_path.contains(&Id::new(&id)) {
                break;
            }
            id = rng.short_id();
        }
        on_path.insert(Id::new(&id));
        label_lines.push(entry::entry_line(
            "label",
            &id,
            prev.as_deref(),
            &ts,
            &[
                ("targetId", &entry::jstr(target.as_str())),
                ("label", &entry::jstr(&label)),
            ],
        ));
        prev = Some(id);
    }
    let sid = rng.uuid_v7(now);
    let mut header = b"{\"type\":\"session\",\"version\":3,\"id\":".to_vec();
    json::write_str(&mut header, &sid);
    header.extend_from_slice(b",\"timestamp\":");
    json::write_str(&mut header, &clock::format_iso(now));
    header.extend_from_slice(b",\"cwd\":");
    json::write_str(&mut header, &cwd);
    header.extend_from_slice(b",\"parentSession\":");
    json::write_str(&mut header, &src.to_string_lossy());
    header.push(b'}');
    let out_path = dir.join(format!("{}_{sid}.jsonl", clock::file_stamp(now)));
    let _private = crate::private::PrivateUmask::set(); // 0600 (new folders 0700)
    append::write_new_file(&out_path, false, |w| {
        w.write_all(&header)?;
        w.write_all(b"\n")?;
        s.copy_lines(&path, w)?;
        for l in &label_lines {
            w.write_all(l)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })
    .with_context(|| format!("cannot write {}", out_path.display()))?;
    ctx.out.line(out_path.to_string_lossy().as_bytes())?;
    Ok(ExitStatus::Success)
}
