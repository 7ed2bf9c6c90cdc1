//! `pi context stats`

use clap::Args;

use super::{open, parse_model_arg, registry};
use crate::cmd::{Ctx, FormatArgs};
use crate::context::settings::{DEFAULT_RESERVE_TOKENS, Settings};
use crate::context::tokens;
use crate::context::value::{Obj, Value};
use crate::error::{Exit, USAGE};
use crate::output::Style;

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The session [default: the most recent one of the current directory]
    pub session: Option<String>,
    /// Measure the context of the path to this entry (id or unique prefix) instead of the leaf
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// The model's context window in tokens [default: from models.json or the built-in table
    /// for the model]
    #[arg(long, value_name = "N")]
    pub context_window: Option<u64>,
    /// Tokens kept free below the window [default: compaction.reserveTokens from
    /// settings.json, else 16384]
    #[arg(long, value_name = "N")]
    pub reserve_tokens: Option<u64>,
    /// Take the context window of this model, as PROVIDER/ID [default: the model in effect
    /// at the end of the path]
    #[arg(long, value_name = "PROVIDER/ID")]
    pub model: Option<String>,
    #[command(flatten)]
    pub format: FormatArgs,
}

fn num(n: f64) -> Value {
    Value::Num(n)
}

fn no_window(what: String) -> anyhow::Error {
    Exit::new(USAGE, anyhow::anyhow!("{what}"))
        .hint("pass the window with --context-window N (e.g. --context-window 200000), or --model PROVIDER/ID, or define the model in models.json")
        .into()
}

