//! `pi prompt list`

use crate::error::ExitStatus;
use clap::Args;
use serde_json::{Value, json};

use super::DiscoveryArgs;
use crate::cmd::Ctx;
use crate::cmd::args::FormatArgs;
use crate::output::{Style, escape, term_width};
use pi_base::text::truncate;
use pi_prompt::{Diagnostic, DiagnosticType, ResourceKind, Scope};

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// The scope as the human listing shows it (an explicit path outside both directories is
/// "path").
fn scope_label(scope: Scope) -> &'static str {
    match scope {
        Scope::Temporary => "path",
        s => s.name(),
    }
}

fn diagnostic_record(kind: ResourceKind, d: &Diagnostic) -> anyhow::Result<Value> {
    let mut v = json!({"kind": "diagnostic", "resource": kind});
    if let (Value::Object(m), Value::Object(d)) = (&mut v, serde_json::to_value(d)?) {
        m.extend(d);
    }
    Ok(v)
}

pub fn run(args: ListArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let (_, res) = args.discovery.load(ctx)?;
    let diagnostics: Vec<(ResourceKind, &Diagnostic)> = res
        .template_diagnostics
        .iter()
        .map(|d| (ResourceKind::Prompt, d))
        .chain(
            res.skill_diagnostics
                .iter()
                .map(|d| (ResourceKind::Skill, d)),
        )
        .collect();

    if !ctx.out.human(args.format.get()) {
        json_records(&res, &diagnostics, ctx)?;
        return Ok(ExitStatus::Success);
    }

    let st = Style {
        on: ctx.out.color(),
    };
    let rows: Vec<(String, String, &str)> = res
        .templates
        .iter()
        .map(|t| {
            let cmd = match &t.argument_hint {
                Some(h) => format!("/{} {h}", t.name),
                None => format!("/{}", t.name),
            };
            (cmd, t.description.as_str(), scope_label(t.source.scope))
        })
        .chain(res.skills.iter().map(|s| {
            (
                format!("/skill:{}", s.name),
                s.description.as_str(),
                scope_label(s.source.scope),
            )
        }))
        .map(|(cmd, desc, scope)| {
            // Names come from file names, the rest from the files: shown escaped.
            let desc = pi_prompt::text::one_line(desc);
            (escape(&cmd).into_owned(), escape(&desc).into_owned(), scope)
        })
        .collect();
    if rows.is_empty() && diagnostics.is_empty() {
        crate::error::note("no prompt templates or skills found");
        return Ok(ExitStatus::Success);
    }
    let width = term_width();
    let scope_w = rows.iter().map(|r| r.2.len()).max().unwrap_or(0);
    let cmd_w = rows
        .iter()
        .map(|r| pi_base::text::width(&r.0))
        .max()
        .unwrap_or(0)
        .min(32);
    for (cmd, desc, scope) in &rows {
        let room = width.saturating_sub(cmd_w + scope_w + 4).max(10);
        let cmd_shown = truncate(cmd, cmd_w);
        let pad = cmd_w.saturating_sub(pi_base::text::width(&cmd_shown));
        let line = format!(
            "{}{}  {}  {}",
            st.cyan(&cmd_shown),
            " ".repeat(pad),
            st.dim(&format!("{scope:<scope_w$}")),
            truncate(desc, room)
        );
        ctx.out.line(line.trim_end().as_bytes())?;
    }
    for (_, d) in &diagnostics {
        let label = match d.ty {
            DiagnosticType::Warning => st.yellow("warning"),
            DiagnosticType::Error => st.red("error"),
            DiagnosticType::Collision => st.magenta("collision"),
        };
        let detail = match &d.collision {
            Some(c) => format!(
                "{} (kept {}, skipped {})",
                d.message,
                c.winner_path.display(),
                c.loser_path.display()
            ),
            None => format!("{}: {}", d.path.display(), d.message),
        };
        ctx.out
            .line(format!("{label}: {}", escape(&detail)).as_bytes())?;
    }
    Ok(ExitStatus::Success)
}

/// The machine output: one record per template, skill and diagnostic.
fn json_records(
    res: &pi_prompt::resources::Resources,
    diagnostics: &[(ResourceKind, &Diagnostic)],
    ctx: &mut Ctx,
) -> anyhow::Result<()> {
    for t in &res.templates {
        let mut v = json!({
            "kind": "template",
            "name": t.name,
            "command": format!("/{}", t.name),
            "description": t.description,
        });
        if let (Some(h), Value::Object(m)) = (&t.argument_hint, &mut v) {
            m.insert("argumentHint".into(), json!(h));
        }
        if let Value::Object(m) = &mut v {
            m.insert("scope".into(), json!(t.source.scope));
            m.insert("source".into(), json!(t.source.source));
            m.insert("path".into(), json!(t.path));
        }
        ctx.out.json(&v)?;
    }
    for s in &res.skills {
        ctx.out.json(&json!({
            "kind": "skill",
            "name": s.name,
            "command": format!("/skill:{}", s.name),
            "description": s.description,
            "disableModelInvocation": s.disable_model_invocation,
            "scope": s.source.scope,
            "source": s.source.source,
            "path": s.path,
            "baseDir": s.base_dir,
        }))?;
    }
    for (kind, d) in diagnostics {
        ctx.out.json(&diagnostic_record(*kind, d)?)?;
    }
    Ok(())
}
