//! `pi session append`

use std::collections::HashMap;
use std::io::{IsTerminal, Read};

use anyhow::Context;
use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::SessionArg;
use crate::error::{Exit, ExitStatus, usage};
use pi_base::clock;
use pi_session::append::{Appender, NewEntry, Parent};
use pi_session::entry;

#[derive(Debug, Args)]
pub struct AppendArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Attach the first new entry to this entry (id or unique prefix) instead of the leaf
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    /// Validate and print the entries that would be written, without writing them
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(args: AppendArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let path = ctx.session_path(args.session.get()?)?;
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        crate::error::note(
            "reading entries from the terminal (one JSON object per line; end with Ctrl-D)",
        );
    }
    let mut input = Vec::new();
    stdin
        .lock()
        .read_to_end(&mut input)
        .context("cannot read stdin")?;
    // Validate everything before touching the file.
    let mut records = entry::parse_input(&input, "stdin", clock::now_ms())?;
    // The records own their fields: a large batch is held once, not twice.
    drop(input);
    if records.is_empty() {
        return Ok(ExitStatus::Success);
    }
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let first_parent =
        match &args.parent {
            Some(p) => Parent::Id(ap.resolve_entry(p).map_err(|e| {
                Exit::new(ExitStatus::Usage, anyhow::anyhow!("unknown --parent: {e}"))
            })?),
            None => Parent::Leaf,
        };
    let ids = ap.assign_ids(records.len())?;
    let mut new_ids = HashMap::new();
    for (r, id) in records.iter().zip(&ids) {
        if let Some(old) = &r.input_id {
            new_ids.insert(old.clone(), id.clone());
        }
    }
    for (n, field, id) in entry::remap_references(&mut records, &new_ids) {
        if !ap
            .contains(&id)
            .with_context(|| format!("cannot read {}", path.display()))?
        {
            let r = &records[n];
            return Err(usage(format!(
                "stdin:{}:{}: {field} refers to entry '{id}', which is neither in the session nor in the input",
                r.line, r.column
            )));
        }
    }
    let entries: Vec<NewEntry> = records
        .into_iter()
        .enumerate()
        .map(|(n, r)| NewEntry {
            ty: r.ty,
            parent: if n == 0 {
                first_parent.clone()
            } else {
                Parent::Leaf
            },
            fields: r.fields,
        })
        .collect();
    let lines = ap.build_lines(&entries, &ids);
    drop(entries);
    if !args.dry_run {
        ap.write(&lines)?;
    }
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(ExitStatus::Success)
}
