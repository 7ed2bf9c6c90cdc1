//! `pi session search`

use std::ops::ControlFlow;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::cmd::Ctx;
use crate::cmd::args::{FormatArgs, RangeArgs, ScopeArgs, newest_first};
use crate::error::ExitStatus;
use crate::output::{Style, escape};
use pi_session::search::{self, Hit, Query, Role};

pub const EXIT_STATUS: &str = "\
Exit status:
  0  something matched
  1  nothing matched, or a session could not be read
  2  usage error (an invalid pattern or date)";

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The text to look for (a regular expression with --regex)
    pub pattern: String,
    /// Search these sessions (paths, ids or id prefixes) instead of a directory's
    #[arg(value_name = "SESSION", conflicts_with_all = ["all", "cwd"])]
    pub sessions: Vec<String>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// PATTERN is a regular expression (Rust regex syntax)
    #[arg(short = 'e', long)]
    pub regex: bool,
    /// Ignore case (Unicode case folding)
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Only messages of this role; repeatable
    #[arg(long, value_enum, value_name = "ROLE")]
    pub role: Vec<RoleArg>,
    /// Only entries of this type (message, compaction, branch_summary, custom_message,
    /// label, session_info); repeatable or comma-separated
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',')]
    pub types: Vec<String>,
    #[command(flatten)]
    pub range: RangeArgs,
    /// Print one record per session that matches, not every hit
    #[arg(short = 'l', long = "files-with-matches", conflicts_with = "count")]
    pub files: bool,
    /// Print the number of hits per session that matches
    #[arg(short = 'c', long)]
    pub count: bool,
    /// Stop after N hits (with -l or --count: N sessions)
    #[arg(short = 'n', long = "max", value_name = "N", value_parser = crate::cmd::args::positive)]
    pub max: Option<u64>,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    /// What the user wrote
    User,
    /// What the model answered (text, thinking, tool calls)
    Assistant,
    /// Tool results and the user's `!command` runs
    Tool,
}

/// What one file gave.
struct Found {
    hits: Vec<Hit>,
    count: u64,
}

