//! `pi session check`

use clap::Args;
use serde::Serialize;

use crate::cmd::{Ctx, FormatArgs};
use crate::json::{self, RawStr};
use crate::output::Style;
use crate::session::Session;
use crate::session::scan::Visit;
use crate::session::store::{NONE, Problem, ProblemKind, Severity};

pub const EXIT_STATUS: &str = "\
Exit status:
  0  no errors (warnings, such as an old format version, may have been reported)
  1  the file has errors, or cannot be read
  2  usage error";

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The session file, id or id prefix [default: the most recent one of the current directory]
    pub session: Option<String>,
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

pub fn run(args: CheckArgs, ctx: &mut Ctx) -> anyhow::Result<u8> {
    let path = ctx.session_path(args.session.as_deref())?;
    let (s, refs) = Session::scan(&path, Refs(Vec::new()))?;
    let refs = refs.0;
    let mut problems: Vec<Problem> = s.problems.clone();
    if s.len == 0 {
        problems.push(Problem {
            kind: ProblemKind::NoHeader,
            line: 1,
            column: None,
            message: "the file is empty".into(),
        });
    }
    let migrated_v1 = s.version() < 2;
    for (i, field, id) in refs {
        if migrated_v1 {
            break; // v1 compactions use indexes; the migration resolves them.
        }
        if s.get(&id).is_none() {
            problems.push(Problem {
                kind: ProblemKind::DanglingReference,
                line: s.entries[i as usize].line,
                column: None,
                message: format!("{field} refers to '{id}', which does not exist"),
            });
        }
    }
    for l in &s.labels {
        if !s.by_id.contains_key(&l.target) {
            problems.push(Problem {
                kind: ProblemKind::DanglingReference,
                line: s.entries[l.entry as usize].line,
                column: None,
                message: format!("label targets '{}', which does not exist", l.target),
            });
        }
    }
    for i in cycles(&s) {
        let r = &s.entries[i as usize];
        problems.push(Problem {
            kind: ProblemKind::Cycle,
            line: r.line,
            column: None,
            message: format!("entry '{}' is its own ancestor (a parentId cycle)", r.id),
        });
    }
    problems.sort_by_key(|p| (p.line, p.kind.as_str()));
    let errors = problems
        .iter()
        .filter(|p| p.kind.severity() == Severity::Error)
        .count();
    let warnings = problems.len() - errors;
    let p = path.to_string_lossy();
    if ctx.out.human(args.format.get()) {
        let st = Style {
            on: ctx.out.color(),
        };
        for pr in &problems {
            let loc = match pr.column {
                Some(c) => format!("{p}:{}:{c}", pr.line),
                None => format!("{p}:{}", pr.line),
            };
            let sev = match pr.kind.severity() {
                Severity::Error => st.red("error"),
                Severity::Warning => st.yellow("warning"),
            };
            ctx.out
                .line(format!("{loc}: {sev}[{}]: {}", pr.kind.as_str(), pr.message).as_bytes())?;
        }
        if s.problems_dropped > 0 {
            ctx.out
                .line(format!("… and {} more problems", s.problems_dropped).as_bytes())?;
        }
        let summary = if problems.is_empty() {
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
                },
                kind: pr.kind.as_str(),
                message: &pr.message,
            })?;
        }
    }
    Ok(if errors > 0 || s.problems_dropped > 0 {
        1
    } else {
        0
    })
}

/// References from compactions to the entries they keep: (entry index, field, id).
struct Refs(Vec<(u32, &'static str, String)>);

impl Visit for Refs {
    fn entry(&mut self, i: u32, line: &[u8], members: &[json::Member<'_>]) {
        let get = |k: &str| {
            members
                .iter()
                .rev()
                .find(|m| m.key.eq_str(k))
                .and_then(|m| RawStr::from_value(&line[m.value_start..m.value_end]))
        };
        if get("type").is_some_and(|t| t.eq_str("compaction"))
            && let Some(v) = get("firstKeptEntryId")
        {
            self.0
                .push((i, "firstKeptEntryId", v.decode().into_owned()));
        }
    }
    fn split(&self) -> Self {
        Refs(Vec::new())
    }
    fn merge(&mut self, next: Self, offset: u32) {
        self.0
            .extend(next.0.into_iter().map(|(i, f, id)| (i + offset, f, id)));
    }
}

/// One entry of every parent cycle (the one that closes it, in file order).
fn cycles(s: &Session) -> Vec<u32> {
    let n = s.entries.len();
    // 0 = unvisited, 1 = on the current walk, 2 = done.
    let mut state = vec![0u8; n];
    let mut found = Vec::new();
    let mut walk = Vec::new();
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        walk.clear();
        let mut cur = start as u32;
        while cur != NONE && state[cur as usize] == 0 {
            state[cur as usize] = 1;
            walk.push(cur);
            cur = s.entries[cur as usize].parent;
        }
        if cur != NONE && state[cur as usize] == 1 {
            // The cycle runs from `cur` around to the end of the walk.
            let pos = walk.iter().position(|&w| w == cur).unwrap_or(0);
            if let Some(&m) = walk[pos..].iter().max() {
                found.push(m);
            }
        }
        for &w in &walk {
            state[w as usize] = 2;
        }
    }
    found
}
