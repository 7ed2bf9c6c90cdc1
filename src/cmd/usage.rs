//! `pi usage`

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::cmd::Ctx;
use crate::cmd::args::{RangeArgs, ScopeArgs};
use crate::error::ExitStatus;
use crate::output::{Style, escape};
use pi_session::usage::{self, By, FileUsage, Origin, Range, Row, Source, Tokens};

mod blocks;

#[derive(Debug, Args)]
pub struct UsageArgs {
    /// How rows are grouped
    #[arg(value_enum, default_value_t = GROUPINGS[0])]
    pub by: Grouping,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub range: RangeArgs,
    /// Days, weeks and months in this IANA time zone (such as Europe/Berlin) [default: the
    /// system's, from TZ]
    #[arg(short = 'z', long, value_name = "TZ")]
    pub timezone: Option<String>,
    /// Split each row by provider/model (on a terminal)
    #[arg(short = 'b', long)]
    pub breakdown: bool,
    /// Split each row by where its usage comes from: assistant messages, tool results,
    /// `usage` entries by kind, compactions, branch summaries (on a terminal)
    #[arg(long)]
    pub sources: bool,
    /// auto (a table on a terminal, JSON otherwise), json (one record per row, then the
    /// totals), human, or jsonl (one flat record per entry with usage: the fact table)
    #[arg(long, value_enum, default_value_t = UsageFormat::Auto, value_name = "FORMAT")]
    pub format: UsageFormat,
    /// Same as --format json
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Only the active block (blocks)
    #[arg(long, conflicts_with = "recent")]
    pub active: bool,
    /// Only the blocks of the last 3 days, and the active one (blocks)
    #[arg(long)]
    pub recent: bool,
    /// Show usage as a percentage of N tokens per block, or of the largest past block
    /// (`max`) (blocks)
    #[arg(long, value_name = "N|max", value_parser = parse_limit)]
    pub token_limit: Option<TokenLimit>,
}

/// `--token-limit`: a number of tokens, or the largest past block's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TokenLimit {
    Tokens(f64),
    Max,
}

fn parse_limit(s: &str) -> Result<TokenLimit, String> {
    if s == "max" {
        return Ok(TokenLimit::Max);
    }
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(TokenLimit::Tokens(n as f64)),
        _ => Err(format!(
            "`{s}` is not a number of tokens (above 0) or `max`"
        )),
    }
}

/// A grouping of the report: the library's [`By`] with its name and help on the command
/// line, the key of its rows in JSON and the heading of its column in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grouping {
    /// None: 5-hour blocks.
    by: Option<By>,
    name: &'static str,
    help: &'static str,
    json_key: &'static str,
    heading: &'static str,
}

/// Every grouping, the default first.
const GROUPINGS: [Grouping; 7] = [
    Grouping {
        by: Some(By::Daily),
        name: "daily",
        help: "By calendar day",
        json_key: "date",
        heading: "DATE",
    },
    Grouping {
        by: Some(By::Weekly),
        name: "weekly",
        help: "By ISO week (starting on Monday)",
        json_key: "week",
        heading: "WEEK",
    },
    Grouping {
        by: Some(By::Monthly),
        name: "monthly",
        help: "By calendar month",
        json_key: "month",
        heading: "MONTH",
    },
    Grouping {
        by: Some(By::Session),
        name: "session",
        help: "By session file",
        json_key: "sessionId",
        heading: "SESSION",
    },
    Grouping {
        by: Some(By::Model),
        name: "model",
        help: "By provider/model",
        json_key: "model",
        heading: "MODEL",
    },
    Grouping {
        by: Some(By::Project),
        name: "project",
        help: "By working directory",
        json_key: "projectPath",
        heading: "PROJECT",
    },
    Grouping {
        by: None,
        name: "blocks",
        help: "By 5-hour billing window, with the active one's burn rate and projection",
        json_key: "startTime",
        heading: "BLOCK START",
    },
];

impl ValueEnum for Grouping {
    fn value_variants<'a>() -> &'a [Self] {
        &GROUPINGS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name).help(self.help))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UsageFormat {
    Auto,
    Json,
    Human,
    Jsonl,
}

