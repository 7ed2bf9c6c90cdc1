//! `pi run`: the agent loop on a session, from the shell.

use std::cell::RefCell;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use crate::agent::render::{Human, JsonLines};
use crate::agent::rpc::{self, Mirror, RpcObserver, Server};
use crate::agent::setup::{self, PromptError, SystemPrompt};
use crate::agent::store::{self, FileStore};
use crate::agent::{AgentSession, Config, Credentials, Message, Observer, Outcome, ToolExecution};
use crate::cmd::Ctx;
use crate::context::value::Value;
use crate::error::{Exit, FAILURE, USAGE};
use crate::extensions::hooks::{ProgramHooks, Runner};
use crate::llm::config::{self, SelectError, Settings as LlmSettings};
use crate::llm::{Client, Options, ToolChoice, auth};
use crate::models::Registry;
use crate::prompt::resources;
use crate::session::{Kind, Session};
use crate::tools::{CancelToken, Tool, ToolContext, ToolName};

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
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The session to continue (a path, id or unique id prefix) [default: a new session of
    /// the current directory]
    pub session: Option<String>,
    /// The prompt; `/template args` and `/skill:name args` are expanded [default: read from
    /// stdin]
    ///
    /// Without a prompt (empty stdin), a session whose path ends in a user message or tool
    /// results (an interrupted run, --max-turns) is continued from there.
    #[arg(short = 'p', long, value_name = "PROMPT", allow_hyphen_values = true)]
    pub prompt: Option<String>,
    /// The model, as PROVIDER/ID [default: the session's model if it has a key, else
    /// defaultProvider/defaultModel from settings.json]
    #[arg(long, value_name = "PROVIDER/ID")]
    pub model: Option<String>,
    /// Thinking level [default: the session's, else defaultThinkingLevel, else medium];
    /// lowered or raised to the nearest level the model supports
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub thinking: Option<Thinking>,
    /// Active tools, comma-separated, in this order [default: read,bash,edit,write, then
    /// every program tool]
    ///
    /// Built-in tools: read, bash, edit, write, grep, find, ls; program tools go by the name
    /// they describe. Unknown names are ignored with a warning.
    #[arg(long, value_name = "LIST", conflicts_with = "no_tools")]
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
    /// directory. See `commands/pi-extensions.md`.
    #[arg(long = "tool", value_name = "PATH")]
    pub tool: Vec<PathBuf>,
    /// Run COMMAND (a shell command line) at EVENT, after the hooks of settings.json
    /// (repeatable)
    ///
    /// Events: input, before_agent_start, context, tool_call, tool_result, message_end,
    /// turn_end, agent_end, session_before_compact. The event is a JSON object on the
    /// command's stdin; what it prints (a JSON object, or nothing) is its answer. See
    /// `commands/pi-extensions.md`.
    #[arg(long = "hook", value_name = "EVENT=COMMAND")]
    pub hook: Vec<String>,
    /// Continue from this entry (id or unique prefix) instead of the leaf; the first new
    /// entry becomes its child
    #[arg(long, value_name = "ID", requires = "session")]
    pub leaf: Option<String>,
    /// Record nothing: no session file is created or written (a SESSION given is only read)
    #[arg(long)]
    pub no_session: bool,
    /// Stop after N answers of the model (the tools of the last one still run)
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Use the contents of FILE instead of the default system prompt and SYSTEM.md
    #[arg(long, value_name = "FILE")]
    pub system_prompt_file: Option<PathBuf>,
    /// Append TEXT to the system prompt (if it names an existing file, its contents);
    /// repeatable, joined by blank lines; replaces APPEND_SYSTEM.md
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Vec<String>,
    /// Leave out the AGENTS.md / CLAUDE.md context files
    #[arg(long)]
    pub no_context_files: bool,
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
    /// running prompt, then exits 0. See `commands/pi-run-rpc.md`.
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
    let text = crate::js::trim(&text);
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
            return Err(
                Exit::new(USAGE, anyhow::anyhow!("invalid --tool-choice '{name}'"))
                    .hint("use auto, none, required, or the name of an active tool")
                    .into(),
            );
        }
    })
}

