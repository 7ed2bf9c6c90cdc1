//! `pi run`: the agent loop on a session, from the shell. The arguments are resolved into
//! [`RunSettings`] (settings files, the session, tools, hooks, the model and its key, the
//! system prompt: everything that can fail before anything is written), then launched.

use std::cell::RefCell;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use crate::cmd::Ctx;
use crate::cmd::args::{ModelArgs, SessionArg, SystemPromptArgs, positive_u32};
use crate::error::{Exit, ExitStatus};
use crate::render::run::{Human, JsonLines, Tally, Totals};
use crate::rpc::{self, Mirror, RpcObserver, Server};
use pi_agent::agent::setup::{self, PromptError};
use pi_agent::agent::store::{self, FileStore};
use pi_agent::agent::{
    AgentSession, Config, Credentials, Message, Observer, Outcome, ToolExecution,
};
use pi_agent::extensions::config::HookSet;
use pi_agent::extensions::hooks::{ProgramHooks, Runner};
use pi_agent::runtime::{Signalled, watch_signals};
use pi_ai::config::{self, Settings as LlmSettings};
use pi_ai::models::Registry;
use pi_ai::value::Value;
use pi_ai::{Client, Options, Target, ToolChoice};
use pi_prompt::resources::{self, Resources};
use pi_session::{Kind, Session};
use pi_tools::project::Project;
use pi_tools::{CancelToken, Tool, ToolContext, ToolName};

pub const EXIT_STATUS: &str = "\
Exit status:
  0  the run ended normally (also after --max-turns)
  1  the model or the run failed (the error is also in the event stream)
  2  usage error or invalid input (nothing was written)
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM); 129 hung up (SIGHUP)";

/// Thinking levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Thinking {
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl Thinking {
    fn as_str(self) -> &'static str {
        match self {
            Thinking::Off => "off",
            Thinking::Minimal => "minimal",
            Thinking::Low => "low",
            Thinking::Medium => "medium",
            Thinking::High => "high",
            Thinking::Xhigh => "xhigh",
            Thinking::Max => "max",
        }
    }
}

#[derive(Debug, Args)]
#[command(mut_arg("session", |a| a.help(
    "The session to continue: a path, a session id or a unique prefix of one [default: a new \
     session of the current directory]"
)))]
#[command(group(
    clap::ArgGroup::new("existing")
        .args(["session", "session_opt", "continue_recent"])
        .multiple(true)
))]
pub struct RunArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Continue the current session of the directory: PI_SESSION, the pin of `pi session
    /// use`, else the most recent (a new one when it has none)
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["session", "session_opt"])]
    pub continue_recent: bool,
    /// The prompt; `/template args` and `/skill:name args` are expanded [default: read from
    /// stdin]
    ///
    /// Without a prompt (empty stdin), a session whose path ends in a user message or tool
    /// results (an interrupted run, --max-turns) is continued from there.
    #[arg(short = 'p', long, value_name = "PROMPT", allow_hyphen_values = true)]
    pub prompt: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Thinking level [default: the session's, else defaultThinkingLevel, else medium];
    /// lowered or raised to the nearest level the model supports
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub thinking: Option<Thinking>,
    /// Active tools, comma-separated, in this order [default: defaultTools of settings.json,
    /// else read,bash,edit,write; then every program tool]
    ///
    /// Built-in tools: read, bash, edit, write, grep, find, ls; program tools go by the name
    /// they describe. Unknown names are ignored with a warning. A list of only +NAME and
    /// -NAME entries adds tools to or removes them from the default selection instead
    /// (`--tools +grep,-bash`); names and +/- entries cannot be mixed.
    #[arg(
        long,
        value_name = "LIST",
        conflicts_with = "no_tools",
        allow_hyphen_values = true
    )]
    pub tools: Option<String>,
    /// No tools at all (program tools included)
    #[arg(long)]
    pub no_tools: bool,
    /// No built-in tools; program tools stay active
    #[arg(long, conflicts_with = "no_tools")]
    pub no_builtin_tools: bool,
    /// A program tool: an executable that prints its description when run with --describe
    /// and takes a call's arguments as JSON on stdin (repeatable)
    ///
    /// Program tools are also found in <agent dir>/tools/ and .pi/tools/ of the session's
    /// directory, when it is a trusted project (`pi trust`). See `man pi-extensions`.
    #[arg(long = "tool", value_name = "PATH")]
    pub tool: Vec<PathBuf>,
    /// Run COMMAND (a shell command line) at EVENT, after the hooks of settings.json
    /// (repeatable)
    ///
    /// Events: input, before_agent_start, context, tool_call, tool_result, message_end,
    /// turn_end, agent_end, session_before_compact; with --rpc also session_before_switch
    /// and session_before_fork. The event is a JSON object on the
    /// command's stdin; what it prints (a JSON object, or nothing) is its answer. See
    /// `man pi-extensions`.
    #[arg(long = "hook", value_name = "EVENT=COMMAND")]
    pub hook: Vec<String>,
    /// Continue from this entry (id or unique prefix) instead of the leaf; the first new
    /// entry becomes its child
    #[arg(long, value_name = "ID", requires = "existing")]
    pub leaf: Option<String>,
    /// Record nothing: no session file is created or written (a SESSION given is only read)
    #[arg(long)]
    pub no_session: bool,
    /// Stop after N answers of the model (the tools of the last one still run)
    #[arg(long, value_name = "N", value_parser = positive_u32)]
    pub max_turns: Option<u32>,
    #[command(flatten)]
    pub system_prompt: SystemPromptArgs,
    /// Which tool the model must call: auto, none, required (some tool), or a tool's name
    /// [default: the provider's, auto]
    ///
    /// Applies to every request of the run; with `required`, combine it with --max-turns.
    /// Small local models often call tools only when forced.
    #[arg(long, value_name = "CHOICE")]
    pub tool_choice: Option<String>,
    /// Print the event stream as JSON lines (the reference's JSON mode) instead of the
    /// assistant's text
    #[arg(long)]
    pub json: bool,
    /// Take commands as JSON lines on stdin and answer on stdout (the reference's RPC
    /// mode): prompt, steer, follow_up, abort, compact, get_state, get_messages, …
    ///
    /// The events of every run are written as with --json. End of input finishes the
    /// running prompt, then exits 0. See `man pi-run-rpc`.
    #[arg(long, conflicts_with_all = ["prompt", "json", "max_turns"])]
    pub rpc: bool,
}

