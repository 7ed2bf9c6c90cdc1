//! `pi session check`

use crate::error::ExitStatus;
use clap::Args;
use serde::Serialize;

use crate::cmd::Ctx;
use crate::cmd::args::{FormatArgs, READ_SESSION_HELP, SessionArg};
use crate::output::{Style, escape};
use pi_session::store::Severity;

pub const EXIT_STATUS: &str = "\
Exit status:
  0  no errors (warnings, such as an interrupted append, and notes may have been reported)
  1  the file has errors, or cannot be read
  2  usage error";

#[derive(Debug, Args)]
#[command(mut_arg("session", |a| a.help(READ_SESSION_HELP)))]
pub struct CheckArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Serialize)]
struct Record<'a> {
    path: &'a str,
    line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<usize>,
    severity: &'static str,
    kind: &'static str,
    message: &'a str,
}

/// A temporary file a killed writer left beside the session (a note).
#[derive(Serialize)]
struct TemporaryRecord<'a> {
    path: &'a str,
    severity: &'static str,
    kind: &'static str,
    message: &'a str,
}

fn temporary_message(t: &pi_base::fs::StaleTemporary) -> String {
    format!(
        "temporary file of process {}, which is gone ({} bytes); pi session gc removes it",
        t.pid, t.bytes
    )
}

pub fn run(args: CheckArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let source = ctx.session_source(args.session.get()?)?;
    let path = source.name().to_owned();
    // Left in the session's folder by writers killed before they finished.
    let temporaries = match &source {
        pi_session::store::Source::File(f) => f
            .parent()
            .map(pi_base::fs::stale_temporaries)
            .unwrap_or_default(),
        pi_session::store::Source::Spooled { .. } => Vec::new(),
    };
    let report = pi_session::check::check_source(source)?;
    let s = report.session;
    let problems = report.problems;
    let count = |sev: Severity| problems.iter().filter(|p| p.kind.severity() == sev).count();
    let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
    let p = path.to_string_lossy();
    if ctx.out.human(args.format.get()) {
        let st = Style {
            on: ctx.out.color(),
        };
        let p = escape(&p);
        for pr in &problems {
            let loc = match pr.column {
                Some(c) => format!("{p}:{}:{c}", pr.line),
                None => format!("{p}:{}", pr.line),
            };
            let sev = match pr.kind.severity() {
                Severity::Error => st.red("error"),
                Severity::Warning => st.yellow("warning"),
                Severity::Note => "note".to_owned(),
            };
            let message = escape(&pr.message);
            ctx.out
                .line(format!("{loc}: {sev}[{}]: {message}", pr.kind.as_str()).as_bytes())?;
        }
        for t in &temporaries {
            let line = format!(
                "{}: note[stale-temporary]: {}",
                escape(&t.path.to_string_lossy()),
                escape(&temporary_message(t))
            );
            ctx.out.line(line.as_bytes())?;
        }
        if s.problems_dropped > 0 {
            ctx.out
                .line(format!("… and {} more problems", s.problems_dropped).as_bytes())?;
        }
        let summary = if errors == 0 && warnings == 0 {
            format!("{p}: ok ({} entries)", s.entries.len())
        } else {
            format!(
                "{p}: {errors} error{}, {warnings} warning{} ({} entries)",
                if errors == 1 { "" } else { "s" },
                if warnings == 1 { "" } else { "s" },
                s.entries.len()
            )
        };
        ctx.out.line(summary.as_bytes())?;
    } else {
        for pr in &problems {
            ctx.out.json(&Record {
                path: &p,
                line: pr.line,
                column: pr.column,
                severity: match pr.kind.severity() {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                    Severity::Note => "note",
                },
                kind: pr.kind.as_str(),
                message: &pr.message,
            })?;
        }
        for t in &temporaries {
            ctx.out.json(&TemporaryRecord {
                path: &t.path.to_string_lossy(),
                severity: "note",
                kind: "stale-temporary",
                message: &temporary_message(t),
            })?;
        }
    }
    Ok(if errors > 0 || s.problems_dropped > 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
