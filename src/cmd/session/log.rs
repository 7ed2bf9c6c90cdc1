//! `pi session log`

use crate::error::ExitStatus;
use anyhow::Context;
use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::{READ_SESSION_HELP, SessionArg};
use crate::error::usage;
use crate::jq;
use pi_base::json;
use pi_session::scan::NoVisit;
use pi_session::{Kind, Session};

#[derive(Debug, Args)]
#[command(
    mut_arg("session", |a| a.help(READ_SESSION_HELP)),
    mut_arg("arg", jq_variable),
    mut_arg("argjson", jq_variable)
)]
pub struct LogArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Follow the path to this entry (id or unique prefix) instead of the session's leaf
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub leaf: Option<String>,
    /// Every entry of every branch, in file order
    #[arg(long)]
    pub all: bool,
    /// Only the N entries nearest the leaf (the last N of --all), after --type and --filter
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    pub max_count: Option<usize>,
    /// Leaf first
    #[arg(long)]
    pub reverse: bool,
    /// Only entries of these types (comma-separated or repeated), e.g. message,compaction
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',')]
    pub types: Vec<String>,
    /// Run this jq program on each entry and print its outputs instead of the entry
    #[arg(long, value_name = "JQ")]
    pub filter: Option<String>,
    /// With --filter, print strings without quotes
    #[arg(short = 'r', long, requires = "filter")]
    pub raw_output: bool,
    /// With --filter, run the program once, on an array of the selected entries (after
    /// --type and -n), instead of on each entry
    #[arg(long, requires = "filter")]
    pub slurp: bool,
    /// With --filter, set $NAME to the string VALUE (repeatable)
    #[arg(long = "arg", value_names = ["NAME", "VALUE"])]
    pub arg: Vec<String>,
    /// With --filter, set $NAME to the JSON value JSON (repeatable)
    #[arg(long = "argjson", value_names = ["NAME", "JSON"])]
    pub argjson: Vec<String>,
    /// Compact output, as jq's -c: accepted for habit's sake, the output is always one
    /// value per line
    #[arg(short = 'c', long)]
    pub compact_output: bool,
}

/// What `--arg` and `--argjson` share: a name and a value each time, repeatable, values
/// that may start with `-`, only with `--filter`.
fn jq_variable(a: clap::Arg) -> clap::Arg {
    a.num_args(2)
        .action(clap::ArgAction::Append)
        .allow_hyphen_values(true)
        .requires("filter")
}

/// The filter of `--filter`, with the variables of `--arg` and `--argjson`.
fn compile(args: &LogArgs) -> anyhow::Result<Option<jq::Filter>> {
    let Some(code) = &args.filter else {
        return Ok(None);
    };
    let mut globals = jq::Globals::default();
    for pair in args.arg.chunks(2) {
        if let [name, value] = pair {
            globals.arg(name, value);
        }
    }
    for pair in args.argjson.chunks(2) {
        if let [name, json] = pair {
            globals
                .argjson(name, json)
                .map_err(|e| usage(format!("--argjson {name}: {e}")))?;
        }
    }
    let f = jq::Filter::with_globals(code, &globals)
        .map_err(|e| usage(format!("invalid --filter program: {e}")))?;
    Ok(Some(f))
}

/// The entries to print, in file order: the path (or all), of the types asked for. The
/// second value says that a type not known to pi was asked for (`other` entries are then
/// kept, to be checked line by line).
fn select(args: &LogArgs, s: &Session) -> anyhow::Result<(Vec<u32>, bool)> {
    let mut order: Vec<u32> = if args.all {
        (0..s.entries.len() as u32).collect()
    } else {
        let leaf = match &args.leaf {
            Some(l) => Some(s.resolve_entry(l)?),
            None => s.leaf(),
        };
        leaf.map(|l| s.path_to(l)).unwrap_or_default()
    };
    let types = &args.types;
    let unknown = types
        .iter()
        .any(|t| !Kind::ALL.iter().any(|k| k.as_str() == t));
    if !types.is_empty() {
        order.retain(|&i| {
            let k = s.entries[i as usize].kind;
            (unknown && k == Kind::Other) || types.iter().any(|t| t == k.as_str())
        });
    }
    Ok((order, unknown))
}

