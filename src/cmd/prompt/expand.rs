//! `pi prompt expand`

use std::io::IsTerminal;

use clap::Args;
use serde_json::json;

use super::DiscoveryArgs;
use crate::clock;
use crate::cmd::Ctx;
use crate::error::{Exit, ExitStatus, failed};
use crate::js;
use crate::prompt::skills::{self, ExpandError};
use crate::prompt::templates;

#[derive(Debug, Args)]
pub struct ExpandArgs {
    /// Print {"text": …, "source": {"kind", "name", "path"}} instead of the text (source is
    /// null when nothing was expanded)
    #[arg(long, conflicts_with = "as_message")]
    pub json: bool,
    /// Print the result as a user message record, ready for `pi session append`
    #[arg(long)]
    pub as_message: bool,
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
    /// The text, e.g. `/review 1234 src/auth.ts` [default: read from stdin]
    ///
    /// Several words are joined with spaces. When the first word is `/name`, the words after
    /// it are the template's arguments as the shell split them; a single TEXT or stdin is
    /// split by POSIX shell rules. Options must come before TEXT.
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
            && !first.contains(char::is_whitespace))
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
        Ok(None) => match templates::expand(&text, &res.templates, words.as_deref()) {
            Some(x) => {
                if let Some(w) = &x.warning {
                    crate::error::warn(w);
                }
                let source =
                    json!({"kind": "template", "name": x.template.name, "path": x.template.path});
                (x.text, source)
            }
            None => (text, serde_json::Value::Null),
        },
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
