//! `grep {pattern, path?, glob?, ignoreCase?, literal?, context?, limit?}`: ripgrep's engine
//! and directory walker as libraries, with the options upstream passes to `rg` (hidden files
//! searched, `.gitignore`/`.ignore`/`.rgignore` respected inside git repositories, binary
//! files skipped unless named directly, `--glob` filters relative to the working directory).
//!
//! Output: `path:line: text` for matches and `path-line- text` for context lines, each match
//! with its own context, lines cut at 500 characters, 50KB at most, with upstream's notices.
//! Files are searched in path order (ripgrep's order varies from run to run).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::json;

use super::path;
use super::truncate::{GREP_MAX_LINE_LENGTH, truncate_line};
use super::{CancelToken, ToolContext, ToolError, ToolOutput, js_int};

pub(crate) const DEFAULT_LIMIT: usize = 100;

/// The most memory one line may take while searching (a file without line breaks, or a
/// device, is not read into memory whole); longer lines end that file's search.
const HEAP_LIMIT: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, Deserialize)]
pub struct GrepArgs {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default, rename = "ignoreCase")]
    pub ignore_case: Option<bool>,
    #[serde(default)]
    pub literal: Option<bool>,
    #[serde(default)]
    pub context: Option<f64>,
    #[serde(default)]
    pub limit: Option<f64>,
}

/// One matching line.
struct Hit {
    file: PathBuf,
    line: u64,
    /// With no context: the line, cleaned and cut.
    text: Option<(String, bool)>,
}

/// What a search looks for, and how much of it.
struct Query<'a> {
    matcher: &'a RegexMatcher,
    /// The most matches.
    limit: f64,
    /// Keep the matching lines (no context asked for).
    keep_text: bool,
    cancel: &'a CancelToken,
}

impl Query<'_> {
    /// Adds the matches in `file` to `hits`, up to the limit.
    fn search(&self, searcher: &mut Searcher, file: &Path, hits: &mut Vec<Hit>) {
        let sink = Collector {
            file,
            hits,
            query: self,
        };
        let _ = searcher.search_path(self.matcher, file, sink);
    }
}

struct Collector<'a> {
    file: &'a Path,
    hits: &'a mut Vec<Hit>,
    query: &'a Query<'a>,
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _s: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        if self.query.cancel.is_cancelled() {
            return Ok(false);
        }
        let text = self.query.keep_text.then(|| {
            let raw = String::from_utf8_lossy(m.bytes());
            let cleaned = raw.replace("\r\n", "\n").replace('\r', "");
            let cleaned = cleaned.strip_suffix('\n').unwrap_or(&cleaned);
            truncate_line(cleaned, GREP_MAX_LINE_LENGTH)
        });
        self.hits.push(Hit {
            file: self.file.to_path_buf(),
            line: m.line_number().unwrap_or(0),
            text,
        });
        Ok((self.hits.len() as f64) < self.query.limit)
    }
}

fn regex_error(e: &grep_regex::Error) -> String {
    let msg = e.to_string();
    if msg.contains("is not allowed in a regex") {
        format!(
            "rg: {msg}\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."
        )
    } else {
        format!("rg: {msg}")
    }
}

pub(crate) fn run(
    ctx: &ToolContext,
    args: &GrepArgs,
    cancel: &CancelToken,
) -> Result<ToolOutput, ToolError> {
    let search = path::search_root(args.path.as_deref(), &ctx.cwd);
    let is_dir = path::metadata(&search)?.is_dir();
    let context = args
        .context
        .filter(|c| *c > 0.0)
        .map_or(0, |c| js_int(c).max(0) as u64);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT as f64).max(1.0);
    let matcher = matcher(args)?;
    let query = Query {
        matcher: &matcher,
        limit,
        keep_text: context == 0,
        cancel,
    };
    let hits = if is_dir {
        search_dir(walker(ctx, args, &search)?, &query)
    } else {
        search_file(&search, &query)
    };
    if cancel.is_cancelled() {
        return Err(ToolError::new("Operation aborted"));
    }
    if hits.is_empty() {
        return Ok(ToolOutput::text("No matches found"));
    }
    let limit_reached = hits.len() as f64 >= limit;
    let names = Names {
        root: &search,
        is_dir,
    };
    let (out, lines_truncated) = if context == 0 {
        match_lines(&hits, &names)
    } else {
        context_lines(&hits, context, &names)
    };
    let extra = if lines_truncated {
        vec![(
            format!(
                "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
            ),
            "linesTruncated",
            json!(true),
        )]
    } else {
        Vec::new()
    };
    Ok(super::truncate::listing_output(
        &out,
        limit_reached.then_some(("matches", ", or refine pattern", "matchLimitReached", limit)),
        extra,
    ))
}

/// The matcher for the pattern and its options.
fn matcher(args: &GrepArgs) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case.unwrap_or(false))
        .fixed_strings(args.literal.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| ToolError(regex_error(&e)))
}

/// The walk over a directory: hidden files in, ignore files respected, in name order,
/// filtered by the `glob` (relative to the working directory).
fn walker(ctx: &ToolContext, args: &GrepArgs, root: &Path) -> Result<WalkBuilder, ToolError> {
    let mut walk = WalkBuilder::new(root);
    walk.hidden(false)
        .add_custom_ignore_filename(".rgignore")
        .sort_by_file_name(|a, b| a.cmp(b));
    if let Some(glob) = args.glob.as_deref().filter(|g| !g.is_empty()) {
        let mut ov = OverrideBuilder::new(&ctx.cwd);
        ov.add(glob).map_err(|e| ToolError(format!("rg: {e}")))?;
        let ov = ov.build().map_err(|e| ToolError(format!("rg: {e}")))?;
        walk.overrides(ov);
    }
    Ok(walk)
}