pub fn run(args: UsageArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    if args.by.by.is_some() && (args.active || args.recent || args.token_limit.is_some()) {
        return Err(crate::error::usage(
            "--active, --recent and --token-limit apply to `pi usage blocks` only",
        ));
    }
    let tz =
        pi_session::usage::dates::zone(args.timezone.as_deref()).map_err(crate::error::usage)?;
    let mut files: Vec<std::path::PathBuf> = args
        .scope
        .dirs(ctx)?
        .iter()
        .flat_map(|d| pi_session::find::jsonl_files(d))
        .collect();
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()).then_with(|| a.cmp(b)));
    let mut read: Vec<FileUsage> = Vec::with_capacity(files.len());
    let mut failed = None;
    let cache = usage::Cache::new(&ctx.dirs.agent_dir);
    let mut seen = usage::Seen::default();
    pi_base::par::ordered(
        files.len(),
        pi_base::par::threads(),
        |i, _| cache.read(&files[i]),
        |i, r| {
            match r {
                Ok(mut u) => {
                    // In file order, while later files are still being read.
                    seen.admit(&mut u);
                    read.push(u);
                }
                Err(e) => {
                    crate::error::warn(&format!("cannot read {}: {e}", files[i].display()));
                    failed = Some(());
                }
            }
            std::ops::ControlFlow::Continue(())
        },
    );
    let range = Range {
        since: args.range.since,
        until: args.range.until,
        now_ms: pi_base::clock::now_ms(),
    };
    let format = if args.json {
        UsageFormat::Json
    } else {
        args.format
    };
    let human = match format {
        UsageFormat::Human => true,
        UsageFormat::Auto => ctx.out.tty,
        _ => false,
    };
    if let Some(by) = args.by.by {
        grouped(ctx, &args, by, format, human, &read, &range, &tz)?;
    } else {
        blocks::run(ctx, &args, format, human, &read, &range, &tz)?;
    }
    Ok(if failed.is_some() {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// The report of a grouping other than blocks.
#[allow(clippy::too_many_arguments)]
fn grouped(
    ctx: &mut Ctx,
    args: &UsageArgs,
    by: By,
    format: UsageFormat,
    human: bool,
    read: &[FileUsage],
    range: &Range,
    tz: &pi_session::usage::dates::TimeZone,
) -> std::io::Result<()> {
    if format == UsageFormat::Jsonl {
        facts(ctx, read, range, tz)?;
    } else {
        let rows = usage::report(read, by, tz, range);
        if human {
            let split = Split {
                models: args.breakdown,
                origins: args.sources,
            };
            table(ctx, &rows, args.by, split)?;
        } else {
            for r in &rows {
                ctx.out.json(&row_json(r, args.by))?;
            }
            let mut totals = tokens_json(&total(&rows), "totalCost");
            totals["sourceBreakdowns"] = origins_json(&origins_of(&rows));
            ctx.out.json(&json!({ "totals": totals }))?;
        }
    }
    Ok(())
}

fn total(rows: &[Row]) -> Tokens {
    let mut t = Tokens::default();
    for r in rows {
        t.add(&r.tokens);
    }
    t
}

/// The usage of all rows by origin, in [`Origin`]'s order.
fn origins_of(rows: &[Row]) -> Vec<(Origin, Tokens)> {
    let mut all: Vec<(Origin, Tokens)> = Vec::new();
    for (o, t) in rows.iter().flat_map(|r| &r.origins) {
        match all.iter_mut().find(|(x, _)| x == o) {
            Some((_, acc)) => acc.add(t),
            None => all.push((o.clone(), *t)),
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// Where usage comes from, as JSON: `source` (`assistant`, `toolResult`, `usage`,
/// `compaction` or `branch_summary`), `kind` for `usage` entries, the numbers.
fn origins_json(origins: &[(Origin, Tokens)]) -> Value {
    Value::Array(
        origins
            .iter()
            .map(|(o, t)| {
                let mut v = json!({"source": o.source.name()});
                if let Some(k) = &o.kind {
                    v["kind"] = json!(k);
                }
                if let (Some(v), Value::Object(t)) = (v.as_object_mut(), tokens_json(t, "cost")) {
                    v.extend(t);
                }
                v
            })
            .collect(),
    )
}

/// A JavaScript number as JSON: integers without a fraction.
fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn tokens_json(t: &Tokens, cost: &str) -> Value {
    let mut v = json!({
        "inputTokens": num(t.input),
        "outputTokens": num(t.output),
        "cacheCreationTokens": num(t.cache_write),
        "cacheReadTokens": num(t.cache_read),
        "totalTokens": num(t.total),
    });
    v[cost] = num(t.cost);
    v
}

fn row_json(r: &Row, by: Grouping) -> Value {
    let mut v = serde_json::Map::new();
    v.insert(by.json_key.into(), json!(r.key));
    if let Some((path, cwd, last)) = &r.session {
        v.insert("projectPath".into(), json!(cwd));
        v.insert("path".into(), json!(path));
        v.insert("lastActivity".into(), json!(last));
    }
    if let Value::Object(t) = tokens_json(&r.tokens, "totalCost") {
        v.extend(t);
    }
    v.insert(
        "modelsUsed".into(),
        json!(r.models.iter().map(|m| &m.0).collect::<Vec<_>>()),
    );
    let breakdowns: Vec<Value> = r
        .models
        .iter()
        .map(|(m, t)| {
            let mut b = json!({"modelName": m});
            if let (Some(b), Value::Object(t)) = (b.as_object_mut(), tokens_json(t, "cost")) {
                b.extend(t);
            }
            b
        })
        .collect();
    v.insert("modelBreakdowns".into(), Value::Array(breakdowns));
    v.insert("sourceBreakdowns".into(), origins_json(&r.origins));
    Value::Object(v)
}

/// `--format jsonl`: one record per counted entry with usage.
fn facts(
    ctx: &mut Ctx,
    files: &[FileUsage],
    range: &Range,
    tz: &pi_session::usage::dates::TimeZone,
) -> std::io::Result<()> {
    let mut days = usage::Days::new(tz);
    for f in files {
        for x in &f.facts {
            if !range.admits(x.ms, days.of(x.ms), tz) {
                continue;
            }
            ctx.out.json(&fact_json(f, x))?;
        }
    }
    Ok(())
}

/// One record of the fact table.
fn fact_json(f: &FileUsage, x: &usage::Fact) -> Value {
    let model = f.model(x);
    let origin = f.origin(x);
    let mut v = json!({
        "session": f.session, "path": f.path, "cwd": f.cwd, "entryId": f.entry_id(x),
        "timestamp": x.timestamp.as_str(),
        "source": origin.map_or(Source::Assistant, |o| o.source).name(),
        "kind": origin.and_then(|o| o.kind.as_deref()),
        "provider": model.and_then(|m| m.provider.as_deref()),
        "model": model.and_then(|m| m.model.as_deref()),
        "responseModel": model.and_then(|m| m.response.as_deref()),
    });
    if let (Some(o), Value::Object(t)) = (v.as_object_mut(), tokens_json(&x.tokens, "cost")) {
        o.extend(t);
        o.insert("stopReason".into(), json!(f.stop_reason(x)));
    }
    v
}

fn thousands(x: f64) -> String {
    let s = format!("{:.0}", x);
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

fn money(x: f64) -> String {
    let cents = format!("{:.2}", x);
    let (whole, frac) = cents.split_once('.').unwrap_or((&cents, "00"));
    format!("${}.{frac}", thousands(whole.parse().unwrap_or(0.0)))
}

fn cells(label: String, t: &Tokens) -> Vec<String> {
    vec![
        label,
        thousands(t.input),
        thousands(t.output),
        thousands(t.cache_write),
        thousands(t.cache_read),
        thousands(t.total),
        money(t.cost),
    ]
}

/// Which sub-rows the table shows under each row.
#[derive(Clone, Copy)]
struct Split {
    models: bool,
    origins: bool,
}

/// The label of a sub-row of the usage of `o`.
fn origin_label(o: &Origin) -> String {
    format!("  {}", escape(&o.key()))
}

fn table(ctx: &mut Ctx, rows: &[Row], by: Grouping, split: Split) -> std::io::Result<()> {
    let st = Style {
        on: ctx.out.color(),
    };
    if rows.is_empty() {
        crate::error::note("no usage found");
        return Ok(());
    }
    let head: Vec<String> = [
        by.heading,
        "INPUT",
        "OUTPUT",
        "CACHE WRITE",
        "CACHE READ",
        "TOTAL TOKENS",
        "COST",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut body: Vec<(Vec<String>, bool)> = Vec::new();
    // Sessions by their short ids, which tell them apart and resolve (`-s`).
    let short = if rows.iter().any(|r| r.session.is_some()) {
        pi_session::find::ShortIds::of_all(&ctx.dirs)
    } else {
        pi_session::find::ShortIds::default()
    };
    for r in rows {
        let label = match &r.session {
            Some((_, cwd, last)) => format!("{} {} {}", last, short.get(&r.key), cwd),
            None => r.key.clone(),
        };
        body.push((cells(escape(&label).into_owned(), &r.tokens), false));
        if split.models {
            for (m, t) in &r.models {
                body.push((cells(format!("  {}", escape(m)), t), true));
            }
        }
        if split.origins {
            for (o, t) in &r.origins {
                body.push((cells(origin_label(o), t), true));
            }
        }
    }
    let mut foot = vec![(cells("TOTAL".into(), &total(rows)), false)];
    // Where the total comes from, whenever it is more than assistant messages (all that
    // ccusage counts): the figures to reconcile it with.
    let origins = origins_of(rows);
    if origins.iter().any(|(o, _)| o.source != Source::Assistant) {
        foot.extend(
            origins
                .iter()
                .map(|(o, t)| (cells(origin_label(o), t), true)),
        );
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|c| {
            std::iter::once(&head)
                .chain(body.iter().chain(&foot).map(|(r, _)| r))
                .map(|r| pi_base::text::width(&r[c]))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let fmt = |r: &[String]| {
        r.iter()
            .enumerate()
            .map(|(c, s)| {
                if c == 0 {
                    pi_base::text::pad_right(s, widths[0])
                } else {
                    pi_base::text::pad_left(s, widths[c])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    ctx.out.line(st.bold(&fmt(&head)).as_bytes())?;
    for (r, sub) in &body {
        let line = fmt(r);
        ctx.out
            .line(if *sub { st.dim(&line) } else { line }.as_bytes())?;
    }
    for (r, sub) in &foot {
        let line = fmt(r);
        ctx.out
            .line(if *sub { st.dim(&line) } else { st.bold(&line) }.as_bytes())?;
    }
    Ok(())
}
