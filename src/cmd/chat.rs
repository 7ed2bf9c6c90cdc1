//! `pi chat`: the agent in the terminal, on the loop `pi run` uses (its options, settings,
//! tools, hooks and session writes), driven by the front end of src/chat.

use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::run::RunArgs;
use crate::error::ExitStatus;

pub const EXIT_STATUS: &str = "\
Exit status:
  0  the chat ended (/quit, Ctrl-D, Ctrl-C twice at an empty prompt, end of input)
  1  the chat failed (the session could not be written, the terminal could not be read)
  2  usage error or invalid input (nothing was written)
  130  interrupted while waiting for input (not a terminal); 143 terminated; 129 hung up";

const FIRST: &str = "The first message, sent before the chat waits for yours; `/template args` \
     and `/skill:name args` are expanded";

const HOOK: &str = "Run COMMAND (a shell command line) at EVENT, after the hooks of \
     settings.json (repeatable)\n\nEvents: input, before_agent_start, context, tool_call, \
     tool_result, message_end, turn_end, agent_end, session_before_compact, \
     session_before_switch and session_before_fork. See `man pi-extensions`.";

#[derive(Debug, Args)]
#[command(mut_arg("json", |a| a.hide(true)))]
#[command(mut_arg("rpc", |a| a.hide(true)))]
#[command(mut_arg("max_turns", |a| a.hide(true)))]
// `-c` is chat's own (below): with it, the one positional is the first message.
#[command(mut_arg("continue_recent", |a| a.short(None).long("continue-run").hide(true)))]
#[command(mut_group("existing", |g| g.arg("continue_chat")))]
#[command(mut_arg("prompt", |a| a.help(FIRST).long_help(FIRST)))]
#[command(mut_arg("hook", |a| a.long_help(HOOK)))]
#[command(mut_arg("tool_choice", |a| a.long_help(
    "Which tool the model must call: auto, none, required (some tool), or a tool's name \
     [default: the provider's, auto]"
)))]
pub struct ChatArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// The first message, after SESSION (or alone with --session or -c); the same as -p
    #[arg(value_name = "PROMPT")]
    pub message: Option<String>,
    /// Continue the current session of the directory: PI_SESSION, the pin of `pi session
    /// use`, else the most recent (a new one when it has none); a value given alone is then
    /// PROMPT
    #[arg(short = 'c', long = "continue", conflicts_with = "session_opt")]
    pub continue_chat: bool,
    /// Messages are separated by NUL rather than newlines (when stdin is not a terminal)
    #[arg(short = '0', long = "null")]
    pub null: bool,
}

pub fn run(mut args: ChatArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    if args.continue_chat {
        // `pi chat -c PROMPT`: no SESSION, so the one positional is the first message.
        if args.run.session.session.is_some() && args.message.is_some() {
            return Err(crate::error::usage(
                "-c continues the current session: give PROMPT alone, not SESSION PROMPT",
            ));
        }
        args.run.continue_recent = true;
    }
    let message = if args.continue_chat {
        args.message.take().or(args.run.session.session.take())
    } else {
        // `pi chat SESSION PROMPT`, `pi chat -s SESSION PROMPT`: one value alone is SESSION.
        let (session, [message]) =
            std::mem::take(&mut args.run.session).split([args.message.take()], 0)?;
        args.run.session.session = session;
        message
    };
    if let Some(m) = message {
        if args.run.prompt.is_some() {
            return Err(crate::error::usage(
                "the first message is given twice: as PROMPT and with -p",
            ));
        }
        args.run.prompt = Some(m);
    }
    let r = &args.run;
    for (given, flag) in [
        (r.json, "--json"),
        (r.rpc, "--rpc"),
        (r.max_turns.is_some(), "--max-turns"),
    ] {
        if given {
            return Err(crate::error::usage(format!(
                "{flag} is an option of `pi run`, not of `pi chat`"
            )));
        }
    }
    let opts = crate::chat::Options {
        nul: args.null,
        first: None,
    };
    crate::cmd::run::chat(args.run, ctx, opts)
}