/// A line-numbering searcher that gives up on lines over [`HEAP_LIMIT`].
fn searcher(binary: BinaryDetection) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .heap_limit(Some(HEAP_LIMIT))
        .binary_detection(binary)
        .build()
}

/// The matches in the files of a walk (binary files skipped), up to the limit.
fn search_dir(walk: WalkBuilder, query: &Query) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut searcher = searcher(BinaryDetection::quit(0));
    for entry in walk.build() {
        if query.cancel.is_cancelled() || hits.len() as f64 >= query.limit {
            break;
        }
        // Unreadable directories and broken links are skipped.
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        query.search(&mut searcher, entry.path(), &mut hits);
    }
    hits
}

/// The matches in one file named directly (searched even when binary), up to the limit.
fn search_file(file: &Path, query: &Query) -> Vec<Hit> {
    let mut hits = Vec::new();
    query.search(&mut searcher(BinaryDetection::none()), file, &mut hits);
    hits
}

/// How files are named in the output: relative to the searched directory, else by their
/// file name.
struct Names<'a> {
    root: &'a Path,
    is_dir: bool,
}

impl Names<'_> {
    fn of(&self, file: &Path) -> String {
        if self.is_dir
            && let Ok(r) = file.strip_prefix(self.root)
        {
            let r = r.to_string_lossy();
            if !r.is_empty() && !r.starts_with("..") {
                return r.into_owned();
            }
        }
        file.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The output without context: one line a match. Also whether a line was cut.
fn match_lines(hits: &[Hit], names: &Names<'_>) -> (Vec<String>, bool) {
    let mut lines_truncated = false;
    let mut out = Vec::new();
    for h in hits {
        let (text, cut) = h.text.clone().unwrap_or_default();
        lines_truncated |= cut;
        out.push(format!("{}:{}: {text}", names.of(&h.file), h.line));
    }
    (out, lines_truncated)
}

/// The output with `context` lines around each match (each file read once). Also whether
/// a line was cut.
fn context_lines(hits: &[Hit], context: u64, names: &Names<'_>) -> (Vec<String>, bool) {
    let mut wanted: BTreeMap<&Path, BTreeSet<u64>> = BTreeMap::new();
    for h in hits {
        let set = wanted.entry(h.file.as_path()).or_default();
        for n in h.line.saturating_sub(context).max(1)..=h.line + context {
            set.insert(n);
        }
    }
    let mut files: BTreeMap<&Path, Option<FileLines>> = BTreeMap::new();
    for (file, set) in &wanted {
        files.insert(file, read_lines(file, set).ok());
    }
    let mut lines_truncated = false;
    let mut out = Vec::new();
    for h in hits {
        let name = names.of(&h.file);
        let Some(Some(fl)) = files.get(h.file.as_path()) else {
            out.push(format!("{name}:{}: (unable to read file)", h.line));
            continue;
        };
        let start = h.line.saturating_sub(context).max(1);
        let end = (h.line + context).min(fl.count);
        for n in start..=end {
            let text = fl.lines.get(&n).map_or("", String::as_str);
            let (text, cut) = truncate_line(text, GREP_MAX_LINE_LENGTH);
            lines_truncated |= cut;
            if n == h.line {
                out.push(format!("{name}:{n}: {text}"));
            } else {
                out.push(format!("{name}-{n}- {text}"));
            }
        }
    }
    (out, lines_truncated)
}

/// The wanted lines of a file (numbered from 1, line breaks `\r\n`, `\r` or `\n` as upstream
/// splits them), each kept up to a length that still cuts the same way, and the line count.
struct FileLines {
    lines: BTreeMap<u64, String>,
    count: u64,
}

/// Enough of a line to cut it at 500 UTF-16 units the same way as the whole line.
const LINE_PREFIX: usize = 4096;

fn read_lines(path: &Path, wanted: &BTreeSet<u64>) -> std::io::Result<FileLines> {
    let mut file = File::open(path)?;
    let mut lines = BTreeMap::new();
    let mut cur: Vec<u8> = Vec::new();
    let mut n: u64 = 1;
    let mut pending_cr = false;
    let mut buf = vec![0u8; 64 * 1024];
    let finish = |n: u64, cur: &mut Vec<u8>, lines: &mut BTreeMap<u64, String>| {
        if wanted.contains(&n) {
            lines.insert(n, String::from_utf8_lossy(cur).into_owned());
        }
        cur.clear();
    };
    loop {
        let got = file.read(&mut buf)?;
        if got == 0 {
            break;
        }
        let mut rest = &buf[..got];
        if pending_cr {
            pending_cr = false;
            if rest.first() == Some(&b'\n') {
                rest = &rest[1..];
            }
        }
        while let Some(i) = memchr::memchr2(b'\r', b'\n', rest) {
            push_capped(&mut cur, &rest[..i]);
            finish(n, &mut cur, &mut lines);
            n += 1;
            if rest[i] == b'\r' {
                match rest.get(i + 1) {
                    Some(b'\n') => rest = &rest[i + 2..],
                    Some(_) => rest = &rest[i + 1..],
                    None => {
                        pending_cr = true;
                        rest = &[];
                    }
                }
            } else {
                rest = &rest[i + 1..];
            }
        }
        push_capped(&mut cur, rest);
    }
    finish(n, &mut cur, &mut lines);
    Ok(FileLines { lines, count: n })
}

fn push_capped(cur: &mut Vec<u8>, bytes: &[u8]) {
    let room = LINE_PREFIX.saturating_sub(cur.len());
    cur.extend_from_slice(&bytes[..bytes.len().min(room)]);
}