pub fn run(args: SearchArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let q = query(&args)?;
    let files = if args.sessions.is_empty() {
        args.scope.files_newest_first(ctx)?
    } else {
        let found: anyhow::Result<Vec<PathBuf>> = args
            .sessions
            .iter()
            .map(|s| ctx.session_path(Some(s)))
            .collect();
        newest_first(found?)
    };
    let per_session = args.files || args.count;
    let max = args.max.unwrap_or(u64::MAX);
    let human = ctx.out.human(args.format.get());
    let st = Style {
        on: ctx.out.color(),
    };
    let mut printed = 0u64;
    let mut failed: Option<anyhow::Error> = None;
    let mut last_session = None;
    let mut write_err = None;
    pi_base::par::ordered(
        files.len(),
        pi_base::par::threads(),
        |i, stop| {
            let mut found = Found {
                hits: Vec::new(),
                count: 0,
            };
            let r = search::search_file(&files[i], &q, |h| {
                found.count += 1;
                if !args.count {
                    found.hits.push(h);
                }
                let enough = args.files || (!args.count && found.count >= max);
                if enough || stop.load(std::sync::atomic::Ordering::Relaxed) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            r.map(|()| found).map_err(|e| (files[i].clone(), e))
        },
        |i, r| {
            let found = match r {
                Ok(f) => f,
                Err((path, e)) => {
                    crate::error::warn(&format!("cannot read {}: {e}", path.display()));
                    failed
                        .get_or_insert_with(|| anyhow::anyhow!("some sessions could not be read"));
                    return ControlFlow::Continue(());
                }
            };
            if found.count == 0 {
                return ControlFlow::Continue(());
            }
            let res = if per_session {
                printed += 1;
                session_record(ctx, &files[i], &found, args.count, human, st)
            } else {
                print_hits(
                    ctx,
                    found.hits,
                    &mut printed,
                    max,
                    human,
                    st,
                    &mut last_session,
                )
            };
            if let Err(e) = res {
                write_err = Some(e);
                return ControlFlow::Break(());
            }
            if printed >= max {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
    );
    if let Some(e) = write_err {
        return Err(e.into());
    }
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(if printed == 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn query(args: &SearchArgs) -> anyhow::Result<Query> {
    if args.pattern.is_empty() {
        return Err(crate::error::usage("the pattern is empty"));
    }
    let mut q = Query::new(&args.pattern, args.regex, args.ignore_case)
        .map_err(|e| crate::error::usage(format!("invalid regular expression: {e}")))?;
    q.roles = args
        .role
        .iter()
        .map(|r| match r {
            RoleArg::User => Role::User,
            RoleArg::Assistant => Role::Assistant,
            RoleArg::Tool => Role::Tool,
        })
        .collect();
    q.types = args.types.clone();
    let tz = pi_session::usage::dates::zone(None).map_err(crate::error::usage)?;
    let now = pi_base::clock::now_ms();
    q.since_ms = args.range.since.map(|d| d.start_ms(&tz, now));
    q.until_ms = args.range.until.map(|d| d.end_ms(&tz, now));
    Ok(q)
}

fn session_record(
    ctx: &mut Ctx,
    path: &std::path::Path,
    found: &Found,
    count: bool,
    human: bool,
    st: Style,
) -> std::io::Result<()> {
    let session = pi_session::find::read_header(path)
        .map(|h| h.id)
        .unwrap_or_default();
    if human {
        let n = if count {
            format!("{:>6}  ", found.count)
        } else {
            String::new()
        };
        let line = format!(
            "{n}{}  {}",
            st.yellow(&escape(&session)),
            st.dim(&escape(&path.to_string_lossy()))
        );
        return ctx.out.line(line.as_bytes());
    }
    let mut rec = serde_json::json!({"session": session, "path": path});
    if count {
        rec["count"] = found.count.into();
    }
    ctx.out.json(&rec)
}

fn print_hits(
    ctx: &mut Ctx,
    hits: Vec<Hit>,
    printed: &mut u64,
    max: u64,
    human: bool,
    st: Style,
    last_session: &mut Option<PathBuf>,
) -> std::io::Result<()> {
    for h in hits {
        if *printed >= max {
            break;
        }
        *printed += 1;
        if !human {
            ctx.out.json(&h)?;
            continue;
        }
        if last_session.as_ref() != Some(&h.path) {
            if last_session.is_some() {
                ctx.out.line(b"")?;
            }
            let head = format!(
                "{}  {}",
                st.bold(&st.yellow(&escape(&h.session))),
                st.dim(&escape(&h.path.to_string_lossy()))
            );
            ctx.out.line(head.as_bytes())?;
            *last_session = Some(h.path.clone());
        }
        ctx.out.line(human_hit(&h, st).as_bytes())?;
    }
    Ok(())
}

/// Two lines: where the hit is and its snippet with the matches highlighted, then the
/// command that shows it in context.
fn human_hit(h: &Hit, st: Style) -> String {
    let what = h.role.as_deref().unwrap_or(&h.entry_type);
    let when = h.timestamp.as_deref().map_or(String::new(), |t| {
        t.chars().take(16).collect::<String>().replace('T', " ")
    });
    let mut out = format!(
        "  {}  {}  ",
        st.dim(&escape(&when)),
        st.cyan(&escape(&format!("{what} {}", h.field)))
    );
    if h.cut.0 {
        out.push('…');
    }
    let chars: Vec<char> = h.snippet.chars().collect();
    let mut at = 0;
    let mark = anstyle::Style::new()
        .bold()
        .fg_color(Some(anstyle::AnsiColor::Red.into()));
    for &[s, e] in &h.matches {
        let s = s.max(at);
        if s >= e {
            continue;
        }
        out.push_str(&escape(&chars[at..s].iter().collect::<String>()));
        let m: String = chars[s..e].iter().collect();
        out.push_str(&if st.on {
            st.paint(mark, &escape(&m))
        } else {
            format!("[{}]", escape(&m))
        });
        at = e;
    }
    out.push_str(&escape(&chars[at..].iter().collect::<String>()));
    if h.cut.1 {
        out.push('…');
    }
    if let Some(id) = &h.entry_id {
        out.push('\n');
        out.push_str(&st.dim(&format!(
            "      pi session show {} --leaf {}",
            escape(&h.session),
            escape(id)
        )));
    }
    out
}
