//! The index pass over a session file: every line is validated and its top-level `type`,
//! `id` and `parentId` recorded. Large files are split at line boundaries and scanned by
//! several threads; the pieces are joined in file order, so the result is the same as a
//! single sequential pass.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::id::Id;
use super::migrate;
use super::store::{Header, Kind, LabelRec, NONE, Problem, ProblemKind, Rec};
use crate::json::{self, Member, RawStr};

/// At most this many problems are kept; the rest are only counted.
pub const MAX_PROBLEMS: usize = 10_000;

/// The first look for the header reads this much, the second (when the first was not
/// enough) this much.
const PROBE_FIRST: u64 = 64 << 10;
const PROBE_MAX: u64 = 4 << 20;

/// Files smaller than this are scanned on one thread.
const PARALLEL_MIN: u64 = 16 << 20;

/// Extra per-entry work during the index pass. A visitor is split into one per chunk when
/// the file is scanned in parallel, and the pieces are merged back in file order.
pub trait Visit: Send + Sized {
    /// Called for every entry (index in file order, the line, its top-level members).
    fn entry(&mut self, idx: u32, line: &[u8], members: &[Member<'_>]);
    /// The key of a top-level member whose object value's members the visitor wants too
    /// (collected in the same pass, see [`Visit::entry_nested`]).
    const NESTED: Option<&'static str> = None;
    /// Whether the visitor does nothing at all ([`NoVisit`]): then an open may take the
    /// index from its cache instead of a pass over the file.
    const NOTHING: bool = false;
    /// [`Visit::entry`] for a visitor with [`Visit::NESTED`]: `nested` are the members
    /// (offsets into `line`) of that member's value when it is an object (its last
    /// occurrence when the key is repeated), else empty.
    fn entry_nested(
        &mut self,
        idx: u32,
        line: &[u8],
        members: &[Member<'_>],
        nested: &[Member<'_>],
    ) {
        let _ = nested;
        self.entry(idx, line, members);
    }
    /// With [`Visit::NESTED`] (which must be `DEEP.key`): also the members of the object
    /// elements of the nested object's array member `DEEP.list` and of their object member
    /// `DEEP.sub`, collected in the same pass (see [`Visit::entry_deep`]).
    const DEEP: Option<json::Deep> = None;
    /// [`Visit::entry_nested`] for a visitor with [`Visit::DEEP`]: `elements` and `subs` are
    /// the members (offsets into `line`) found in the last occurrence of the nested object,
    /// each with the offset of the object that holds it, in file order.
    fn entry_deep(
        &mut self,
        idx: u32,
        line: &[u8],
        members: &[Member<'_>],
        nested: &[Member<'_>],
        elements: &[(usize, Member<'_>)],
        subs: &[(usize, Member<'_>)],
    ) {
        let _ = (elements, subs);
        self.entry_nested(idx, line, members, nested);
    }
    /// Whether the accumulator keeps what opening a session needs besides the visitor's
    /// results: a record of every entry (its id and parent), the labels, names and
    /// recoveries. A visitor that only counts (the summaries) does without.
    const RECORDS: bool = true;
    /// An empty visitor for another chunk.
    fn split(&self) -> Self;
    /// Appends the results of the next chunk, whose entry indexes start at `offset`.
    fn merge(&mut self, next: Self, offset: u32);
}

/// The visitor that does nothing.
pub struct NoVisit;

impl Visit for NoVisit {
    const NOTHING: bool = true;
    fn entry(&mut self, _: u32, _: &[u8], _: &[Member<'_>]) {}
    fn split(&self) -> Self {
        NoVisit
    }
    fn merge(&mut self, _: Self, _: u32) {}
}

/// What a scan of (part of) a file produced.
pub struct Acc<V> {
    /// Known in advance (chunks after the header) or discovered (a sequential scan).
    pub header: Option<Header>,
    discover_header: bool,
    saw_entry: bool,
    pub recs: Vec<Rec>,
    pub problems: Vec<Problem>,
    pub problems_dropped: usize,
    pub labels: Vec<LabelRec>,
    pub names: Vec<(u32, String)>,
    /// Lines that parsed as JSON (the index space of v1 `firstKeptEntryIndex`).
    pub parsed: u32,
    /// For v1 files: each entry's index among parsed lines.
    pub parsed_index: Vec<u32>,
    /// For v1 compactions: (entry index, numeric `firstKeptEntryIndex`).
    pub first_kept_index: Vec<(u32, Option<f64>)>,
    /// Entries that record a recovered interrupted append: (entry index, the byte range
    /// their `data` gives).
    pub recoveries: Vec<(u32, (u64, u64))>,
    pub lines: u32,
    /// Entries seen (as many as `recs` holds when the visitor wants [`Visit::RECORDS`]).
    entries: u32,
    members: Vec<MemberSpan>,
    /// Allocations for the members of the next line (see [`recycle`]).
    member_buf: Vec<Member<'static>>,
    nested_buf: Vec<Member<'static>>,
    /// The members of the object value of `V::NESTED` (with the offset of that object).
    nested: Vec<(usize, MemberSpan)>,
    /// The members further down (`V::DEEP`), each with the offset of its object.
    elements: Vec<(usize, MemberSpan)>,
    subs: Vec<(usize, MemberSpan)>,
    pub visitor: V,
}

impl<V: Visit> Acc<V> {
    pub fn new(header: Option<Header>, discover_header: bool, visitor: V) -> Acc<V> {
        Acc {
            header,
            discover_header,
            saw_entry: false,
            recs: Vec::new(),
            problems: Vec::new(),
            problems_dropped: 0,
            labels: Vec::new(),
            names: Vec::new(),
            parsed: 0,
            parsed_index: Vec::new(),
            first_kept_index: Vec::new(),
            recoveries: Vec::new(),
            lines: 0,
            entries: 0,
            member_buf: Vec::new(),
            nested_buf: Vec::new(),
            members: Vec::new(),
            nested: Vec::new(),
            elements: Vec::new(),
            subs: Vec::new(),
            visitor,
        }
    }

    fn version(&self) -> u32 {
        self.header.as_ref().map_or(3, |h| h.version)
    }

    pub fn problem(
        &mut self,
        kind: ProblemKind,
        (line, offset): (u32, u64),
        column: Option<usize>,
        msg: String,
    ) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem {
                kind,
                line,
                offset,
                column,
                message: msg,
            });
        } else {
            self.problems_dropped += 1;
        }
    }

    /// Processes one line (without its newline); `terminated` is false for a last line with
    /// no newline.
    pub fn line(&mut self, offset: u64, line_no: u32, line: &[u8], terminated: bool) {
        self.lines = self.lines.max(line_no);
        let start = json::skip_ws(line, 0);
        if start == line.len() {
            return; // blank
        }
        if line.len() > u32::MAX as usize {
            self.problem(
                ProblemKind::Invalid,
                (line_no, offset),
                None,
                "line longer than 4 GiB".into(),
            );
            return;
        }
        self.members.clear();
        self.nested.clear();
        self.elements.clear();
        self.subs.clear();
        let members = &mut self.members;
        let nested = &mut self.nested;
        let (elements, subs) = (&mut self.elements, &mut self.subs);
        let scanned = if line[start] == b'{' {
            let top = |m: Member<'_>| members.push(MemberSpan::of(&m));
            match (V::NESTED, V::DEEP) {
                (_, Some(deep)) => {
                    json::scan_object_deep(line, start, deep, top, &mut |depth, at, m| {
                        let to = match depth {
                            json::Depth::Inner => &mut *nested,
                            json::Depth::Element => &mut *elements,
                            json::Depth::Sub => &mut *subs,
                        };
                        to.push((at, MemberSpan::of(&m)));
                    })
                }
                (None, None) => json::scan_object(line, start, top),
                (Some(key), None) => {
                    json::scan_object_nested(line, start, key, top, &mut |at, m| {
                        nested.push((at, MemberSpan::of(&m)))
                    })
                }
            }
            .and_then(|(end, _)| {
                let rest = json::skip_ws(line, end);
                if rest == line.len() {
                    Ok(())
                } else {
                    Err(json::SyntaxError {
                        offset: rest,
                        expected: "the end of the line",
                    })
                }
            })
        } else {
            json::validate(line).map(|_| ())
        };
        if let Err(e) = scanned {
            let column = json::line_col(line, e.offset).1;
            let (kind, msg) = if terminated {
                (
                    ProblemKind::Invalid,
                    format!("not valid JSON: {e} at column {column}"),
                )
            } else {
                (
                    ProblemKind::Torn,
                    format!(
                        "the last line is incomplete (an interrupted write?): {e} at column {column}"
                    ),
                )
            };
            self.problem(kind, (line_no, offset), Some(column), msg);
            return;
        }
        self.parsed += 1;
        let parsed_idx = self.parsed - 1;
        if line[start] != b'{' {
            let column = json::line_col(line, start).1;
            self.problem(
                ProblemKind::NotEntry,
                (line_no, offset),
                Some(column),
                "a JSON value that is not an object".into(),
            );
            return;
        }
        let mut members = recycle(std::mem::take(&mut self.member_buf));
        members.extend(self.members.iter().map(|m| m.member(line)));
        let field = |k: &str| json::field(line, &members, k);
        let Some(ty) = field("type").and_then(RawStr::from_value) else {
            self.problem(
                ProblemKind::NotEntry,
                (line_no, offset),
                None,
                "an object without a string \"type\"".into(),
            );
            return;
        };
        if ty.eq_str("session") {
            if self.discover_header && self.header.is_none() && !self.saw_entry {
                match header_from(line, &members, line_no) {
                    Ok(h) => self.header = Some(h),
                    Err(msg) => {
                        self.saw_entry = true;
                        self.problem(ProblemKind::NoHeader, (line_no, offset), None, msg);
                    }
                }
            } else {
                self.problem(
                    ProblemKind::ExtraHeader,
                    (line_no, offset),
                    None,
                    "a second session header (skipped)".into(),
                );
            }
            return;
        }
        if self.header.is_none() {
            let msg = if self.saw_entry {
                "an entry in a file without a session header (skipped)".to_owned()
            } else {
                format!("the first entry (line {line_no}) comes before any session header line")
            };
            self.saw_entry = true;
            self.problem(ProblemKind::NoHeader, (line_no, offset), None, msg);
            return;
        }
        let idx = self.entries;
        let kind = Kind::from_type(ty.raw);
        let v1 = self.version() < 2;
        let id = if v1 {
            None // assigned by the migration plan
        } else {
            let Some(id) = field("id").and_then(RawStr::from_value) else {
                self.problem(
                    ProblemKind::NotEntry,
                    (line_no, offset),
                    None,
                    "an entry without a string \"id\"".into(),
                );
                return;
            };
            Some(id)
        };
        self.entries += 1;
        if v1 {
            self.parsed_index.push(parsed_idx);
            if kind == Kind::Compaction {
                let fk = field("firstKeptEntryIndex").and_then(json::number);
                self.first_kept_index.push((idx, fk));
            }
        }
        let string = |k: &str| {
            field(k)
                .and_then(RawStr::from_value)
                .map(|r| r.decode().into_owned())
        };
        if V::RECORDS && kind == Kind::Label {
            if let Some(target) = string("targetId") {
                self.labels.push(LabelRec {
                    entry: idx,
                    target: Id::new(&target),
                    label: string("label"),
                    timestamp: string("timestamp").unwrap_or_default(),
                });
            }
        } else if V::RECORDS && kind == Kind::SessionInfo {
            self.names
                .push((idx, string("name").unwrap_or_default().trim().to_owned()));
        } else if V::RECORDS
            && kind == Kind::Custom
            && field("customType")
                .and_then(RawStr::from_value)
                .is_some_and(|t| t.eq_str(super::pending::CUSTOM_TYPE))
            && let Some(range) = field("data").and_then(super::pending::recorded_range)
        {
            self.recoveries.push((idx, range));
        }
        if let Some(key) = V::DEEP.map(|d| d.key).or(V::NESTED) {
            // The members of the value of the last occurrence of the key, if an object.
            let span = members
                .iter()
                .rev()
                .find(|m| m.key.eq_str(key))
                .map(|m| (m.value_start, m.value_end));
            let at = span.map(|s| s.0);
            let mut nested = recycle(std::mem::take(&mut self.nested_buf));
            nested.extend(
                self.nested
                    .iter()
                    .filter(|(o, _)| Some(*o) == at)
                    .map(|(_, m)| m.member(line)),
            );
            if V::DEEP.is_some() {
                let inside = |list: &[(usize, MemberSpan)]| -> Vec<(usize, Member<'_>)> {
                    list.iter()
                        .filter(|(o, _)| span.is_some_and(|(a, b)| (a..b).contains(o)))
                        .map(|(o, m)| (*o, m.member(line)))
                        .collect()
                };
                let (elements, subs) = (inside(&self.elements), inside(&self.subs));
                self.visitor
                    .entry_deep(idx, line, &members, &nested, &elements, &subs);
            } else {
                self.visitor.entry_nested(idx, line, &members, &nested);
            }
            self.nested_buf = recycle(nested);
        } else {
            self.visitor.entry(idx, line, &members);
        }
        if V::RECORDS {
            let (id, parent_id) = match id {
                Some(id) => (
                    Id::new(&id.decode()),
                    field("parentId")
                        .and_then(RawStr::from_value)
                        .map(|p| Id::new(&p.decode())),
                ),
                None => (Id::new(""), None),
            };
            self.recs.push(Rec {
                offset,
                len: line.len() as u32,
                line: line_no,
                kind,
                id,
                parent_id,
                parent: NONE,
            });
        }
        self.member_buf = recycle(members);
    }

    /// Appends the accumulator of the following chunk, whose line numbers start after
    /// `self.lines`.
    fn append(&mut self, next: Acc<V>) {
        let (line_base, idx_base, parsed_base) = (self.lines, self.entries, self.parsed);
        self.entries += next.entries;
        let mut recs = next.recs;
        for r in &mut recs {
            r.line += line_base;
        }
        if self.recs.is_empty() {
            // The first chunk's records are taken as they are, not copied.
            self.recs = recs;
        } else {
            self.recs.extend(recs);
        }
        for mut p in next.problems {
            p.line += line_base;
            if self.problems.len() < MAX_PROBLEMS {
                self.problems.push(p);
            } else {
                self.problems_dropped += 1;
            }
        }
        self.problems_dropped += next.problems_dropped;
        self.labels.extend(next.labels.into_iter().map(|mut l| {
            l.entry += idx_base;
            l
        }));
        self.names
            .extend(next.names.into_iter().map(|(i, n)| (i + idx_base, n)));
        self.parsed_index
            .extend(next.parsed_index.into_iter().map(|p| p + parsed_base));
        self.first_kept_index.extend(
            next.first_kept_index
                .into_iter()
                .map(|(i, k)| (i + idx_base, k)),
        );
        self.recoveries
            .extend(next.recoveries.into_iter().map(|(i, r)| (i + idx_base, r)));
        self.parsed += next.parsed;
        self.lines = line_base + next.lines;
        self.visitor.merge(next.visitor, idx_base);
    }

    /// The migration plan for a v1/v2 file.
    pub fn plan(&self) -> Option<migrate::Plan> {
        let h = self.header.as_ref()?;
        (h.version < 3).then(|| migrate::Plan::new(h.version, &h.id))
    }
}

/// Where a member of an object lies in its line (a [`Member`] without the borrow).
#[derive(Clone, Copy)]
struct MemberSpan {
    key_start: usize,
    key_end: usize,
    value_start: usize,
    value_end: usize,
    escaped: bool,
}

impl MemberSpan {
    fn of(m: &Member<'_>) -> MemberSpan {
        MemberSpan {
            key_start: m.key_start,
            key_end: m.key_end,
            value_start: m.value_start,
            value_end: m.value_end,
            escaped: m.key.escaped,
        }
    }

    fn member<'a>(&self, line: &'a [u8]) -> Member<'a> {
        Member {
            key: RawStr {
                raw: &line[self.key_start + 1..self.key_end - 1],
                escaped: self.escaped,
            },
            key_start: self.key_start,
            key_end: self.key_end,
            value_start: self.value_start,
            value_end: self.value_end,
        }
    }
}

pub(crate) fn header_from(
    line: &[u8],
    members: &[Member<'_>],
    line_no: u32,
) -> Result<Header, String> {
    let field = |k: &str| json::field(line, members, k);
    let string = |k: &str| {
        field(k)
            .and_then(RawStr::from_value)
            .map(|r| r.decode().into_owned())
    };
    let Some(id) = string("id") else {
        return Err(format!(
            "the session header on line {line_no} has no string \"id\""
        ));
    };
    let version = match field("version").and_then(json::number) {
        None => 1,
        Some(v) if v >= 0.0 && v.fract() == 0.0 && v < 1e9 => v as u32,
        Some(v) => return Err(format!("the session header has an invalid version {v}")),
    };
    let start = json::skip_ws(line, 0);
    let end = line.len() - line.iter().rev().take_while(|&&c| json::is_ws(c)).count();
    Ok(Header {
        raw: line[start..end.max(start)].to_vec(),
        line: line_no,
        id,
        cwd: string("cwd").unwrap_or_default(),
        timestamp: string("timestamp"),
        version,
        parent_session: string("parentSession"),
    })
}

/// Calls `f(offset, line_number, line, terminated)` for every line of `file[start..end]`
/// (lines numbered from 1 within the range). Returns whether the range ends with `\n`.
pub fn for_each_line_in(
    file: &File,
    start: u64,
    end: u64,
    mut f: impl FnMut(u64, u32, &[u8], bool),
) -> io::Result<bool> {
    const BLOCK: usize = 1 << 20;
    // The thread's buffer from an earlier call (no new pages to fault in and zero for every
    // file of a store); taken, so that a nested call gets a buffer of its own.
    let mut buf = BUF.take();
    let size = BLOCK.min((end - start) as usize + 1).max(4096);
    if buf.len() < size {
        buf.resize(size, 0);
    }
    let result = lines_in_buf(file, start, end, &mut buf, &mut f);
    if buf.capacity() <= KEEP {
        BUF.set(buf);
    }
    result
}

thread_local! {
    /// The buffer [`for_each_line_in`] reads into, kept between calls.
    static BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The largest buffer kept for the next call (a longer line's buffer is freed).
const KEEP: usize = 16 << 20;

fn lines_in_buf(
    file: &File,
    start: u64,
    end: u64,
    buf: &mut Vec<u8>,
    f: &mut impl FnMut(u64, u32, &[u8], bool),
) -> io::Result<bool> {
    let mut filled = 0usize; // bytes of buf holding data
    let mut base = start; // file offset of buf[0]
    let mut pos = start; // next file offset to read
    let mut line_no = 0u32;
    loop {
        if buf.len() - filled < buf.len() / 2 {
            buf.resize(buf.len() * 2, 0); // a line longer than the buffer
        }
        let want = ((end - pos) as usize).min(buf.len() - filled);
        let n = loop {
            match file.read_at(&mut buf[filled..filled + want], pos) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        pos += n as u64;
        let stop = filled + n;
        let mut line_start = 0;
        for nl in memchr::memchr_iter(b'\n', &buf[filled..stop]) {
            let nl = filled + nl;
            line_no = line_no.saturating_add(1);
            f(
                base + line_start as u64,
                line_no,
                &buf[line_start..nl],
                true,
            );
            line_start = nl + 1;
        }
        if n == 0 || pos >= end {
            if line_start < stop {
                line_no = line_no.saturating_add(1);
                f(
                    base + line_start as u64,
                    line_no,
                    &buf[line_start..stop],
                    false,
                );
                return Ok(false);
            }
            return Ok(true);
        }
        buf.copy_within(line_start..stop, 0);
        filled = stop - line_start;
        base += line_start as u64;
    }
}

/// Offset just after the first `\n` at or after `at` (or `end`).
fn next_line_start(file: &File, at: u64, end: u64) -> io::Result<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut pos = at;
    while pos < end {
        let want = ((end - pos) as usize).min(buf.len());
        let n = file.read_at(&mut buf[..want], pos)?;
        if n == 0 {
            break;
        }
        if let Some(k) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(pos + k as u64 + 1);
        }
        pos += n as u64;
    }
    Ok(end)
}

/// An empty vector of members in the allocation of `v`, for another line: the type is the
/// same whatever the lifetime, so the standard library collects into the same allocation.
// `filter` would keep the lifetime of the items; this closure gives them the new one.
#[allow(clippy::unnecessary_filter_map)]
fn recycle<'b>(mut v: Vec<Member<'_>>) -> Vec<Member<'b>> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

/// Scans `file[..len]`. Returns the accumulator and whether the file ends with `\n`.
pub fn scan_file<V: Visit>(file: &File, len: u64, visitor: V) -> io::Result<(Acc<V>, bool)> {
    // The header comes first: find it with a sequential look at the start of the file, a
    // small read first (most headers are one short line) and a larger one when that did
    // not settle where the header is.
    let mut acc = Acc::new(None, true, visitor);
    let mut header_end = None;
    for probe in [PROBE_FIRST, PROBE_MAX] {
        // A retry starts afresh; the visitor saw nothing (no entry counts before a header).
        acc = Acc::new(None, true, acc.visitor);
        header_end = None;
        let mut settled = false;
        let probe_end = len.min(probe);
        let _ = for_each_line_in(file, 0, probe_end, |offset, line_no, line, terminated| {
            if settled {
                return;
            }
            if !terminated && probe_end < len {
                settled = probe == PROBE_MAX; // the header line is longer: go sequential
                return;
            }
            let parsed_before = acc.parsed;
            acc.line(offset, line_no, line, terminated || probe_end == len);
            if acc.header.is_some() {
                header_end = Some((offset + line.len() as u64 + 1, line_no));
                settled = true;
            } else if acc.parsed > parsed_before || acc.saw_entry {
                settled = true; // the first JSON value is not a header
            }
        })?;
        if settled || probe_end == len {
            break;
        }
    }
    let Some((body_start, header_line)) = header_end.filter(|(s, _)| *s <= len) else {
        // No header at the start: one sequential pass that records every problem.
        let mut acc = Acc::new(None, true, acc.visitor.split());
        let nl = for_each_line_in(file, 0, len, |o, n, l, t| acc.line(o, n, l, t))?;
        return Ok((acc, nl || len == 0));
    };
    acc.lines = header_line;
    let header = acc.header.clone();
    let body = len - body_start;
    let threads = if body >= PARALLEL_MIN {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8)
            .min((body / (PARALLEL_MIN / 2)) as usize)
    } else {
        1
    };
    let mut bounds = vec![body_start];
    for k in 1..threads {
        let at = body_start + body * k as u64 / threads as u64;
        let b = next_line_start(file, at.max(*bounds.last().unwrap_or(&body_start)), len)?;
        bounds.push(b);
    }
    bounds.push(len);
    bounds.dedup();
    let ranges: Vec<(u64, u64)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    if ranges.len() <= 1 {
        let mut part = Acc::new(header.clone(), false, acc.visitor.split());
        let nl = match ranges.first() {
            Some(&(s, e)) => for_each_line_in(file, s, e, |o, n, l, t| part.line(o, n, l, t))?,
            None => true,
        };
        acc.append(part);
        return Ok((acc, nl));
    }
    let parts: Vec<io::Result<(Acc<V>, bool)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ranges
            .iter()
            .map(|&(s, e)| {
                let mut part = Acc::new(header.clone(), false, acc.visitor.split());
                scope.spawn(move || {
                    let nl = for_each_line_in(file, s, e, |o, n, l, t| part.line(o, n, l, t))?;
                    Ok((part, nl))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("scan thread failed")))
            })
            .collect()
    });
    let mut nl = true;
    for p in parts {
        let (part, ends_nl) = p?;
        nl = ends_nl;
        acc.append(part);
    }
    Ok((acc, nl))
}
