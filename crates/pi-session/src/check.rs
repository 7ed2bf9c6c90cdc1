//! Checking a session file: everything `pi session check` reports (the reader's problems,
//! references to entries that do not exist, parent cycles), without changing the file.
//! Appends are not damage: a batch being written is left out (a note), and a batch whose
//! writer was killed, recovered or not, is a warning (see [`super::pending`]).

use std::path::Path;

use super::Session;
use super::index::{Problem, ProblemKind};
use super::scan::Visit;
use super::store::{OpenError, Source};
use super::tree::cycle_closers;
use pi_base::json::{self, RawStr};

/// What a check found.
pub struct Report {
    /// The session as read.
    pub session: Session,
    /// Every problem, by line.
    pub problems: Vec<Problem>,
}

/// Reads the whole file at `path` and lists its problems, in line order.
///
/// ```
/// use pi_session::check::check;
/// use pi_session::index::ProblemKind;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("torn.jsonl");
/// std::fs::write(
///     &path,
///     concat!(
///         r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-02T03:04:05.678Z","cwd":"/src"}"#, "\n",
///         r#"{"type":"message","id":"a1b2c3d4","parentId":"99999999","timestamp":"2026-01-02T03:04:05.678Z","message":{"role":"user","content":"hi"}}"#, "\n",
///         r#"{"type":"message","id":"e5f6"#, // a write cut short
///     ),
/// )?;
/// let report = check(&path)?;
/// let kinds: Vec<ProblemKind> = report.problems.iter().map(|p| p.kind).collect();
/// assert_eq!(kinds, [ProblemKind::DanglingParent, ProblemKind::Torn]);
/// assert_eq!(report.problems[1].line, 3);
/// # Ok(())
/// # }
/// ```
pub fn check(path: &Path) -> Result<Report, OpenError> {
    check_source(Source::File(path.to_owned()))
}

/// [`check`] for a session file or a spooled copy.
pub fn check_source(source: Source) -> Result<Report, OpenError> {
    let (mut s, refs) = Session::scan_source(source, Refs::default())?;
    let Refs { refs, not_utf8 } = refs;
    let mut problems: Vec<Problem> = s.problems.clone();
    if s.len == 0 {
        problems.push(Problem {
            kind: ProblemKind::NoHeader,
            line: 1,
            offset: 0,
            column: None,
            message: "the file is empty".into(),
        });
    }
    let migrated_v1 = s.version() < 2;
    if let Some(h) = &s.header
        && let Err(e) = std::str::from_utf8(&h.raw)
    {
        problems.push(not_utf8_problem(h.line, 0, &h.raw, e));
    }
    for (i, at) in not_utf8 {
        let r = &s.entries[i as usize];
        // The line again, for the column in characters.
        if let Ok(line) = s.line(i)
            && let Err(e) = std::str::from_utf8(&line)
        {
            problems.push(not_utf8_problem(r.line, r.offset, &line, e));
        } else {
            problems.push(Problem {
                kind: ProblemKind::InvalidUtf8,
                line: r.line,
                offset: r.offset,
                column: None,
                message: format!("bytes that are not UTF-8 at byte {}", at + 1),
            });
        }
    }
    for (i, field, id) in refs {
        if migrated_v1 {
            break; // v1 compactions use indexes; the migration resolves them.
        }
        if s.get(&id).is_none() {
            problems.push(Problem {
                kind: ProblemKind::DanglingReference,
                line: s.entries[i as usize].line,
                offset: s.entries[i as usize].offset,
                column: None,
                message: format!("{field} refers to '{id}', which does not exist"),
            });
        }
    }
    for l in &s.labels {
        if s.get_id(&l.target).is_none() {
            problems.push(Problem {
                kind: ProblemKind::DanglingReference,
                line: s.entries[l.entry as usize].line,
                offset: s.entries[l.entry as usize].offset,
                column: None,
                message: format!("label targets '{}', which does not exist", l.target),
            });
        }
    }
    for i in cycle_closers(&s) {
        let r = &s.entries[i as usize];
        problems.push(Problem {
            kind: ProblemKind::Cycle,
            line: r.line,
            offset: r.offset,
            column: None,
            message: format!("entry '{}' is its own ancestor (a parentId cycle)", r.id),
        });
    }
    if s.len > 0 && s.header.is_none() && !problems.iter().any(|p| p.kind == ProblemKind::NoHeader)
    {
        problems.push(Problem {
            kind: ProblemKind::NoHeader,
            line: 1,
            offset: 0,
            column: None,
            message: "no session header: line 1 is not a {\"type\":\"session\",…} line, so \
                      this is not a session file"
                .into(),
        });
    }
    // A missing header comes first: it explains everything after it.
    problems.sort_by_key(|p| (p.kind != ProblemKind::NoHeader, p.line, p.kind.as_str()));
    // A file with neither a header nor an entry is not a session at all: a few of its
    // lines are enough to show it.
    if s.header.is_none() && s.entries.is_empty() && problems.len() > NOT_A_SESSION_SHOWN {
        s.problems_dropped += problems.len() - NOT_A_SESSION_SHOWN;
        problems.truncate(NOT_A_SESSION_SHOWN);
    }
    Ok(Report {
        session: s,
        problems,
    })
}

