//! `pi usage blocks`: usage in 5-hour billing windows.

use serde_json::{Value, json};

use super::{TokenLimit, UsageArgs, UsageFormat, fact_json, money, num, thousands, tokens_json};
use crate::cmd::Ctx;
use crate::output::{Style, escape};
use pi_base::clock::format_iso;
use pi_session::usage::blocks::{self as b, Block};
use pi_session::usage::dates::{self, TimeZone};
use pi_session::usage::{FileUsage, Range, Tokens};

/// The days `--recent` looks back.
const RECENT_DAYS: i64 = 3;

/// Above this share of the limit, the active block's projection is a warning (as ccusage).
const WARNING_SHARE: f64 = 0.8;

pub(super) fn run(
    ctx: &mut Ctx,
    args: &UsageArgs,
    format: UsageFormat,
    human: bool,
    files: &[FileUsage],
    range: &Range,
    tz: &TimeZone,
) -> std::io::Result<()> {
    let now = range.now_ms;
    let mut all = b::blocks(files, range, tz);
    // The largest block that is over, before --recent or --active leave any out.
    let limit = match args.token_limit {
        None => None,
        Some(TokenLimit::Tokens(n)) => Some(n),
        Some(TokenLimit::Max) => all
            .iter()
            .filter(|x| !x.is_gap && !x.is_active)
            .map(|x| x.tokens.total)
            .reduce(f64::max)
            .filter(|&m| m > 0.0),
    };
    if args.active {
        all.retain(|x| x.is_active);
    } else if args.recent {
        let cutoff = now - RECENT_DAYS * 86_400_000;
        all.retain(|x| x.start_ms >= cutoff || x.is_active);
    }
    if format == UsageFormat::Jsonl {
        for x in &all {
            for &(fi, xi) in &x.facts {
                if let Some((f, fact)) = files.get(fi).and_then(|f| Some((f, f.facts.get(xi)?))) {
                    let mut v = fact_json(f, fact);
                    v["block"] = json!(format_iso(x.start_ms));
                    ctx.out.json(&v)?;
                }
            }
        }
        return Ok(());
    }
    if human {
        if args.active && all.is_empty() {
            crate::error::note("no active block");
            return Ok(());
        }
        return table(ctx, &all, limit, now, tz);
    }
    let mut total = Tokens::default();
    for x in &all {
        total.add(&x.tokens);
        ctx.out.json(&block_json(x, limit, now))?;
    }
    let mut totals = tokens_json(&total, "totalCost");
    let origins: Vec<_> = {
        let mut acc: Vec<(pi_session::usage::Origin, Tokens)> = Vec::new();
        for (o, t) in all.iter().flat_map(|x| &x.origins) {
            match acc.iter_mut().find(|(a, _)| a == o) {
                Some((_, a)) => a.add(t),
                None => acc.push((o.clone(), *t)),
            }
        }
        acc.sort_by(|a, c| a.0.cmp(&c.0));
        acc
    };
    totals["sourceBreakdowns"] = super::origins_json(&origins);
    ctx.out.json(&json!({ "totals": totals }))
}

/// The JSON record of a block.
fn block_json(x: &Block, limit: Option<f64>, now: i64) -> Value {
    let start = format_iso(x.start_ms);
    let mut v = json!({
        "id": if x.is_gap { format!("gap-{start}") } else { start.clone() },
        "startTime": start,
        "endTime": format_iso(x.end_ms),
        "actualEndTime": x.last_ms.map(format_iso),
        "isActive": x.is_active,
        "isGap": x.is_gap,
        "entries": x.entries,
    });
    if let (Some(o), Value::Object(t)) = (v.as_object_mut(), tokens_json(&x.tokens, "totalCost")) {
        o.extend(t);
    }
    v["models"] = json!(x.models.iter().map(|m| &m.0).collect::<Vec<_>>());
    v["modelBreakdowns"] = Value::Array(
        x.models
            .iter()
            .map(|(m, t)| {
                let mut b = json!({"modelName": m});
                if let (Some(b), Value::Object(t)) = (b.as_object_mut(), tokens_json(t, "cost")) {
                    b.extend(t);
                }
                b
            })
            .collect(),
    );
    v["sourceBreakdowns"] = super::origins_json(&x.origins);
    let rate = x.is_active.then(|| x.burn_rate()).flatten();
    v["burnRate"] = rate.map_or(Value::Null, |r| {
        json!({
            "tokensPerMinute": num(r.tokens_per_minute),
            "tokensPerMinuteForIndicator": num(r.io_tokens_per_minute),
            "costPerHour": num(r.cost_per_hour),
        })
    });
    let projection = x.projection(now);
    v["projection"] = projection.map_or(Value::Null, |p| {
        json!({
            "totalTokens": num(p.total_tokens),
            "totalCost": num(p.total_cost),
            "remainingMinutes": num(p.remaining_minutes),
        })
    });
    if let (Some(limit), Some(p)) = (limit, projection) {
        let percent = p.total_tokens / limit * 100.0;
        v["tokenLimitStatus"] = json!({
            "limit": num(limit),
            "projectedUsage": num(p.total_tokens),
            "percentUsed": num(percent),
            "status": status(percent),
        });
    }
    v
}

/// How a projection stands to the limit: `ok`, `warning` (above 80 %) or `exceeds`.
fn status(percent: f64) -> &'static str {
    if percent > 100.0 {
        "exceeds"
    } else if percent > WARNING_SHARE * 100.0 {
        "warning"
    } else {
        "ok"
    }
}

/// `2h 05m`.
fn span(ms: i64) -> String {
    let minutes = ms.max(0) / 60_000;
    format!("{}h {:02}m", minutes / 60, minutes % 60)
}

/// Tokens per minute: with a decimal under 10.
fn rate(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.1}")
    } else {
        thousands(x)
    }
}