fn select_tools(args: &RunArgs, programs: &[Arc<dyn crate::tools::CustomTool>]) -> Vec<Tool> {
    if let Some(list) = &args.tools {
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if ToolName::from_name(name).is_none()
                && !programs.iter().any(|p| p.definition().name == name)
            {
                let mut known: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
                known.extend(programs.iter().map(|p| p.definition().name.as_str()));
                crate::error::warn(&format!(
                    "unknown tool '{name}' ignored (tools: {})",
                    known.join(", ")
                ));
            }
        }
    }
    crate::tools::select_active(
        args.tools.as_deref(),
        args.no_tools,
        args.no_builtin_tools,
        programs,
    )
}

fn model_error(e: SelectError) -> anyhow::Error {
    let hint = match &e {
        SelectError::Unknown(_) => {
            "`pi models --all` lists the models pi knows; define others in models.json"
        }
        SelectError::Unsupported { .. } => {
            "pick another model with --model, or define the model in models.json with \"api\": \"openai-completions\""
        }
        SelectError::None => {
            "pass --model PROVIDER/ID, or set defaultProvider and defaultModel in settings.json"
        }
    };
    Exit::new(USAGE, e).hint(hint).into()
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
        session.warn_skipped();
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

    fn has_thinking_entry(&self) -> bool {
        self.leaf.is_some_and(|l| {
            self.session
                .path_to(l)
                .iter()
                .any(|&i| self.session.entries[i as usize].kind == Kind::ThinkingLevelChange)
        })
    }
}

