//! `pi session edit`

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::SessionArg;
use crate::error::{ExitStatus, usage};
use pi_base::json;
use pi_session::append::{Appender, NewEntry, Parent};
use pi_session::entry::jstr;
use pi_session::{Kind, Session};

#[derive(Debug, Args)]
#[command(
    override_usage = "pi session edit [OPTIONS] [SESSION] <ENTRY> --omit\n       \
    pi session edit [OPTIONS] [SESSION] <ENTRY> --replace <TEXT>\n       \
    pi session edit [OPTIONS] [SESSION] <ENTRY> --replace-file <FILE>"
)]
pub struct EditArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// The entry to edit (id or unique prefix): a user, assistant or tool-result message, or a
    /// custom message, on the active path
    #[arg(value_name = "ENTRY")]
    pub entry: Option<String>,
    /// Leave the entry out of the model's context
    #[arg(long, conflicts_with_all = ["replace", "replace_file"])]
    pub omit: bool,
    /// Send TEXT to the model in place of the entry's content
    #[arg(long, value_name = "TEXT", conflicts_with = "replace_file")]
    pub replace: Option<String>,
    /// Send the text of FILE (`-`: stdin) in place of the entry's content
    #[arg(long, value_name = "FILE")]
    pub replace_file: Option<PathBuf>,
}

/// Whether an entry carries content a `context_edit` may change, as the reference 1.6 decides:
/// custom messages, and user, assistant and tool-result messages. Returns the role.
fn editable(s: &Session, i: u32) -> anyhow::Result<Result<String, String>> {
    match s.entries[i as usize].kind {
        Kind::CustomMessage => Ok(Ok("custom".into())),
        Kind::Message => {
            let line = s.line(i)?;
            let role = json::get(&line, "message")
                .and_then(|m| json::get_str(m, "role"))
                .map(|r| r.into_owned())
                .unwrap_or_default();
            if matches!(role.as_str(), "user" | "assistant" | "toolResult") {
                Ok(Ok(role))
            } else {
                Ok(Err(format!("a {role:?} message")))
            }
        }
        k => Ok(Err(format!("a {} entry", k.as_str()))),
    }
}

pub fn run(args: EditArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let (session, [entry]) = args.session.split([args.entry], 1)?;
    let Some(entry) = entry else {
        return Err(usage("the entry to edit is missing"));
    };
    let text = match (&args.replace, &args.replace_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(f)) if f.as_os_str() == "-" => {
            let mut t = String::new();
            std::io::stdin()
                .read_to_string(&mut t)
                .context("cannot read the replacement from stdin")?;
            Some(t)
        }
        (None, Some(f)) => Some(
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?,
        ),
        (None, None) => None,
    };
    if text.is_none() && !args.omit {
        return Err(usage(
            "say what to do with the entry: --omit, --replace TEXT or --replace-file FILE",
        ));
    }
    let path = ctx.session_path(session.as_deref())?;
    // The writer's lock first, so that the leaf checked below is the one appended to.
    let mut ap = Appender::open(&path, Some(&ctx.dirs.agent_dir))?;
    let s = Session::open(&path)?;
    let target = s.resolve_entry(&entry)?;
    let id = s.entries[target as usize].id.as_str().to_owned();
    let on_path = s.leaf().is_some_and(|l| s.path_to(l).contains(&target));
    if !on_path {
        return Err(usage(format!(
            "entry {id} is not on the active path; an edit applies only to the branch it is made on"
        )));
    }
    let role = match editable(&s, target)? {
        Ok(r) => r,
        Err(what) => {
            return Err(usage(format!(
                "entry {id} is {what}; only user, assistant, tool-result and custom messages can be edited"
            )));
        }
    };
    drop(s);
    let replacement = match text {
        None => b"null".to_vec(),
        Some(t) => {
            // Assistant and tool-result content must be blocks; the others take text as is.
            let mut content = Vec::new();
            if role == "assistant" || role == "toolResult" {
                content.extend_from_slice(br#"[{"type":"text","text":"#);
                json::write_str(&mut content, &t);
                content.extend_from_slice(b"}]");
            } else {
                json::write_str(&mut content, &t);
            }
            let mut r = br#"{"content":"#.to_vec();
            r.extend_from_slice(&content);
            r.push(b'}');
            r
        }
    };
    let e = NewEntry::new("context_edit", Parent::Leaf)
        .field("targetId", jstr(&id))
        .field("replacement", replacement);
    let lines = ap.append(&[e])?;
    drop(ap);
    for l in &lines {
        ctx.out.line(l)?;
    }
    Ok(ExitStatus::Success)
}
