//! `pi models`

use crate::error::ExitStatus;
use clap::Args;
use serde_json::{Value as Json, json};

use crate::cmd::Ctx;
use crate::cmd::args::FormatArgs;
use crate::output::{Style, escape};
use pi_ai::auth;
use pi_ai::config::Settings as LlmSettings;
use pi_ai::models::{Model, Registry};
use pi_ai::request::Wire;

#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Only models whose "PROVIDER/ID" contains TEXT (case-insensitive)
    pub search: Option<String>,
    /// Also list models without an API key configured
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// `200000` → `200K`, `1000000` → `1M`, as the reference writes token counts.
fn short(n: u64) -> String {
    let f = |x: f64, unit: &str| {
        if x.fract() == 0.0 {
            format!("{x}{unit}")
        } else {
            format!("{x:.1}{unit}")
        }
    };
    if n >= 1_000_000 {
        f(n as f64 / 1e6, "M")
    } else if n >= 1000 {
        f(n as f64 / 1e3, "K")
    } else {
        n.to_string()
    }
}

fn record(m: &Model, r: &Registry, key: Option<&str>, default: bool) -> Json {
    let d = r.details_of(&m.provider, &m.id);
    json!({
        "provider": m.provider,
        "id": m.id,
        "name": d.name.clone().unwrap_or_else(|| m.id.clone()),
        "api": m.api,
        "baseUrl": m.base_url,
        "reasoning": m.reasoning,
        "input": m.input,
        "contextWindow": m.context_window,
        "maxTokens": m.max_tokens,
        "cost": d.prices.to_json(),
        "source": m.source.as_str(),
        "key": key,
        "supported": Wire::for_api(&m.api).is_some(),
        "default": default,
    })
}

pub fn run(args: ModelsArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let registry = Registry::load(&ctx.dirs.agent_dir);
    for w in &registry.warnings {
        crate::error::warn(w);
    }
    let settings = LlmSettings::load(&ctx.dirs.agent_dir, &ctx.cwd);
    let needle = args.search.as_deref().map(str::to_lowercase);
    let mut keys: std::collections::HashMap<String, Option<String>> = Default::default();
    let mut rows: Vec<(&Model, Option<String>, bool)> = Vec::new();
    for m in &registry.models {
        if let Some(n) = &needle
            && !format!("{}/{}", m.provider, m.id)
                .to_lowercase()
                .contains(n)
        {
            continue;
        }
        let key = keys
            .entry(m.provider.clone())
            .or_insert_with(|| auth::source(&ctx.dirs.agent_dir, &registry, &m.provider))
            .clone();
        if key.is_none() && !args.all {
            continue;
        }
        let default = settings.default_provider.as_deref() == Some(m.provider.as_str())
            && settings.default_model.as_deref() == Some(m.id.as_str());
        rows.push((m, key, default));
    }
    rows.sort_by(|a, b| {
        (a.0.provider.as_str(), a.0.id.as_str()).cmp(&(b.0.provider.as_str(), b.0.id.as_str()))
    });
    if !ctx.out.human(args.format.get()) {
        for (m, key, default) in &rows {
            ctx.out
                .json(&record(m, &registry, key.as_deref(), *default))?;
        }
        return Ok(ExitStatus::Success);
    }
    if rows.is_empty() {
        crate::error::note(if args.all || needle.is_some() {
            "no models match"
        } else {
            "no models with an API key configured; `pi models --all` lists every model pi knows"
        });
        return Ok(ExitStatus::Success);
    }
    let st = Style {
        on: ctx.out.color(),
    };
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|(m, key, default)| {
            [
                escape(&m.provider).into_owned(),
                format!("{}{}", escape(&m.id), if *default { " *" } else { "" }),
                short(m.context_window),
                short(m.max_tokens),
                if m.reasoning { "yes" } else { "no" }.to_owned(),
                if m.accepts_images() { "yes" } else { "no" }.to_owned(),
                key.as_deref()
                    .map_or_else(|| "-".to_owned(), |k| escape(k).into_owned()),
            ]
        })
        .collect();
    let head = [
        "provider", "model", "context", "max-out", "thinking", "images", "key",
    ];
    let mut widths = head.map(str::len);
    for c in &cells {
        for (w, x) in widths.iter_mut().zip(c) {
            *w = (*w).max(pi_base::text::width(x));
        }
    }
    let line = |c: &[String]| {
        c.iter()
            .zip(widths)
            .map(|(x, w)| pi_base::text::pad_right(x, w))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    let head: Vec<String> = head.iter().map(|h| (*h).to_owned()).collect();
    ctx.out.line(st.bold(&line(&head)).as_bytes())?;
    for c in &cells {
        ctx.out.line(line(c).as_bytes())?;
    }
    Ok(ExitStatus::Success)
}
