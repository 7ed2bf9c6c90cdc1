//! `pi prompt expand`

use std::io::IsTerminal;

use clap::Args;
use serde_json::json;

use super::DiscoveryArgs;
use crate::cmd::Ctx;
use crate::error::{Exit, ExitStatus, failed};
use crate::output::escape;
use pi_base::clock;
use pi_base::js;
use pi_prompt::skills::{self, ExpandError};
use pi_prompt::templates::{self, Refusal};

#[derive(Debug, Args)]
pub struct ExpandArgs {
    /// Print {"text": …, "source": {"kind", "name", "path"}} instead of the text (source is
    /// null when nothing was expanded)
    #[arg(long, conflicts_with = "as_message")]
    pub json: bool,
    /// Print the result as a user message record, ready for `pi session append`
    #[arg(long)]
    pub as_message: bool,
    /// Pass `/name` through when there is no such template, and leave missing arguments
    /// empty, as the agent does (by default both are errors)
    #[arg(long)]
    pub lenient: bool,
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
    /// The text, e.g. `/review 1234 src/auth.ts` [default: read from stdin]
    ///
    /// Several words are joined with spaces. When the first word is `/name`, the words after
    /// it are the template's arguments as the shell split them; a single TEXT or stdin is
    /// split by the reference's quote rules. Options must come before TEXT.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "TEXT"
    )]
    pub text: Vec<String>,
}

pub fn run(args: ExpandArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let (text, words) = if args.text.is_empty() {
        if std::io::stdin().is_terminal() {
            crate::error::note("reading the text from the terminal (end with Ctrl-D)");
        }
        (js::trim(&super::read_stdin()?).to_owned(), None)
    } else {
        let first = &args.text[0];
        let words = (args.text.len() > 1
            && first.starts_with('/')
            && !first.starts_with("/skill:")
            && !first.contains(js::is_space))
        .then(|| args.text[1..].to_vec());
        (args.text.join(" "), words)
    };
    let (_, res) = args.discovery.load(ctx)?;
    super::warn_missing_paths(&res);

    let (out, source) = match skills::expand(&text, &res.skills) {
        Ok(Some((out, skill))) => (
            out,
            json!({"kind": "skill", "name": skill.name, "path": skill.path}),
        ),
        Err(ExpandError::Unknown(name)) => {
            let hint = if res.skills.is_empty() {
                "no skills were found; `pi prompt list` shows where pi looks".to_owned()
            } else {
                let names: Vec<&str> = res.skills.iter().map(|s| s.name.as_str()).collect();
                format!("known skills: {}", names.join(", "))
            };
            return Err(
                Exit::new(ExitStatus::Usage, anyhow::anyhow!("unknown skill '{name}'"))
                    .hint(hint)
                    .into(),
            );
        }
        Err(ExpandError::Read(path, e)) => {
            return Err(failed(format!("cannot read skill {}: {e}", path.display())));
        }
        Ok(None) => {
            let expanded = templates::expand(&text, &res.templates, words.as_deref());
            if !args.lenient
                && let Some(r) = templates::refuse(&text, &res.templates, expanded.as_ref())
            {
                return Err(refused(r));
            }
            match expanded {
                Some(x) => {
                    if let Some(w) = &x.warning {
                        crate::error::warn(w);
                    }
                    let source = json!({"kind": "template", "name": x.template.name, "path": x.template.path});
                    (x.text, source)
                }
                None => (text, serde_json::Value::Null),
            }
        }
    };

    if args.as_message {
        ctx.out.json(&json!({
            "role": "user",
            "content": [{"type": "text", "text": out}],
            "timestamp": clock::now_ms(),
        }))?;
    } else if args.json {
        ctx.out.json(&json!({"text": out, "source": source}))?;
    } else if out.ends_with('\n') {
        ctx.out.write_all(out.as_bytes())?;
    } else {
        ctx.out.line(out.as_bytes())?;
    }
    Ok(ExitStatus::Success)
}

/// The usage error of a `/name` that is no template, or of a missing argument.
fn refused(r: Refusal) -> anyhow::Error {
    const LENIENT: &str = "--lenient passes the text through unchanged";
    let (message, hint) = match r {
        Refusal::Unknown {
            name,
            known,
            closest,
        } => {
            let list = known
                .iter()
                .map(|k| format!("/{}", escape(k)))
                .collect::<Vec<_>>()
                .join(", ");
            let hint = match (closest, known.is_empty()) {
                (_, true) => format!(
                    "no prompt templates were found (`pi prompt list` shows where pi looks); {LENIENT}"
                ),
                (Some(c), false) => {
                    format!("did you mean /{}? known templates: {list}", escape(&c))
                }
                (None, false) => format!("known templates: {list}; {LENIENT}"),
            };
            (format!("unknown template '/{}'", escape(&name)), hint)
        }
        Refusal::MissingArguments {
            name,
            needed,
            given,
            argument_hint,
        } => {
            let name = escape(&name);
            let usage = match argument_hint {
                Some(h) => format!("/{name} {}", escape(&h)),
                None => {
                    let args: Vec<String> = (1..=needed).map(|n| format!("ARG{n}")).collect();
                    format!("/{name} {}", args.join(" "))
                }
            };
            let what = if needed == 1 {
                "an argument".to_owned()
            } else {
                format!("{needed} arguments")
            };
            (
                format!(
                    "template '/{name}' needs {what} (it uses ${needed}), and {given} {} given",
                    if given == 1 { "was" } else { "were" }
                ),
                format!("usage: {usage}; --lenient leaves missing arguments empty"),
            )
        }
    };
    Exit::new(ExitStatus::Usage, anyhow::anyhow!("{message}"))
        .hint(hint)
        .into()
}