/// The prompt: `-p`, else stdin (trimmed); `None` when empty.
fn read_prompt(args: &RunArgs) -> anyhow::Result<Option<String>> {
    if let Some(p) = &args.prompt {
        return Ok(Some(p.clone()).filter(|p| !p.trim().is_empty()));
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        crate::error::note("reading the prompt from the terminal (end with Ctrl-D)");
    }
    let mut buf = Vec::new();
    stdin
        .lock()
        .read_to_end(&mut buf)
        .context("cannot read the prompt from stdin")?;
    let text = String::from_utf8_lossy(&buf);
    let text = pi_base::js::trim(&text);
    Ok((!text.is_empty()).then(|| text.to_owned()))
}

fn tool_choice(arg: &str, tools: &[Tool]) -> anyhow::Result<ToolChoice> {
    Ok(match arg {
        "auto" => ToolChoice::Auto,
        "none" => ToolChoice::None,
        "required" | "any" if tools.is_empty() => {
            return Err(crate::error::usage(
                "--tool-choice required needs active tools",
            ));
        }
        "required" | "any" => ToolChoice::Required,
        name if tools.iter().any(|t| t.name() == name) => ToolChoice::Tool(name.to_owned()),
        name => {
            return Err(Exit::new(
                ExitStatus::Usage,
                anyhow::anyhow!("invalid --tool-choice '{name}'"),
            )
            .hint("use auto, none, required, or the name of an active tool")
            .into());
        }
    })
}

/// `defaultTools` of the merged settings of `cwd`: the string entries of a list (anything
/// else is ignored; the settings check at the start of every command warns of it).
pub(crate) fn default_tools(
    agent_dir: &std::path::Path,
    cwd: &std::path::Path,
) -> Option<Vec<String>> {
    let (m, _) = pi_base::config::settings(agent_dir, cwd);
    let a = m.get("defaultTools")?.as_array()?;
    Some(
        a.iter()
            .filter_map(|e| e.as_str().map(str::to_owned))
            .collect(),
    )
}

fn select_tools(
    args: &RunArgs,
    default_tools: Option<&[String]>,
    programs: &[Arc<dyn pi_tools::CustomTool>],
) -> anyhow::Result<Vec<Tool>> {
    let sel = pi_tools::Selection {
        list: args.tools.as_deref(),
        no_tools: args.no_tools,
        no_builtin_tools: args.no_builtin_tools,
        default_tools,
    };
    let entries = sel.entries();
    if let Some(e) = pi_tools::tool_list_error(&entries) {
        return Err(crate::error::usage(format!("--tools: {e}")));
    }
    let known_name = |n: &str| {
        ToolName::from_name(n).is_some() || programs.iter().any(|p| p.definition().name == n)
    };
    let named = entries.iter().map(|e| (*e, "--tools")).chain(
        default_tools
            .unwrap_or_default()
            .iter()
            .map(|e| (e.as_str(), "settings.json: defaultTools")),
    );
    for (entry, from) in named {
        let name = entry.strip_prefix('+').unwrap_or(entry);
        if name.starts_with('-') || name.is_empty() || known_name(name) {
            continue;
        }
        let mut known: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
        known.extend(programs.iter().map(|p| p.definition().name.as_str()));
        let prefix = if from == "--tools" {
            String::new()
        } else {
            format!("{from}: ")
        };
        crate::error::warn(&format!(
            "{prefix}unknown tool '{name}' ignored (tools: {})",
            known.join(", ")
        ));
    }
    Ok(pi_tools::select_active(sel, programs))
}