pub fn run(args: RunArgs, ctx: &mut Ctx) -> anyhow::Result<u8> {
    if args.max_turns == Some(0) {
        return Err(crate::error::usage("--max-turns must be at least 1"));
    }
    let model_flag = args
        .model
        .as_deref()
        .map(crate::cmd::context::parse_model_arg)
        .transpose()?;
    let agent_dir = ctx.dirs.agent_dir.clone();
    crate::extensions::config::check_flags(&args.hook).map_err(crate::error::usage)?;
    let custom_prompt = args
        .system_prompt_file
        .as_ref()
        .map(|f| {
            crate::prompt::read_text(&ctx.cwd.join(f))
                .map_err(|e| crate::error::usage(format!("cannot read {}: {e}", f.display())))
        })
        .transpose()?;

    // The session continued, and the directory the run works in (the session's, 0.73).
    let existing = match &args.session {
        Some(s) => Some(ctx.session_path(Some(s))?),
        None => None,
    };
    let cwd = match &existing {
        Some(p) => {
            let h = crate::session::find::read_header(p).ok_or_else(|| {
                crate::error::usage(format!("{} is not a session file", p.display()))
            })?;
            PathBuf::from(h.cwd)
        }
        None => ctx.cwd.clone(),
    };
    if !cwd.is_dir() {
        return Err(Exit::new(
            FAILURE,
            anyhow::anyhow!(
                "the session's working directory {} does not exist (session {}; current directory {})",
                cwd.display(),
                existing.as_deref().unwrap_or(ctx.cwd.as_path()).display(),
                ctx.cwd.display()
            ),
        )
        .hint("recreate the directory, or fork the session into this one with `pi session fork`")
        .into());
    }

    let registry = Registry::load(&agent_dir);
    for w in &registry.warnings {
        crate::error::warn(w);
    }
    let llm_settings = LlmSettings::load(&agent_dir, &cwd);
    let (settings, warnings) = crate::agent::settings::Settings::load(&agent_dir, &cwd);
    for w in &warnings {
        crate::error::warn(w);
    }
    let res = resources::load(&resources::Options {
        cwd: cwd.clone(),
        agent_dir: agent_dir.clone(),
        home: crate::config::expand_tilde("~"),
        prompt_paths: Vec::new(),
        skill_paths: Vec::new(),
        no_prompts: false,
        no_skills: false,
    });
    for w in &res.warnings {
        crate::error::warn(w);
    }

    // Program tools and hooks.
    let mut warnings = Vec::new();
    let programs =
        crate::extensions::tools::discover(&agent_dir, &cwd, &ctx.cwd, &args.tool, &mut warnings)
            .map_err(crate::error::usage)?;
    let (hook_set, hook_warnings) = crate::extensions::config::load(&agent_dir, &cwd, &args.hook);
    for w in warnings.iter().chain(&hook_warnings) {
        crate::error::warn(w);
    }
    let tools = select_tools(&args, &programs);
    let choice = args
        .tool_choice
        .as_deref()
        .map(|c| tool_choice(c, &tools))
        .transpose()?;

    // The prompt, expanded once now so that a bad one writes nothing.
    let prompt = if args.rpc { None } else { read_prompt(&args)? };
    if let Some(p) = &prompt {
        match setup::expand_prompt(p, &res) {
            Ok((_, warning)) => {
                if let Some(w) = warning {
                    crate::error::warn(&w);
                }
            }
            Err(PromptError::UnknownSkill { name, known }) => {
                let hint = if known.is_empty() {
                    "no skills were found; `pi prompt list` shows where pi looks".to_owned()
                } else {
                    format!("known skills: {}", known.join(", "))
                };
                return Err(Exit::new(USAGE, anyhow::anyhow!("unknown skill '{name}'"))
                    .hint(hint)
                    .into());
            }
            Err(e) => return Err(Exit::new(FAILURE, e).into()),
        }
    }

    // Lock an existing session before reading it, so nothing changes under the run.
    let wait = Duration::from_secs(3);
    let mut file = match (&existing, args.no_session) {
        (Some(p), false) => Some(FileStore::open(p, &agent_dir, wait).map_err(|e| match e {
            store::OpenError::Busy(_) => Exit::new(FAILURE, e)
                .hint("wait for the other run to end, or continue another branch with `pi session fork`")
                .into(),
            store::OpenError::Append(a) => anyhow::Error::from(a),
        })?),
        _ => None,
    };
    let opened = match &existing {
        Some(p) => Some(Opened::open(p, args.leaf.as_deref())?),
        None => None,
    };
    let (messages, info, last_compaction) = match &opened {
        Some(o) => {
            let c = crate::context::build(&o.session, o.leaf)
                .with_context(|| format!("cannot read {}", o.session.path.display()))?;
            for w in &c.info.warnings {
                crate::error::warn(&format!("{}: {w}", o.session.path.display()));
            }
            let t = c
                .info
                .compaction
                .and_then(|i| store::compaction_time(&o.session, i));
            (c.messages, Some(c.info), t)
        }
        None => (Vec::new(), None, None),
    };
    if prompt.is_none() && !args.rpc {
        match messages.last() {
            Some(m) if !store::is_assistant(m) => {}
            _ => {
                return Err(Exit::new(USAGE, anyhow::anyhow!("no prompt"))
                    .hint("pass -p PROMPT or pipe the prompt to stdin")
                    .into());
            }
        }
    }

    // The model, its key, the thinking level.
    let session_model = info.as_ref().and_then(|i| i.model_ids());
    let (target, _) = config::select(
        &registry,
        &agent_dir,
        &llm_settings,
        model_flag.as_ref(),
        session_model.as_ref(),
    )
    .map_err(model_error)?;
    let provider = target.model.provider.clone();
    let key = auth::resolve(&agent_dir, &registry, &target.model, &target.details)
        .map_err(|e| anyhow::Error::from(Exit::new(FAILURE, anyhow::anyhow!(e))))?;
    if key.api_key.is_none() {
        let how = match auth::env_vars(&provider).last() {
            Some(v) => format!(
                "set {v}, or add {{\"{provider}\": {{\"type\": \"api_key\", \"key\": …}}}} to auth.json"
            ),
            None => format!(
                "set \"apiKey\" for provider \"{provider}\" in models.json, or add it to auth.json"
            ),
        };
        return Err(Exit::new(
            FAILURE,
            anyhow::anyhow!("no API key for provider \"{provider}\""),
        )
        .hint(how)
        .into());
    }
    let recorded_level = opened
        .as_ref()
        .filter(|o| o.has_thinking_entry())
        .and(info.as_ref())
        .and_then(|i| i.thinking_level.as_ref())
        .and_then(Value::as_jstr)
        .map(|l| l.text().into_owned());
    let level = setup::thinking_level(
        args.thinking.map(Thinking::as_str),
        recorded_level.as_deref(),
        llm_settings.default_thinking_level.as_deref(),
        &target.model,
        &target.details,
    );

    let now = crate::clock::now_ms();
    let (system_prompt, warnings) = SystemPrompt {
        cwd: &cwd,
        agent_dir: &agent_dir,
        launch_dir: &ctx.cwd,
        custom: custom_prompt,
        append: &args.append_system_prompt,
        context_files: !args.no_context_files,
        tools: &tools,
        resources: &res,
        now_ms: now,
    }
    .build();
    for w in &warnings {
        crate::error::warn(w);
    }

    // A new session is created now (its header written at once).
    let cwd_str = cwd.to_string_lossy().into_owned();
    let mut header: Option<Vec<u8>> = opened
        .as_ref()
        .and_then(|o| o.session.header.as_ref())
        .map(|h| h.raw.clone());
    if existing.is_none() {
        if args.no_session {
            header = Some(store::new_header(&cwd_str).1);
        } else {
            let dir = ctx.dirs.session_dir_for(&cwd_str);
            let (path, h) = store::create(&dir, &cwd_str)?;
            if std::io::stderr().is_terminal() {
                crate::error::note(&format!("new session {}", path.display()));
            }
            header = Some(h);
            file = Some(
                FileStore::open(&path, &agent_dir, wait).map_err(|e| match e {
                    store::OpenError::Append(a) => anyhow::Error::from(a),
                    e => anyhow::Error::from(e),
                })?,
            );
        }
    }
    // The settings the session records: a fresh session starts with the model and the
    // thinking level; a continued one gets the level when it has none or it changes.
    if let Some(f) = file.as_mut() {
        f.set_leaf(opened.as_ref().and_then(Opened::leaf_id));
        if messages.is_empty() {
            f.append_model_change(&target.model.provider, &target.model.id)?;
            f.append_thinking_level(level)?;
        } else if recorded_level.as_deref() != Some(level) {
            f.append_thinking_level(level)?;
        }
    }

    let mut tool_ctx = ToolContext::new(&cwd);
    tool_ctx.shell_path = settings.shell_path.clone();
    tool_ctx.shell_command_prefix = settings.shell_command_prefix.clone();
    tool_ctx.bin_dir = Some(agent_dir.join("bin"));
    tool_ctx.auto_resize_images = settings.auto_resize_images;
    tool_ctx.model_accepts_images = Some(target.model.accepts_images());
    tool_ctx.session_file = file.as_ref().map(|f| f.path().to_owned());
    let session_file = tool_ctx.session_file.clone();
    let model_name = format!("{}/{}", target.model.provider, target.model.id);
    let config = Config {
        target,
        thinking_level: level.to_owned(),
        system_prompt,
        tools,
        tool_ctx: Arc::new(tool_ctx),
        tool_execution: ToolExecution::Parallel,
        settings,
        options: Options {
            retry: llm_settings.retry,
            thinking_budgets: llm_settings.thinking_budgets.clone(),
            ..Options::default()
        },
        credentials: Credentials {
            agent_dir: agent_dir.clone(),
            registry,
        },
        max_turns: args.max_turns,
        tool_choice: choice,
    };

    let client = Client::new().map_err(|e| anyhow::anyhow!(e))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let cancel = CancelToken::new();
    let signalled = Arc::new(AtomicU8::new(0));
    let res = Arc::new(res);
    let expander = |res: &Arc<resources::Resources>| -> crate::agent::session::Expander {
        let res = res.clone();
        Box::new(move |text: &str| {
            setup::expand_prompt(text, &res)
                .map(|(t, _)| t)
                .map_err(|e| e.to_string())
        })
    };
    let hooks = ProgramHooks::new(Runner::new(hook_set, cwd.clone(), session_file.clone()));
    let run = Run {
        rt: &rt,
        client: &client,
        config,
        messages,
        file,
        last_compaction,
        hooks,
        expander: expander(&res),
        cancel: &cancel,
        signalled: &signalled,
    };

    if args.rpc {
        let info = rpc::Info {
            session_id: header
                .as_deref()
                .and_then(|h| crate::json::get_str(h, "id"))
                .map(|s| s.into_owned())
                .unwrap_or_default(),
            session_file,
            session_name: opened
                .as_ref()
                .and_then(|o| o.session.name())
                .map(str::to_owned),
        };
        let stop = run.rpc(expander(&res), info)?;
        let signal = signalled.load(Ordering::SeqCst);
        return Ok(match stop {
            rpc::Stop::Signal if signal != 0 => signal,
            rpc::Stop::Signal => 130,
            rpc::Stop::Eof => 0,
        });
    }
    let outcome = if args.json {
        let mut out = JsonLines::new(std::io::stdout());
        if let Some(h) = &header {
            let line = Value::parse(h)
                .map(|v| v.to_json())
                .unwrap_or_else(|| h.clone());
            out.line(&line);
        }
        run.drive(out, prompt)
    } else {
        run.drive(Human::new(model_name), prompt)
    };
    let signal = signalled.load(Ordering::SeqCst);
    let outcome = outcome?;
    if signal != 0 {
        crate::error::note("interrupted; the session records where the run stopped");
        return Ok(signal);
    }
    match outcome {
        Outcome::Done | Outcome::Handled => Ok(0),
        Outcome::MaxTurns => {
            crate::error::note(&format!(
                "stopped after {} turns (--max-turns)",
                args.max_turns.unwrap_or(0)
            ));
            Ok(0)
        }
        Outcome::Aborted => Ok(130),
        Outcome::Failed(e) => Err(Exit::new(FAILURE, anyhow::anyhow!(e)).into()),
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
    expander: crate::agent::session::Expander,
    cancel: &'a CancelToken,
    signalled: &'a Arc<AtomicU8>,
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
            let watcher = watch_signals(p.cancel.clone(), p.signalled.clone())?;
            let r = match &prompt {
                Some(text) => session.prompt(text).await,
                None => session.resume().await,
            };
            watcher.abort();
            r
        })
    }

    /// Serves RPC commands from stdin until its end or a signal.
    fn rpc(
        self,
        expand: crate::agent::session::Expander,
        info: rpc::Info,
    ) -> anyhow::Result<rpc::Stop> {
        let out: rpc::Out = Rc::new(RefCell::new(JsonLines::new(
            Box::new(std::io::stdout()) as Box<dyn std::io::Write>
        )));
        let mirror = Rc::new(RefCell::new(Mirror::default()));
        let observer = RpcObserver::new(out.clone(), mirror.clone());
        let (mut session, p) = self.session(observer);
        let signals = p.cancel.clone();
        session.set_cancel(CancelToken::new());
        p.rt.block_on(async {
            let watcher = watch_signals(signals.clone(), p.signalled.clone())?;
            let mut server = Server {
                session: &mut session,
                out,
                mirror,
                expand,
                info,
                signals,
            };
            let r = server.serve(rpc::stdin_lines()).await;
            watcher.abort();
            r
        })
    }
}

/// What stays of [`Run`] once the session is made.
struct Parts<'a> {
    rt: &'a tokio::runtime::Runtime,
    cancel: &'a CancelToken,
    signalled: &'a Arc<AtomicU8>,
}

/// Listens for signals: the first cancels the run (recording its exit status), a second
/// Ctrl-C ends the process at once.
fn watch_signals(
    cancel: CancelToken,
    signalled: Arc<AtomicU8>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?;
    let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut hup = signal(SignalKind::hangup()).context("cannot listen for SIGHUP")?;
    Ok(tokio::spawn(async move {
        loop {
            let code = tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
                _ = hup.recv() => 129,
            };
            if cancel.is_cancelled() && code == 130 {
                crate::tools::bash::kill_all_running();
                std::process::exit(130);
            }
            if signalled.load(Ordering::SeqCst) == 0 {
                signalled.store(code, Ordering::SeqCst);
            }
            if code != 130 {
                crate::tools::bash::kill_all_running();
            }
            cancel.cancel();
        }
    }))
}