fn percent(tokens: f64, limit: f64) -> String {
    format!("{:.0}%", tokens / limit * 100.0)
}

/// How a row of the table is drawn.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Block,
    Active,
    Sub,
    Gap,
    Total,
}

/// The columns: start, status, tokens, [% of the limit], cost, models (last, cut or left
/// out to fit the terminal).
fn table(
    ctx: &mut Ctx,
    all: &[Block],
    limit: Option<f64>,
    now: i64,
    tz: &TimeZone,
) -> std::io::Result<()> {
    let st = Style {
        on: ctx.out.color(),
    };
    if all.is_empty() {
        crate::error::note("no usage found");
        return Ok(());
    }
    let rows = rows_of(all, limit, now, tz);
    let mut head: Vec<String> = ["BLOCK START", "STATUS", "MODELS", "TOKENS", "%", "COST"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // Models last; without a limit, no percentage column.
    let keep: Vec<usize> = [0, 1, 3, 4, 5, 2]
        .into_iter()
        .filter(|&c| c != 4 || limit.is_some())
        .collect();
    let pick = |r: &[String]| -> Vec<String> {
        keep.iter()
            .map(|&c| r.get(c).cloned().unwrap_or_default())
            .collect()
    };
    head = pick(&head);
    let rows: Vec<(Vec<String>, Kind)> = rows.into_iter().map(|(r, k)| (pick(&r), k)).collect();
    let mut widths: Vec<usize> = (0..head.len())
        .map(|c| {
            std::iter::once(&head)
                .chain(rows.iter().filter(|(_, k)| *k != Kind::Gap).map(|(r, _)| r))
                .map(|r| r.get(c).map_or(0, |s| pi_base::text::width(s)))
                .max()
                .unwrap_or(0)
        })
        .collect();
    // The models column gives way to the terminal's width, and goes when under 8 columns.
    let width = crate::output::term_width();
    let m = widths.len() - 1;
    let others: usize = widths[..m].iter().map(|w| w + 2).sum();
    let room = width.saturating_sub(others);
    widths[m] = widths[m].min(room);
    let cols = if widths[m] < 8 { m } else { m + 1 };
    let fmt = |r: &[String]| {
        let line = r
            .iter()
            .take(cols)
            .enumerate()
            .map(|(c, s)| {
                let w = widths.get(c).copied().unwrap_or(0);
                if c < 2 || c == m {
                    pi_base::text::pad_right(&pi_base::text::truncate(s, w), w)
                } else {
                    pi_base::text::pad_left(s, w)
                }
            })
            .collect::<Vec<_>>()
            .join("  ");
        pi_base::text::truncate(line.trim_end(), width)
    };
    ctx.out.line(st.bold(&fmt(&head)).as_bytes())?;
    for (r, kind) in &rows {
        let line = match kind {
            Kind::Gap => {
                let start = pi_base::text::pad_right(&r[0], widths[0]);
                pi_base::text::truncate(&format!("{start}  {}", r[1]), width)
            }
            _ => fmt(r),
        };
        let line = match kind {
            Kind::Block => line,
            Kind::Active => st.green(&line),
            Kind::Sub | Kind::Gap => st.dim(&line),
            Kind::Total => st.bold(&line),
        };
        ctx.out.line(line.as_bytes())?;
    }
    Ok(())
}

/// The rows of the table (each with the columns start, status, models, tokens, %, cost; a
/// gap's with the first two).
fn rows_of(all: &[Block], limit: Option<f64>, now: i64, tz: &TimeZone) -> Vec<(Vec<String>, Kind)> {
    let pct = |t: f64| limit.map(|l| percent(t, l)).unwrap_or_default();
    let local = |ms: i64| dates::local_minute(ms, tz).unwrap_or_else(|| format_iso(ms));
    let mut rows: Vec<(Vec<String>, Kind)> = Vec::new();
    let mut total = Tokens::default();
    for x in all {
        total.add(&x.tokens);
        if x.is_gap {
            let label = format!("({} gap)", span(x.end_ms - x.start_ms));
            rows.push((vec![local(x.start_ms), label], Kind::Gap));
            continue;
        }
        let models = x
            .models
            .iter()
            .map(|m| escape(&m.0).into_owned())
            .collect::<Vec<_>>()
            .join(", ");
        let status = if x.is_active {
            format!("ACTIVE, {} left", span(x.end_ms - now))
        } else {
            span(x.last_ms.unwrap_or(x.start_ms) - x.start_ms)
        };
        let kind = if x.is_active {
            Kind::Active
        } else {
            Kind::Block
        };
        rows.push((
            vec![
                local(x.start_ms),
                status,
                models,
                thousands(x.tokens.total),
                pct(x.tokens.total),
                money(x.tokens.cost),
            ],
            kind,
        ));
        if !x.is_active {
            continue;
        }
        if let Some(r) = x.burn_rate() {
            rows.push((
                vec![
                    "  burn rate".into(),
                    String::new(),
                    String::new(),
                    format!("{}/min", rate(r.tokens_per_minute)),
                    String::new(),
                    format!("{}/h", money(r.cost_per_hour)),
                ],
                Kind::Sub,
            ));
        }
        if let Some(p) = x.projection(now) {
            rows.push((
                vec![
                    "  projected".into(),
                    format!("by {}", local(x.end_ms)),
                    String::new(),
                    thousands(p.total_tokens),
                    pct(p.total_tokens),
                    money(p.total_cost),
                ],
                Kind::Sub,
            ));
        }
    }
    rows.push((
        vec![
            "TOTAL".into(),
            String::new(),
            String::new(),
            thousands(total.total),
            String::new(),
            money(total.cost),
        ],
        Kind::Total,
    ));
    rows
}
