//! `pi context build`

use crate::error::ExitStatus;
use std::io::Read;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use super::{open, registry, unknown_model};
use crate::cmd::Ctx;
use crate::cmd::args::{ModelRef, READ_SESSION_HELP, SessionArg};
use crate::error::usage;
use pi_agent::context::llm;
use pi_agent::context::settings::Settings;
use pi_ai::providers::{anthropic::messages as anthropic, openai::messages as openai};
use pi_ai::value::{Obj, Value};
use pi_session::find::STDIN_ARG;

/// What to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BuildFormat {
    /// The agent messages, as stored and as the agent holds them (summaries, custom
    /// messages and shell commands as their own roles)
    Agent,
    /// Provider-neutral messages: user, assistant and tool results only
    Llm,
    /// The `messages` of an OpenAI Chat Completions request
    Openai,
    /// The `messages` of an Anthropic Messages request
    Anthropic,
}

#[derive(Debug, Args)]
#[command(mut_arg("session", |a| a.help(READ_SESSION_HELP)))]
pub struct BuildArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Build the context of the path to this entry (id or unique prefix) instead of the leaf
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Output: agent messages, LLM messages, or a provider's request messages
    #[arg(long, value_enum, default_value_t = BuildFormat::Agent, value_name = "FORMAT")]
    pub format: BuildFormat,
    /// The model the request is for, as PROVIDER/ID (openai and anthropic formats) [default:
    /// the model in effect at the end of the path]
    ///
    /// Its entry in models.json or the built-in table says whether it reads images and
    /// which compatibility rules apply; assistant turns of other models lose their thinking
    /// signatures and get normalized tool-call ids.
    #[arg(long, value_name = "PROVIDER/ID", value_parser = ModelRef::parse)]
    pub model: Option<ModelRef>,
    /// The system prompt to send, read from FILE (`-` for stdin); the openai format starts
    /// with it, the others need --with-settings to carry it
    #[arg(long, value_name = "FILE")]
    pub system_prompt_file: Option<PathBuf>,
    /// Start with a record {"type":"settings","thinkingLevel":…,"model":…} (and the system
    /// prompt, if given)
    #[arg(long)]
    pub with_settings: bool,
}

fn read_prompt(path: &PathBuf) -> anyhow::Result<String> {
    let bytes = if path.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .context("cannot read the system prompt from stdin")?;
        b
    } else {
        std::fs::read(path).map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?
    };
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `PI_CACHE_RETENTION=long` asks for long prompt caching, as in the reference.
fn cache_retention() -> &'static str {
    match std::env::var("PI_CACHE_RETENTION") {
        Ok(v) if v == "long" => "long",
        _ => "short",
    }
}

/// Flags that do not go together.
fn check(args: &BuildArgs, wire: bool) -> anyhow::Result<()> {
    if args.model.is_some() && !wire {
        return Err(usage(
            "--model applies to --format openai and --format anthropic only",
        ));
    }
    if args.system_prompt_file.is_some()
        && args.format != BuildFormat::Openai
        && !args.with_settings
    {
        return Err(crate::error::Exit::new(
            crate::error::ExitStatus::Usage,
            anyhow::anyhow!(
                "the {} format has no system message",
                match args.format {
                    BuildFormat::Agent => "agent",
                    BuildFormat::Llm => "llm",
                    _ => "anthropic",
                }
            ),
        )
        .hint("add --with-settings: the first record then carries the system prompt")
        .into());
    }
    Ok(())
}

/// The model a request form is for: `--model`, else the path's; its rules from the
/// registry, or defaults for a model not in it.
fn request_model(
    args: &BuildArgs,
    ctx: &Ctx,
    info: &pi_agent::context::Info,
) -> pi_ai::models::Model {
    let api = if args.format == BuildFormat::Openai {
        "openai-completions"
    } else {
        "anthropic-messages"
    };
    let chosen = args.model.clone().map(ModelRef::into_pair);
    let (provider, id) = match chosen.or_else(|| info.model_ids()) {
        Some(m) => m,
        None => {
            crate::error::warn(
                "no model on the path (no assistant message or model change); \
                 pass --model PROVIDER/ID to apply its rules",
            );
            (String::new(), String::new())
        }
    };
    let mut m = match registry(ctx).find(&provider, &id) {
        Some(m) => m.clone(),
        None => {
            if !provider.is_empty() {
                crate::error::warn(&format!(
                    "model {provider}/{id} is not in models.json or the built-in table; \
                     assuming it reads images, without reasoning"
                ));
            }
            unknown_model(&provider, &id, api)
        }
    };
    m.api = api.to_owned();
    m
}

pub fn run(args: BuildArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let wire = matches!(args.format, BuildFormat::Openai | BuildFormat::Anthropic);
    check(&args, wire)?;
    let session = args.session.get()?;
    if session == Some(STDIN_ARG)
        && args
            .system_prompt_file
            .as_ref()
            .is_some_and(|f| f.as_os_str() == STDIN_ARG)
    {
        return Err(usage(
            "stdin cannot hold both the session and the system prompt (`-` twice)",
        ));
    }
    let system_prompt = args
        .system_prompt_file
        .as_ref()
        .map(read_prompt)
        .transpose()?;
    let o = open(ctx, session, args.leaf.as_deref())?;
    let info = &o.plan.info;
    let settings = Settings::load(&ctx.dirs.agent_dir, &ctx.cwd);
    if args.format != BuildFormat::Agent {
        for w in &settings.warnings {
            crate::error::warn(w);
        }
    }
    let target = wire.then(|| request_model(&args, ctx, info));
    let retention = cache_retention();
    if args.with_settings {
        let mut rec = Obj::new();
        rec.set("type", Value::str("settings"));
        rec.set_opt("thinkingLevel", info.thinking_level.clone());
        rec.set("model", info.model.clone().unwrap_or(Value::Null));
        if let Some(sp) = &system_prompt {
            rec.set("systemPrompt", Value::str(sp));
            if args.format == BuildFormat::Anthropic
                && let Some(t) = &target
                && !sp.is_empty()
            {
                rec.set("system", Value::Arr(anthropic::system(sp, t, retention)));
            }
        }
        ctx.out.line(&Value::Obj(rec).to_json())?;
    }
    let block = settings.block_images;
    let mut buf = Vec::new();
    let Some(target) = target else {
        // agent and llm: one message at a time.
        let out = &mut ctx.out;
        o.each(|m| {
            let v = if args.format == BuildFormat::Agent {
                Some(m.value)
            } else {
                llm::convert_one(m.value).map(|v| llm::block_images(v, block))
            };
            if let Some(v) = v {
                buf.clear();
                v.write(&mut buf);
                out.line(&buf)?;
            }
            Ok(())
        })?;
        return Ok(ExitStatus::Success);
    };
    // The request forms look across messages (tool calls and their results).
    let mut msgs: Vec<Value> = Vec::new();
    o.each(|m| {
        if let Some(v) = llm::convert_one(m.value) {
            msgs.push(llm::block_images(v, block));
        }
        Ok(())
    })?;
    let out = if args.format == BuildFormat::Openai {
        openai::messages(&msgs, &target, system_prompt.as_deref(), retention)
    } else {
        anthropic::messages(&msgs, &target, retention)
    };
    for m in &out {
        buf.clear();
        m.write(&mut buf);
        ctx.out.line(&buf)?;
    }
    Ok(ExitStatus::Success)
}