/// `1234567` → `1,234,567`.
fn thousands(n: f64) -> String {
    if !n.is_finite() {
        return format!("{n}");
    }
    let neg = n < 0.0;
    let s = format!("{}", n.abs().round() as u128);
    let mut out = String::new();
    for (k, c) in s.chars().enumerate() {
        if k > 0 && (s.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if neg { format!("-{out}") } else { out }
}

pub fn run(args: StatsArgs, ctx: &mut Ctx) -> anyhow::Result<u8> {
    let model_arg = args.model.as_deref().map(parse_model_arg).transpose()?;
    let o = open(ctx, args.session.as_deref(), args.leaf.as_deref())?;
    let info = &o.plan.info;
    let settings = Settings::load(&ctx.dirs.agent_dir, &ctx.cwd);
    for w in &settings.warnings {
        crate::error::warn(w);
    }
    // The model and its window.
    let model = model_arg.clone().or_else(|| info.model_ids());
    let (window, window_from) = match args.context_window {
        Some(0) => return Err(crate::error::usage("--context-window must be positive")),
        Some(w) => (w, "--context-window".to_owned()),
        None => {
            let Some((p, id)) = &model else {
                return Err(no_window(
                    "no context window: the path has no model (no assistant message or model change)"
                        .into(),
                ));
            };
            let reg = registry(ctx);
            match reg.find(p, id) {
                Some(m) if m.context_window > 0 => (m.context_window, m.source.as_str().to_owned()),
                _ => {
                    return Err(no_window(format!(
                        "no context window known for model {p}/{id} (not in models.json or the built-in table)"
                    )));
                }
            }
        }
    };
    let (reserve, reserve_from) = match (args.reserve_tokens, settings.reserve_tokens) {
        (Some(r), _) => (r, "--reserve-tokens"),
        (None, Some(r)) => (r, "settings"),
        (None, None) => (DEFAULT_RESERVE_TOKENS, "default"),
    };
    // The measurements, one message at a time.
    let mut meter = tokens::Meter::default();
    let mut role_list: Vec<(String, u64)> = Vec::new();
    let mut usage_entry: Option<u32> = None;
    o.each(|m| {
        let r = m
            .value
            .get("role")
            .and_then(Value::as_jstr)
            .map_or_else(|| "(none)".to_owned(), |r| r.text().into_owned());
        match role_list.iter_mut().find(|(x, _)| *x == r) {
            Some((_, n)) => *n += 1,
            None => role_list.push((r, 1)),
        }
        if tokens::usable_usage(&m.value).is_some() {
            usage_entry = Some(m.entry);
        }
        meter.add(&m.value, m.after_compaction);
        Ok(())
    })?;
    let est = meter.estimate();
    let estimated = meter.estimated;
    let messages = meter.messages;
    let stale = info.compaction.is_some() && !meter.reported_after_compaction();
    let should =
        !stale && tokens::should_compact(est.tokens, window, reserve, settings.compaction_enabled);
    let threshold = window as f64 - reserve as f64;
    let percent = est.tokens / window as f64 * 100.0;
    let mut roles = Obj::new();
    for (r, n) in &role_list {
        roles.set(r, num(*n as f64));
    }
    let leaf_id = match &args.leaf {
        Some(l) => o.session.resolve_entry(l).ok().map(|i| o.id(i)),
        None => o.session.leaf().map(|i| o.id(i)),
    };
    let usage_entry = usage_entry.map(|i| o.id(i));
    let usage = meter.usage().cloned();
    let mut rec = Obj::new();
    rec.set(
        "leaf",
        leaf_id.clone().map_or(Value::Null, |l| Value::str(&l)),
    );
    rec.set("pathEntries", num(info.path_len as f64));
    rec.set("messages", num(messages as f64));
    rec.set("roles", Value::Obj(roles));
    rec.set("model", info.model.clone().unwrap_or(Value::Null));
    rec.set("estimatedTokens", num(estimated as f64));
    rec.set("tokens", num(est.tokens));
    rec.set("usageTokens", num(est.usage_tokens));
    rec.set(
        "usageFrom",
        est.rule.map_or(Value::Null, |r| Value::str(r.as_str())),
    );
    rec.set("trailingTokens", num(est.trailing_tokens as f64));
    rec.set(
        "lastUsageIndex",
        est.last_usage_index.map_or(Value::Null, |k| num(k as f64)),
    );
    rec.set(
        "lastUsageEntryId",
        usage_entry.clone().map_or(Value::Null, |i| Value::str(&i)),
    );
    rec.set("usage", usage.clone().unwrap_or(Value::Null));
    rec.set("usageStale", Value::Bool(stale));
    rec.set("contextWindow", num(window as f64));
    rec.set("contextWindowFrom", Value::str(&window_from));
    if let Some((p, id)) = model_arg
        .as_ref()
        .or(model.as_ref())
        .filter(|_| args.context_window.is_none())
    {
        rec.set("contextWindowModel", Value::str(&format!("{p}/{id}")));
    }
    rec.set("reserveTokens", num(reserve as f64));
    rec.set("reserveTokensFrom", Value::str(reserve_from));
    rec.set(
        "compactionEnabled",
        Value::Bool(settings.compaction_enabled),
    );
    rec.set("threshold", num(threshold));
    rec.set("percent", num(percent));
    rec.set("shouldCompact", Value::Bool(should));
    if !ctx.out.human(args.format.get()) {
        ctx.out.line(&Value::Obj(rec).to_json())?;
        return Ok(0);
    }
    // The human summary.
    let st = Style {
        on: ctx.out.color(),
    };
    let w = |out: &mut crate::output::Out, label: &str, text: String| {
        out.line(format!("{} {text}", st.bold(&format!("{label:<9}"))).as_bytes())
    };
    let roles_text = role_list
        .iter()
        .map(|(r, n)| format!("{n} {r}"))
        .collect::<Vec<_>>()
        .join(", ");
    w(
        &mut ctx.out,
        "context",
        format!(
            "leaf {} ({} entries on the path{})",
            leaf_id.as_deref().unwrap_or("(none)"),
            thousands(info.path_len as f64),
            if info.compaction.is_some() {
                ", compacted"
            } else {
                ""
            }
        ),
    )?;
    w(
        &mut ctx.out,
        "messages",
        if roles_text.is_empty() {
            "0".into()
        } else {
            format!("{messages}: {roles_text}")
        },
    )?;
    let tokens_text = match (est.last_usage_index, est.rule) {
        (Some(_), Some(rule)) => format!(
            "{} = {} reported ({} of entry {}) + {} estimated for {} later message{}",
            thousands(est.tokens),
            thousands(est.usage_tokens),
            rule.as_str(),
            usage_entry.as_deref().unwrap_or("?"),
            thousands(est.trailing_tokens as f64),
            messages - est.last_usage_index.unwrap_or(0) - 1,
            if messages - est.last_usage_index.unwrap_or(0) - 1 == 1 {
                ""
            } else {
                "s"
            }
        ),
        _ => format!(
            "{} estimated (no usage reported on the path)",
            thousands(est.tokens)
        ),
    };
    w(&mut ctx.out, "tokens", tokens_text)?;
    w(
        &mut ctx.out,
        "estimate",
        format!(
            "{} (characters / 4, every message)",
            thousands(estimated as f64)
        ),
    )?;
    let model_text = match (&args.context_window, model_arg.as_ref().or(model.as_ref())) {
        (None, Some((p, id))) => format!("{p}/{id}, {window_from}"),
        _ => window_from.clone(),
    };
    w(
        &mut ctx.out,
        "window",
        format!(
            "{} ({model_text}) − reserve {} ({reserve_from}) = threshold {}",
            thousands(window as f64),
            thousands(reserve as f64),
            thousands(threshold)
        ),
    )?;
    let verdict = if !settings.compaction_enabled {
        "no: compaction is disabled in settings".to_owned()
    } else if stale {
        "no: no reply since the latest compaction, the reported usage predates it".to_owned()
    } else if should {
        format!(
            "{}: {} > {} ({:.1}% of the window)",
            st.yellow("yes"),
            thousands(est.tokens),
            thousands(threshold),
            percent
        )
    } else {
        format!(
            "no: {} ≤ {} ({:.1}% of the window)",
            thousands(est.tokens),
            thousands(threshold),
            percent
        )
    };
    w(&mut ctx.out, "compact", verdict)?;
    Ok(0)
}
