//! `pi context …`

pub mod build;
pub mod stats;

use crate::error::ExitStatus;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Ctx;
use crate::cmd::EXIT_STATUS;
use pi_agent::context::{Message, Plan};
use pi_ai::models::{Model, Registry, Source};
use pi_session::Session;
use pi_session::scan::NoVisit;

#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub struct ContextArgs {
    #[command(subcommand)]
    pub command: ContextCommand,
}

/// The context of a session is what the agent sends the model on its next request: the
/// messages on the path from the root to the leaf, after the latest compaction's summary and
/// kept messages. SESSION is a path, a session id or a unique prefix of one, `-` to read the
/// session from stdin, or, when omitted, the most recently modified session of the current
/// directory.
#[derive(Debug, Subcommand)]
pub enum ContextCommand {
    /// Print the messages a model sees, as agent messages, LLM messages or a provider's
    /// request messages (JSONL)
    #[command(after_long_help = EXIT_STATUS)]
    Build(build::BuildArgs),
    /// Measure the context: messages, estimated and reported tokens, and whether the agent
    /// would compact it
    #[command(after_long_help = EXIT_STATUS)]
    Stats(stats::StatsArgs),
}

pub fn run(args: ContextArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    match args.command {
        ContextCommand::Build(a) => build::run(a, ctx),
        ContextCommand::Stats(a) => stats::run(a, ctx),
    }
}

/// A session opened at a leaf, with its context planned.
pub struct Opened {
    pub session: Session,
    pub path: PathBuf,
    /// The entry the context's path ends at.
    pub leaf: Option<u32>,
    pub plan: Plan,
}

/// Opens the session (`-`: from stdin) and plans the context of the path to `--leaf` (or
/// the leaf).
pub fn open(ctx: &Ctx, session: Option<&str>, leaf: Option<&str>) -> anyhow::Result<Opened> {
    let source = ctx.session_source(session)?;
    let (s, _) = ctx.open_source(source, NoVisit)?;
    let path = s.path.clone();
    let leaf = match leaf {
        Some(l) => Some(s.resolve_entry(l)?),
        None => s.leaf(),
    };
    let plan = Plan::new(&s, leaf).map_err(|e| read_error(e, &path))?;
    Ok(Opened {
        session: s,
        path,
        leaf,
        plan,
    })
}

fn read_error(e: std::io::Error, path: &std::path::Path) -> anyhow::Error {
    anyhow::Error::new(e).context(format!("cannot read {}", path.display()))
}

impl Opened {
    /// Hands the context's messages to `emit` one at a time. An error of `emit` (writing the
    /// output) is returned as it is; reading errors name the file.
    pub fn each(&self, mut emit: impl FnMut(Message) -> std::io::Result<()>) -> anyhow::Result<()> {
        let mut failed: Option<std::io::Error> = None;
        let res = self.plan.each(&self.session, |m| {
            emit(m).map_err(|e| {
                failed = Some(e);
                std::io::Error::other("output failed")
            })
        });
        if let Some(e) = failed {
            return Err(e.into());
        }
        let warnings = res.map_err(|e| read_error(e, &self.path))?;
        for w in &warnings {
            crate::error::warn(&format!("{}: {w}", self.path.display()));
        }
        Ok(())
    }

    /// The entry id of entry `i`.
    pub fn id(&self, i: u32) -> String {
        self.session.entries[i as usize].id.to_string()
    }
}

/// The models known here: built-in and `models.json` (whose problems are warnings).
pub fn registry(ctx: &Ctx) -> Registry {
    let r = Registry::load(&ctx.dirs.agent_dir);
    for w in &r.warnings {
        crate::error::warn(w);
    }
    r
}

/// A model that is not in the registry: text and image input, no reasoning, default flags.
pub fn unknown_model(provider: &str, id: &str, api: &str) -> Model {
    Model {
        provider: provider.to_owned(),
        id: id.to_owned(),
        api: api.to_owned(),
        base_url: String::new(),
        reasoning: false,
        input: vec!["text".into(), "image".into()],
        context_window: 0,
        max_tokens: 0,
        compat: serde_json::Map::new(),
        source: Source::Custom,
    }
}