/// How many problems of a file that is not a session at all are listed.
const NOT_A_SESSION_SHOWN: usize = 4;

/// The problem of a line holding bytes that are not UTF-8.
fn not_utf8_problem(line: u32, offset: u64, text: &[u8], e: std::str::Utf8Error) -> Problem {
    let at = e.valid_up_to();
    let (_, column) = json::line_col(text, at);
    let bad = &text[at..text.len().min(at + e.error_len().unwrap_or(1))];
    let hex: Vec<String> = bad.iter().map(|b| format!("{b:02x}")).collect();
    Problem {
        kind: ProblemKind::InvalidUtf8,
        line,
        offset,
        column: Some(column),
        message: format!(
            "bytes that are not UTF-8 ({}); pi and the reference read them as U+FFFD",
            hex.join(" ")
        ),
    }
}

/// References from compactions to the entries they keep: (entry index, field, id); and the
/// entries holding bytes that are not UTF-8 (entry index, offset in the line).
#[derive(Default)]
struct Refs {
    refs: Vec<(u32, &'static str, String)>,
    not_utf8: Vec<(u32, usize)>,
}

impl Visit for Refs {
    fn entry(&mut self, i: u32, line: &[u8], members: &[json::Member<'_>]) {
        if let Err(e) = std::str::from_utf8(line) {
            self.not_utf8.push((i, e.valid_up_to()));
        }
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
            self.refs
                .push((i, "firstKeptEntryId", v.decode().into_owned()));
        }
    }
    fn split(&self) -> Self {
        Refs::default()
    }
    fn merge(&mut self, next: Self, offset: u32) {
        self.refs
            .extend(next.refs.into_iter().map(|(i, f, id)| (i + offset, f, id)));
        self.not_utf8
            .extend(next.not_utf8.into_iter().map(|(i, at)| (i + offset, at)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a recovery entry's own range (ending where it starts) excuses the unreadable
    /// lines in it: a crafted one elsewhere hides nothing.
    #[test]
    fn recorded_ranges_excuse_only_the_lines_before_the_recovery_entry() {
        let dir = std::env::temp_dir().join(format!("pi-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.jsonl");
        let header =
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n";
        let torn = "{\"type\":\"mess\n";
        let start = header.len();
        let end = start + torn.len();
        let entry = |s: usize, e: usize| {
            format!(
                "{{\"type\":\"custom\",\"customType\":\"interrupted-append\",\"data\":{{\"from\":null,\"start\":{s},\"end\":{e},\"entries\":0}},\"id\":\"r\",\"parentId\":null,\"timestamp\":\"t\"}}\n"
            )
        };
        let kinds = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let r = check(&path).unwrap();
            r.problems
                .iter()
                .map(|p| (p.kind.as_str(), p.line))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            kinds(&format!("{header}{torn}{}", entry(start, end))),
            [("interrupted-append", 3)]
        );
        // A range that does not end at the entry, or that ends there but is not its own.
        assert_eq!(
            kinds(&format!("{header}{torn}{}", entry(start, end - 1))),
            [("invalid-json", 2)]
        );
        assert_eq!(
            kinds(&format!("{header}{torn}\n{}", entry(start, end))),
            [("invalid-json", 2)]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