/// Everything a run starts from, resolved before anything is written.
struct RunSettings {
    /// The session continued (none: a new one, or none with --no-session).
    existing: Option<PathBuf>,
    /// The directory the run works in (the session's, 0.73).
    cwd: PathBuf,
    registry: Registry,
    llm: LlmSettings,
    agent: pi_agent::agent::settings::Settings,
    resources: Arc<Resources>,
    hooks: HookSet,
    /// What the run may use of the project's extensions (trust, environment policy).
    project: Project,
    tools: Vec<Tool>,
    tool_choice: Option<ToolChoice>,
    prompt: Option<String>,
    /// The session continued, locked (unless --no-session) and read.
    file: Option<FileStore>,
    opened: Option<Opened>,
    messages: Vec<Message>,
    last_compaction: Option<i64>,
    target: Target,
    /// The thinking level recorded on the path, and the one of the run.
    recorded_level: Option<String>,
    level: &'static str,
    system_prompt: pi_prompt::system::Assembled,
}

impl RunSettings {
    fn resolve(args: &RunArgs, ctx: &Ctx) -> anyhow::Result<RunSettings> {
        let custom_prompt = args.system_prompt.custom(&ctx.cwd)?;
        pi_agent::extensions::config::check_flags(&args.hook).map_err(crate::error::usage)?;
        let existing = existing_session(args, ctx)?;
        let cwd = work_dir(existing.as_deref(), ctx)?;
        let agent_dir = &ctx.dirs.agent_dir;
        let registry = Registry::load(agent_dir);
        let llm = LlmSettings::load(agent_dir, &cwd);
        let (agent, mut warnings) = pi_agent::agent::settings::Settings::load(agent_dir, &cwd);
        warnings.extend(registry.warnings.iter().cloned());
        let resources = resources::load(&resources::Options {
            cwd: cwd.clone(),
            agent_dir: agent_dir.clone(),
            home: pi_base::config::expand_tilde("~"),
            prompt_paths: Vec::new(),
            skill_paths: Vec::new(),
            no_prompts: false,
            no_skills: false,
        });
        warnings.extend(resources.warnings.iter().cloned());
        let (hooks, project, programs, mut tools) = extensions(args, ctx, &cwd, warnings)?;
        let prompt = if args.rpc { None } else { read_prompt(args)? };
        if let Some(p) = &prompt {
            check_prompt(p, &resources)?;
        }
        // Lock an existing session before reading it, so nothing changes under the run.
        let file = match (&existing, args.no_session) {
            (Some(p), false) => Some(FileStore::open(p, agent_dir, LOCK_WAIT)?),
            _ => None,
        };
        let opened = existing
            .as_deref()
            .map(|p| Opened::open(p, args.leaf.as_deref()))
            .transpose()?;
        let (messages, info, last_compaction) = match &opened {
            Some(o) => o.context()?,
            None => (Vec::new(), None, None),
        };
        let branch_system = match &opened {
            Some(o) => pi_agent::context::branch_system_messages(&o.session, o.leaf)
                .with_context(|| format!("cannot read {}", o.session.path.display()))?,
            None => Vec::new(),
        };
        // A session that records its tool loadout (the reference 1.6's system messages)
        // continues with it, unless the tools are named on the command line.
        let modifiers: Vec<&str> = args
            .tools
            .as_deref()
            .map(|l| {
                l.split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let only_modifiers = modifiers
            .iter()
            .all(|m| m.starts_with('+') || m.starts_with('-'));
        if only_modifiers
            && !args.no_tools
            && !args.no_builtin_tools
            && let Some(restored) = restored_tools(&branch_system, &programs, &modifiers)
        {
            tools = restored;
        }
        let tool_choice = args
            .tool_choice
            .as_deref()
            .map(|c| tool_choice(c, &tools))
            .transpose()?;
        if prompt.is_none() && !args.rpc && messages.last().is_none_or(store::is_assistant) {
            return Err(Exit::new(ExitStatus::Usage, anyhow::anyhow!("no prompt"))
                .hint("pass -p PROMPT or pipe the prompt to stdin")
                .into());
        }
        // The model (with a key), the thinking level, the system prompt.
        let session_model = info.as_ref().and_then(|i| i.model_ids());
        let flag = args.model.pair();
        let (target, _) = config::resolve(
            &registry,
            agent_dir,
            &llm,
            flag.as_ref(),
            session_model.as_ref(),
        )?;
        warn_unfitted_reserve(&agent, &target);
        let recorded_level = opened
            .as_ref()
            .filter(|o| o.has_thinking_entry())
            .and_then(|_| recorded_thinking(info.as_ref()));
        let level = setup::thinking_level(
            args.thinking.map(Thinking::as_str),
            recorded_level.as_deref(),
            llm.default_thinking_level.as_deref(),
            &target.model,
            &target.details,
        );
        let system_prompt = system_prompt(args, ctx, &cwd, custom_prompt, &tools, &resources);
        Ok(RunSettings {
            existing,
            cwd,
            registry,
            llm,
            agent,
            resources: Arc::new(resources),
            hooks,
            project,
            tools,
            tool_choice,
            prompt,
            file,
            opened,
            messages,
            last_compaction,
            target,
            recorded_level,
            level,
            system_prompt,
        })
    }
}

/// pi's rule for a reserve that does not fit the model's window: the agent applies it
/// whenever it judges the context; it is said once, here.
fn warn_unfitted_reserve(agent: &pi_agent::agent::settings::Settings, target: &Target) {
    let fitted = agent
        .reserves_for(&target.model.provider, &target.model.id)
        .fit(target.model.context_window);
    let model_name = format!("{}/{}", target.model.provider, target.model.id);
    if let Some(w) = fitted.warning("reserveTokens", Some(&model_name)) {
        crate::error::warn(&crate::output::escape(&w));
    }
}

/// The system prompt of the run, its warnings printed.
fn system_prompt(
    args: &RunArgs,
    ctx: &Ctx,
    cwd: &std::path::Path,
    custom: Option<String>,
    tools: &[Tool],
    resources: &resources::Resources,
) -> pi_prompt::system::Assembled {
    let prompt_tools: Vec<_> = tools.iter().map(Tool::prompt).collect();
    let dirs = (cwd, ctx.dirs.agent_dir.as_path(), ctx.cwd.as_path());
    args.system_prompt
        .assemble(custom, dirs, &prompt_tools, &resources.skills)
}

/// Program tools and hooks (the project's only when it is trusted), and the tools of the
/// run: warnings met so far are printed with those of the extensions.
fn extensions(
    args: &RunArgs,
    ctx: &Ctx,
    cwd: &std::path::Path,
    mut warnings: Vec<String>,
) -> anyhow::Result<(HookSet, Project, Programs, Vec<Tool>)> {
    let agent_dir = &ctx.dirs.agent_dir;
    let project = Project::load(agent_dir, cwd);
    warnings.extend(project.warnings.iter().cloned());
    warnings.extend(project.refused.clone());
    let programs =
        pi_tools::program::discover(agent_dir, &project, &ctx.cwd, &args.tool, &mut warnings)
            .map_err(crate::error::usage)?;
    let (hooks, hook_warnings) =
        pi_agent::extensions::config::load(agent_dir, &project, &args.hook);
    warnings.extend(hook_warnings);
    for w in &warnings {
        crate::error::warn(w);
    }
    let default_tools = default_tools(agent_dir, cwd);
    let tools = select_tools(args, default_tools.as_deref(), &programs)?;
    Ok((hooks, project, programs, tools))
}

/// The program tools found for a run.
type Programs = Vec<Arc<dyn pi_tools::CustomTool>>;

/// The tools a session declares (the reference 1.6's `_restoreToolsFromTranscript`): those
/// its system messages on the branch (before and after compactions) leave added, in their
/// order, that pi has, and program tools the system messages never mention (added since).
/// `None` without system messages: the run's own selection stands.
fn restored_tools(
    system: &[Message],
    programs: &[Arc<dyn pi_tools::CustomTool>],
    modifiers: &[&str],
) -> Option<Vec<Tool>> {
    if system.is_empty() {
        return None;
    }
    let name = |t: &Message| {
        t.get("name")
            .and_then(|n| n.as_jstr())
            .map(|n| n.text().into_owned())
    };
    let mentioned: Vec<String> = system
        .iter()
        .flat_map(|m| {
            ["toolsAdded", "toolsRemoved"]
                .into_iter()
                .filter_map(|k| m.get(k).and_then(|v| v.as_arr()))
                .flatten()
        })
        .filter_map(name)
        .collect();
    let current = pi_agent::context::current_system(system.iter());
    let mut names: Vec<String> = current
        .as_ref()
        .and_then(|c| c.get("toolsAdded"))
        .and_then(|v| v.as_arr())
        .unwrap_or_default()
        .iter()
        .filter_map(name)
        .collect();
    names.extend(
        programs
            .iter()
            .map(|p| p.definition().name.clone())
            .filter(|n| !mentioned.contains(n)),
    );
    // `--tools +name,-name` adjusts the restored loadout, as 1.6 applies them to it.
    for m in modifiers {
        if let Some(n) = m.strip_prefix('+') {
            if !names.iter().any(|x| x == n) {
                names.push(n.to_owned());
            }
        } else if let Some(n) = m.strip_prefix('-') {
            names.retain(|x| x != n);
        }
    }
    let list = names.join(",");
    let sel = pi_tools::Selection {
        list: Some(&list),
        no_tools: false,
        no_builtin_tools: false,
        default_tools: None,
    };
    Some(pi_tools::select_active(sel, programs))
}

/// How long a run waits for another writer's short append before calling the session busy.
const LOCK_WAIT: Duration = Duration::from_secs(3);

/// The directory a run works in: the session's (which must exist), else the current one.
fn work_dir(existing: Option<&std::path::Path>, ctx: &Ctx) -> anyhow::Result<PathBuf> {
    let Some(p) = existing else {
        return Ok(ctx.cwd.clone());
    };
    let h = pi_session::find::read_header(p)
        .ok_or_else(|| crate::error::usage(format!("{} is not a session file", p.display())))?;
    let cwd = PathBuf::from(h.cwd);
    if !cwd.is_dir() {
        return Err(Exit::new(
            ExitStatus::Failure,
            anyhow::anyhow!(
                "the session's working directory {} does not exist (session {}; current directory {})",
                pi_base::text::escape(&cwd.to_string_lossy()),
                pi_base::text::escape(&p.to_string_lossy()),
                pi_base::text::escape(&ctx.cwd.to_string_lossy())
            ),
        )
        .hint("recreate the directory, or fork the session into this one with `pi session fork`")
        .into());
    }
    Ok(cwd)
}

/// Expands the prompt once now, so that a bad one writes nothing.
fn check_prompt(prompt: &str, resources: &Resources) -> anyhow::Result<()> {
    match setup::expand_prompt(prompt, resources) {
        Ok((_, warning)) => {
            if let Some(w) = warning {
                crate::error::warn(&w);
            }
            Ok(())
        }
        Err(PromptError::UnknownSkill { name, known }) => {
            let hint = if known.is_empty() {
                "no skills were found; `pi prompt list` shows where pi looks".to_owned()
            } else {
                format!("known skills: {}", known.join(", "))
            };
            Err(
                Exit::new(ExitStatus::Usage, anyhow::anyhow!("unknown skill '{name}'"))
                    .hint(hint)
                    .into(),
            )
        }
        Err(e) => Err(Exit::new(ExitStatus::Failure, e).into()),
    }
}

pub fn run(args: RunArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let started = pi_base::clock::Stopwatch::start();
    let settings = RunSettings::resolve(&args, ctx)?;
    launch(settings, &args, ctx, started, None)
}

/// `pi chat`: the run's settings resolved as `pi run --rpc` resolves them (the prompt comes
/// from the chat), then the chat's front end drives the RPC server in process.
pub(crate) fn chat(
    mut args: RunArgs,
    ctx: &mut Ctx,
    opts: crate::chat::Options,
) -> anyhow::Result<ExitStatus> {
    let started = pi_base::clock::Stopwatch::start();
    if let Some(p) = args.prompt.take() {
        return chat_with_prompt(args, ctx, opts, p, started);
    }
    args.rpc = true;
    let settings = RunSettings::resolve(&args, ctx)?;
    launch(settings, &args, ctx, started, Some(opts))
}

fn chat_with_prompt(
    mut args: RunArgs,
    ctx: &mut Ctx,
    mut opts: crate::chat::Options,
    prompt: String,
    started: pi_base::clock::Stopwatch,
) -> anyhow::Result<ExitStatus> {
    args.rpc = true;
    let settings = RunSettings::resolve(&args, ctx)?;
    if !prompt.trim().is_empty() {
        check_prompt(&prompt, &settings.resources)?;
        opts.first = Some(prompt);
    }
    launch(settings, &args, ctx, started, Some(opts))
}

/// Creates the session if needed, records the model and thinking level, and runs the
/// prompt (or RPC mode) until it ends.
fn launch(
    mut rs: RunSettings,
    args: &RunArgs,
    ctx: &Ctx,
    started: pi_base::clock::Stopwatch,
    chat: Option<crate::chat::Options>,
) -> anyhow::Result<ExitStatus> {
    let agent_dir = ctx.dirs.agent_dir.clone();
    let header = start_session(&mut rs, args, ctx)?;
    let tool_ctx = tool_context(&rs, &agent_dir);
    let session_id = header
        .as_deref()
        .and_then(|h| pi_base::json::get_str(h, "id"))
        .map(|s| s.into_owned());
    let session_file = tool_ctx.session_file.clone();
    // Full-output files of `bash` that the session does not name are removed at the end.
    let _logs = RemoveLogs(session_file.clone());
    let model_name = format!("{}/{}", rs.target.model.provider, rs.target.model.id);
    let config = Config {
        target: rs.target,
        thinking_level: rs.level.to_owned(),
        system_prompt: rs.system_prompt.text,
        system_sections: rs.system_prompt.sections,
        tools: rs.tools,
        tool_ctx: Arc::new(tool_ctx),
        tool_execution: ToolExecution::Parallel,
        settings: rs.agent,
        options: call_options(&rs.llm, session_id.clone()),
        credentials: Credentials {
            agent_dir,
            registry: rs.registry,
        },
        max_turns: args.max_turns,
        tool_choice: rs.tool_choice,
    };
    let client = Client::new()?;
    let rt = pi_agent::runtime::build()?;
    let cancel = CancelToken::new();
    let signalled = Signalled::default();
    let mut runner = Runner::new(rs.hooks, rs.cwd.clone(), session_file.clone());
    runner.policy = rs.project.policy.clone();
    let mut hooks = ProgramHooks::new(runner, crate::error::warn);
    if let Some(e) = pi_agent::extensions::refusal(&rs.project) {
        hooks.report(e);
    }
    let run = Run {
        rt: &rt,
        client: &client,
        config,
        messages: rs.messages,
        file: rs.file,
        last_compaction: rs.last_compaction,
        hooks,
        expander: expander(&rs.resources),
        cancel: &cancel,
        signalled: &signalled,
    };
    if args.rpc {
        let info = rpc::Info {
            session_id: session_id.clone().unwrap_or_default(),
            session_file,
            session_name: rs
                .opened
                .as_ref()
                .and_then(|o| o.session.name())
                .map(str::to_owned),
        };
        let stop = serve(run, info, (&rs.resources, &rs.cwd), ctx, model_name, chat)?;
        return Ok(match (stop, signalled.get()) {
            (rpc::Stop::Signal, Some(s)) => ExitStatus::of_signal(s),
            (rpc::Stop::Signal, None) => ExitStatus::Interrupted,
            (rpc::Stop::Eof, _) => ExitStatus::Success,
        });
    }
    let recorded = session_file.is_some();
    let (outcome, totals) = drive(run, args.json, header.as_deref(), model_name, rs.prompt);
    // On a terminal, the run's last line: what it used, how long it took, and where it is.
    if std::io::stderr().is_terminal() {
        let id = session_id.filter(|_| recorded).map(|id| {
            pi_session::find::ShortIds::of_all(&ctx.dirs)
                .get(&id)
                .to_owned()
        });
        crate::error::note(&totals.line(started.elapsed(), id.as_deref()));
    }
    finish(outcome?, signalled.get(), args)
}

/// Serves RPC commands (stdin and stdout), or `pi chat`'s front end.
fn serve(
    run: Run<'_>,
    info: rpc::Info,
    (resources, cwd): (&Arc<Resources>, &std::path::Path),
    ctx: &Ctx,
    model_name: String,
    chat: Option<crate::chat::Options>,
) -> anyhow::Result<rpc::Stop> {
    let commands = rpc::commands_json(resources, &run.config.tools, cwd);
    let expand = expander(resources);
    match chat {
        Some(opts) => {
            let window = run.config.target.model.context_window;
            let setup = chat_setup(opts, &info, (resources, cwd), ctx, model_name, window);
            crate::chat::run(setup, |io| run.serve(expand, info, commands, io))
        }
        None => {
            let io = rpc::Io {
                out: Box::new(std::io::stdout()),
                input: rpc::stdin_lines(),
                tap: None,
                gate: None,
            };
            run.serve(expand, info, commands, io)
        }
    }
}

/// What `pi chat`'s front end starts from.
fn chat_setup(
    opts: crate::chat::Options,
    info: &rpc::Info,
    (resources, cwd): (&Arc<Resources>, &std::path::Path),
    ctx: &Ctx,
    model: String,
    context_window: u64,
) -> crate::chat::Setup {
    crate::chat::Setup {
        opts,
        info: info.clone(),
        resources: resources.clone(),
        agent_dir: ctx.dirs.agent_dir.clone(),
        cwd: cwd.to_owned(),
        model,
        context_window,
        settings: pi_base::config::settings(&ctx.dirs.agent_dir, cwd).0,
        session_dir: ctx.dirs.session_dir_for(&cwd.to_string_lossy()),
        suggest: closest,
    }
}

/// The closest of `names` to `typed` (`pi chat`'s unknown slash commands).
fn closest(typed: &str, names: &[String]) -> Option<String> {
    crate::cmd::help::similar(typed, names.iter().map(String::as_str))
        .first()
        .map(|s| (*s).to_owned())
}

/// The options of every model call of the run.
fn call_options(llm: &LlmSettings, session_id: Option<String>) -> Options {
    Options {
        retry: llm.retry,
        thinking_budgets: llm.thinking_budgets.clone(),
        // The session's id: the prompt-cache key of the APIs that take one.
        session_id,
        ..Options::default()
    }
}

/// Runs the agent in print mode (`--json`: every event as a line, after the session's
/// header), and returns the outcome and what the run used.
fn drive(
    run: Run<'_>,
    json: bool,
    header: Option<&[u8]>,
    model_name: String,
    prompt: Option<String>,
) -> (anyhow::Result<Outcome>, Totals) {
    if json {
        let mut out = Tally::new(JsonLines::new(std::io::stdout()));
        if let Some(h) = header {
            let line = Value::parse(h)
                .map(|v| v.to_json())
                .unwrap_or_else(|| h.to_vec());
            out.view.line(&line);
        }
        let outcome = run.drive(&mut out, prompt);
        (outcome, out.totals)
    } else {
        let mut view = Tally::new(Human::new(model_name));
        let outcome = run.drive(&mut view, prompt);
        (outcome, view.totals)
    }
}

/// What the tools work with. The shell of `bash` calls is the project's only when the
/// project is trusted.
fn tool_context(rs: &RunSettings, agent_dir: &std::path::Path) -> ToolContext {
    let mut tool_ctx = ToolContext::new(&rs.cwd);
    tool_ctx.diagnostics = |bytes| {
        use std::io::Write;
        let _ = std::io::stderr().write_all(bytes);
    };
    let shell = if rs.project.trusted {
        rs.agent.clone()
    } else {
        pi_agent::agent::settings::Settings::from_map(
            &pi_base::config::global_settings(agent_dir).0,
        )
    };
    tool_ctx.shell_path = shell.shell_path;
    tool_ctx.shell_command_prefix = shell.shell_command_prefix;
    tool_ctx.bin_dir = Some(agent_dir.join("bin"));
    tool_ctx.auto_resize_images = rs.agent.auto_resize_images;
    tool_ctx.model_accepts_images = Some(rs.target.model.accepts_images());
    tool_ctx.session_file = rs.file.as_ref().map(|f| f.path().to_owned());
    tool_ctx.env_policy = rs.project.policy.clone();
    tool_ctx
}

/// The thinking level the session records in its context, if any.
fn recorded_thinking(info: Option<&pi_agent::context::Info>) -> Option<String> {
    info?
        .thinking_level
        .as_ref()
        .and_then(Value::as_jstr)
        .map(|l| l.text().into_owned())
}

/// The session to continue: `-c`'s most recent one of the current directory, or the one
/// named; `None` for a new session.
fn existing_session(args: &RunArgs, ctx: &Ctx) -> anyhow::Result<Option<PathBuf>> {
    if args.continue_recent {
        // The current session: PI_SESSION, the pin (`pi session use`), the most recent.
        let recent = match ctx.choose_session(None, &ctx.cwd_str()) {
            Ok((path, _)) => Some(path),
            Err(pi_session::find::FindError::NoSessions { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        if recent.is_none() && args.leaf.is_some() {
            return Err(crate::error::usage(format!(
                "--leaf: there is no session to continue in {}",
                ctx.cwd.display()
            )));
        }
        return Ok(recent);
    }
    args.session
        .get()?
        .map(|s| ctx.session_path(Some(s)))
        .transpose()
}

/// Removes the `bash` tool's full-output files the session does not name when dropped.
struct RemoveLogs(Option<PathBuf>);

impl Drop for RemoveLogs {
    fn drop(&mut self) {
        pi_tools::bash::remove_unreferenced_logs(self.0.as_deref());
    }
}

/// The exit status of a finished run (and its last word on stderr).
fn finish(
    outcome: Outcome,
    signal: Option<pi_agent::runtime::Signal>,
    args: &RunArgs,
) -> anyhow::Result<ExitStatus> {
    if let Some(s) = signal {
        crate::error::note("interrupted; the session records where the run stopped");
        return Ok(ExitStatus::of_signal(s));
    }
    match outcome {
        Outcome::Done | Outcome::Handled => Ok(ExitStatus::Success),
        Outcome::MaxTurns => {
            crate::error::note(&format!(
                "stopped after {} turns (--max-turns)",
                args.max_turns.unwrap_or(0)
            ));
            Ok(ExitStatus::Success)
        }
        Outcome::Aborted => Ok(ExitStatus::Interrupted),
        // The model's or the provider's words: escaped for the terminal (newlines kept).
        Outcome::Failed(e) => Err(Exit::new(
            ExitStatus::Failure,
            anyhow::anyhow!("{}", crate::output::escape_text(&e)),
        )
        .into()),
    }
}

/// Creates a new session now (its header written at once) unless one is continued, and
/// records the settings: a fresh session starts with the model and the thinking level; a
/// continued one gets the level when it has none or it changes. Returns the header line.
fn start_session(
    rs: &mut RunSettings,
    args: &RunArgs,
    ctx: &Ctx,
) -> anyhow::Result<Option<Vec<u8>>> {
    let cwd = rs.cwd.to_string_lossy().into_owned();
    let mut header = rs
        .opened
        .as_ref()
        .and_then(|o| o.session.header.as_ref())
        .map(|h| h.raw.clone());
    if rs.existing.is_none() {
        if args.no_session {
            header = Some(store::new_header(&cwd).1);
        } else {
            let (path, h) = store::create(&ctx.dirs.session_dir_for(&cwd), &cwd)?;
            if std::io::stderr().is_terminal() {
                crate::error::note(&format!("new session {}", path.display()));
            }
            header = Some(h);
            rs.file = Some(FileStore::open(&path, &ctx.dirs.agent_dir, LOCK_WAIT)?);
        }
    }
    if let Some(f) = rs.file.as_mut() {
        f.set_leaf(rs.opened.as_ref().and_then(Opened::leaf_id));
        if rs.messages.is_empty() {
            f.append_model_change(&rs.target.model.provider, &rs.target.model.id)?;
            f.append_thinking_level(rs.level)?;
        } else if rs.recorded_level.as_deref() != Some(rs.level) {
            f.append_thinking_level(rs.level)?;
        }
    }
    Ok(header)
}

/// Expands templates and skills in the prompts of a run.
fn expander(res: &Arc<Resources>) -> pi_agent::agent::session::Expander {
    let res = res.clone();
    Box::new(move |text: &str| {
        setup::expand_prompt(text, &res)
            .map(|(t, _)| t)
            .map_err(|e| e.to_string())
    })
}

/// The session being continued, read.
struct Opened {
    session: Session,
    /// Index of the entry the run continues from.
    leaf: Option<u32>,
}

impl Opened {
    fn open(path: &std::path::Path, leaf: Option<&str>) -> anyhow::Result<Opened> {
        let session = Session::open(path)?;
        for w in session.skipped_warnings() {
            crate::error::warn(&w);
        }
        let leaf = match leaf {
            Some(l) => Some(session.resolve_entry(l)?),
            None => session.leaf(),
        };
        Ok(Opened { session, leaf })
    }

    fn leaf_id(&self) -> Option<String> {
        self.leaf
            .map(|i| self.session.entries[i as usize].id.to_string())
    }

    /// The context of the path: its messages, what it says, and when it was last compacted.
    #[allow(clippy::type_complexity)]
    fn context(
        &self,
    ) -> anyhow::Result<(Vec<Message>, Option<pi_agent::context::Info>, Option<i64>)> {
        let c = pi_agent::context::build(&self.session, self.leaf)
            .with_context(|| format!("cannot read {}", self.session.path.display()))?;
        for w in &c.info.warnings {
            crate::error::warn(&format!("{}: {w}", self.session.path.display()));
        }
        let t = c
            .info
            .compaction
            .and_then(|i| store::compaction_time(&self.session, i));
        Ok((c.messages, Some(c.info), t))
    }

    fn has_thinking_entry(&self) -> bool {
        self.leaf.is_some_and(|l| {
            self.session
                .path_to(l)
                .iter()
                .any(|&i| self.session.entries[i as usize].kind == Kind::ThinkingLevelChange)
        })
    }
}

/// What a run is driven with.
struct Run<'a> {
    rt: &'a tokio::runtime::Runtime,
    client: &'a Client,
    config: Config,
    messages: Vec<Message>,
    file: Option<FileStore>,
    last_compaction: Option<i64>,
    hooks: ProgramHooks,
    expander: pi_agent::agent::session::Expander,
    cancel: &'a CancelToken,
    signalled: &'a Signalled,
}

impl<'a> Run<'a> {
    fn session<O: Observer>(self, observer: O) -> (AgentSession<'a, ProgramHooks, O>, Parts<'a>) {
        let mut session = AgentSession::new(
            self.config,
            self.client,
            self.messages,
            self.file,
            self.last_compaction,
            observer,
            self.hooks,
            self.cancel.clone(),
        );
        session.set_expander(self.expander);
        (
            session,
            Parts {
                rt: self.rt,
                cancel: self.cancel,
                signalled: self.signalled,
            },
        )
    }

    /// Runs the prompt (or the continuation) on the runtime, with Ctrl-C, SIGTERM and
    /// SIGHUP cancelling the run (a second Ctrl-C exits at once).
    fn drive<O: Observer>(self, observer: O, prompt: Option<String>) -> anyhow::Result<Outcome> {
        let (mut session, p) = self.session(observer);
        p.rt.block_on(async {
            let watcher = watch_signals(p.cancel.clone(), p.signalled.clone())
                .context("cannot listen for signals")?;
            let r = match &prompt {
                Some(text) => session.prompt(text).await,
                None => session.resume().await,
            };
            watcher.abort();
            Ok(r?)
        })
    }

    /// Serves RPC commands from `io.input` until its end or a signal.
    fn serve(
        self,
        expand: pi_agent::agent::session::Expander,
        info: rpc::Info,
        commands: serde_json::Value,
        io: rpc::Io,
    ) -> anyhow::Result<rpc::Stop> {
        let out: rpc::Out = Rc::new(RefCell::new(JsonLines::new(io.out)));
        let mirror = Rc::new(RefCell::new(Mirror::default()));
        let observer = RpcObserver::tapped(out.clone(), mirror.clone(), io.tap);
        let (mut session, p) = self.session(observer);
        let signals = p.cancel.clone();
        session.set_cancel(CancelToken::new());
        let gate = io.gate;
        p.rt.block_on(async {
            let watcher = match &gate {
                Some(g) => {
                    rpc::gate::watch_signals(g.clone(), signals.clone(), p.signalled.clone())
                }
                None => watch_signals(signals.clone(), p.signalled.clone()),
            }
            .context("cannot listen for signals")?;
            let shared = rpc::Shared {
                out,
                mirror,
                expand,
                info,
                signals,
                commands,
                gate,
            };
            let mut server = Server::new(&mut session, shared);
            let r = server.serve(io.input).await;
            watcher.abort();
            r
        })
    }
}

/// What stays of [`Run`] once the session is made.
struct Parts<'a> {
    rt: &'a tokio::runtime::Runtime,
    cancel: &'a CancelToken,
    signalled: &'a Signalled,
}