pub fn run(args: LogArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let filter = compile(&args)?;
    let source = ctx.session_source(args.session.get()?)?;
    let (s, _) = ctx.open_source(source, NoVisit)?;
    let (mut order, any_unknown_type) = select(&args, &s)?;
    // The common case, entries as stored: copy whole runs of lines.
    if filter.is_none() && !any_unknown_type && s.is_current() {
        if let Some(n) = args.max_count {
            order.drain(..order.len().saturating_sub(n));
        }
        if args.reverse {
            order.reverse();
            let out = &mut ctx.out;
            s.for_each_line(&order, |_, line| out.line(&text(line)))?;
        } else {
            for (start, end) in s.byte_runs(&order) {
                ctx.out.copy_text_range(s.file(), start, end)?;
            }
        }
        return Ok(ExitStatus::Success);
    }
    let failures = match filter.as_ref().filter(|_| args.slurp) {
        Some(f) => slurp(&args, &s, order, f, any_unknown_type, ctx),
        None => line_by_line(&args, &s, order, filter.as_ref(), any_unknown_type, ctx),
    }
    .with_context(|| format!("cannot read {}", s.path.display()))?;
    Ok(if failures > 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Prints the entries of `order` one line at a time (through `--filter`, checking the type
/// of `other` entries); returns how many entries the filter failed on.
fn line_by_line(
    args: &LogArgs,
    s: &Session,
    mut order: Vec<u32>,
    filter: Option<&jq::Filter>,
    any_unknown_type: bool,
    ctx: &mut Ctx,
) -> std::io::Result<usize> {
    // With -n, walk from the leaf side and stop after N selected entries.
    let from_leaf = args.max_count.is_some();
    if from_leaf || args.reverse {
        order.reverse();
    }
    let limit = args.max_count.unwrap_or(usize::MAX);
    let mut selected = 0usize;
    let mut collected: Vec<Vec<u8>> = Vec::new();
    let mut failures = 0usize;
    let out = &mut ctx.out;
    let result = s.for_each_line(&order, |i, line| {
        if selected >= limit {
            return Err(std::io::Error::other(Stop));
        }
        if any_unknown_type && s.entries[i as usize].kind == Kind::Other {
            let t = json::get_str(&line[json::skip_ws(line, 0)..], "type");
            if !t.is_some_and(|t| args.types.iter().any(|x| *x == t)) {
                return Ok(());
            }
        }
        let mut produced: Vec<u8> = Vec::new();
        match filter {
            None => {
                produced.extend_from_slice(&text(line));
                produced.push(b'\n');
            }
            Some(f) => {
                let rec = &s.entries[i as usize];
                if let Err(e) = apply(f, line, args.raw_output, &mut produced)? {
                    failures += 1;
                    crate::error::warn(&format!(
                        "--filter failed on entry {} (line {}): {}",
                        pi_base::text::escape(rec.id.as_str()),
                        rec.line,
                        pi_base::text::escape(&e.to_string())
                    ));
                }
            }
        }
        if produced.is_empty() {
            return Ok(());
        }
        selected += 1;
        if from_leaf {
            collected.push(produced);
            Ok(())
        } else {
            out.write_all(&produced)
        }
    });
    match result {
        Ok(()) => {}
        Err(e) if e.get_ref().is_some_and(|r| r.is::<Stop>()) => {}
        Err(e) => return Err(e),
    }
    if from_leaf {
        if !args.reverse {
            collected.reverse();
        }
        for c in &collected {
            ctx.out.write_all(c)?;
        }
    }
    Ok(failures)
}

/// `--slurp`: runs the filter once on the array of the selected entries (the N nearest the
/// leaf with -n, leaf first with --reverse); returns how many entries could not be given to
/// it, or 1 when the filter failed.
fn slurp(
    args: &LogArgs,
    s: &Session,
    mut order: Vec<u32>,
    filter: &jq::Filter,
    any_unknown_type: bool,
    ctx: &mut Ctx,
) -> std::io::Result<usize> {
    if any_unknown_type {
        let mut keep = Vec::with_capacity(order.len());
        s.for_each_line(&order, |i, line| {
            if s.entries[i as usize].kind != Kind::Other
                || json::get_str(&line[json::skip_ws(line, 0)..], "type")
                    .is_some_and(|t| args.types.iter().any(|x| *x == t))
            {
                keep.push(i);
            }
            Ok(())
        })?;
        order = keep;
    }
    if let Some(n) = args.max_count {
        order.drain(..order.len().saturating_sub(n));
    }
    if args.reverse {
        order.reverse();
    }
    let mut values = Vec::with_capacity(order.len());
    let mut failures = 0usize;
    s.for_each_line(&order, |i, line| {
        let depth = json::validate(line).map(|v| v.2).unwrap_or(0);
        let value = if depth > jq::MAX_DEPTH {
            Err(format!("nested deeper than {} levels", jq::MAX_DEPTH))
        } else {
            jq::parse(line)
        };
        match value {
            Ok(v) => values.push(v),
            Err(e) => {
                failures += 1;
                let rec = &s.entries[i as usize];
                crate::error::warn(&format!(
                    "entry {} (line {}) left out of --slurp: {e}",
                    rec.id, rec.line
                ));
            }
        }
        Ok(())
    })?;
    match filter.run_value(jq::array(values)) {
        Ok(outputs) => {
            for v in &outputs {
                let mut produced = Vec::new();
                jq::write(&mut produced, v, args.raw_output)?;
                ctx.out.write_all(&produced)?;
            }
        }
        Err(e) => {
            failures += 1;
            crate::error::warn(&format!("--filter failed on the slurped entries: {e}"));
        }
    }
    Ok(failures)
}

/// Runs the filter on one entry line, writing its outputs (the line itself when the
/// filter returns its input unchanged). `Ok(Err(_))`: the filter failed on this entry.
fn apply(
    f: &jq::Filter,
    line: &[u8],
    raw: bool,
    produced: &mut Vec<u8>,
) -> std::io::Result<Result<(), String>> {
    let depth = json::validate(line).map(|v| v.2).unwrap_or(0);
    let res = if depth > jq::MAX_DEPTH {
        Err(format!("nested deeper than {} levels", jq::MAX_DEPTH))
    } else {
        f.run(line)
    };
    match res {
        Ok((input, outputs)) => {
            if outputs.len() == 1 && outputs[0] == input && !raw {
                produced.extend_from_slice(&text(line));
                produced.push(b'\n');
            } else {
                for v in &outputs {
                    jq::write(produced, v, raw)?;
                }
            }
            Ok(Ok(()))
        }
        Err(e) => Ok(Err(e)),
    }
}

/// An entry line as printed: bytes that are not UTF-8 become U+FFFD (as the reference
/// reads them), so the output is always valid JSONL.
fn text(line: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match String::from_utf8_lossy(line) {
        std::borrow::Cow::Borrowed(_) => std::borrow::Cow::Borrowed(line),
        std::borrow::Cow::Owned(s) => std::borrow::Cow::Owned(s.into_bytes()),
    }
}

#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stop")
    }
}

impl std::error::Error for Stop {}
