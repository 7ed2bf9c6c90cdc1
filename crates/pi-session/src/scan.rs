//! The index pass over a session file: every line is validated and its top-level `type`,
//! `id` and `parentId` recorded. Large files are split at line boundaries and scanned by
//! several threads; the pieces are joined in file order, so the result is the same as a
//! single sequential pass.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::id::Id;
use super::index::{Header, Kind, LabelRec, NONE, Problem, ProblemKind, Rec};
use super::upgrade;
use pi_base::json::{self, Member, RawStr};

/// At most this many problems are kept; the rest are only counted.
pub(crate) const MAX_PROBLEMS: usize = 10_000;

/// The first look for the header reads this much, the second (when the first was not
/// enough) this much.
const PROBE_FIRST: u64 = 8 << 10;
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
    /// With [`Visit::NESTED`] (and no [`Visit::DEEP`]): keys leading further down from the
    /// nested object, whose objects' members are collected in the same pass too (see
    /// [`json::scan_object_nested`] and [`Visit::entry_below`]).
    const PATH: &'static [&'static str] = &[];
    /// [`Visit::entry_nested`] for a visitor with a [`Visit::PATH`]: `below` are the members
    /// found further down in the last occurrence of the nested object, each with the offset
    /// of the object that holds it, in file order.
    fn entry_below(
        &mut self,
        idx: u32,
        line: &[u8],
        members: &[Member<'_>],
        nested: &[Member<'_>],
        below: &[(usize, Member<'_>)],
    ) {
        let _ = below;
        self.entry_nested(idx, line, members, nested);
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
    below_buf: Vec<(usize, Member<'static>)>,
    /// The members of the object value of `V::NESTED`, and of the objects below it along
    /// `V::PATH` (each with the offset of its object).
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
            below_buf: Vec::new(),
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
        let scanned = if line[start] == b'{' {
            self.scan_members(line, start, false).and_then(|end| {
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
        self.accept(offset, line_no, line, start);
    }

    /// [`Acc::line`] for a line that starts an object at `rest[0]`, scanned where it lies:
    /// `rest` runs on to the end of the buffer, and the line's end is found by the scan
    /// rather than a search. `Some(length of the line)` when the line was valid and taken
    /// in, `None` when it must go through [`Acc::line`] instead (nothing was taken in).
    #[inline]
    pub(crate) fn try_line(&mut self, offset: u64, line_no: u32, rest: &[u8]) -> Option<usize> {
        if rest.first() != Some(&b'{') {
            return None;
        }
        let end = self.scan_members(rest, 0, true).ok()?;
        let mut nl = end;
        while nl < rest.len() && matches!(rest[nl], b' ' | b'\t' | b'\r') {
            nl += 1;
        }
        if rest.get(nl) != Some(&b'\n') || nl > u32::MAX as usize {
            return None;
        }
        self.lines = self.lines.max(line_no);
        self.accept(offset, line_no, &rest[..nl], 0);
        Some(nl)
    }

    /// Scans the object at `line[start]`, collecting its members (and those below it that
    /// the visitor wants). `in_line`: `line` may hold more lines after this one (see
    /// [`json::in_line`]). Returns the index after the object.
    #[inline(always)]
    fn scan_members(
        &mut self,
        line: &[u8],
        start: usize,
        in_line: bool,
    ) -> Result<usize, json::SyntaxError> {
        self.members.clear();
        self.nested.clear();
        self.elements.clear();
        self.subs.clear();
        let members = &mut self.members;
        let nested = &mut self.nested;
        let (elements, subs) = (&mut self.elements, &mut self.subs);
        let top = |m: Member<'_>| members.push(MemberSpan::of(&m));
        let mut deep_to = |depth, at, m: Member<'_>| {
            let to = match depth {
                json::Depth::Inner => &mut *nested,
                json::Depth::Element => &mut *elements,
                json::Depth::Sub => &mut *subs,
            };
            to.push((at, MemberSpan::of(&m)));
        };
        let scanned = match (V::NESTED, V::DEEP, in_line) {
            (_, Some(deep), false) => json::scan_object_deep(line, start, deep, top, &mut deep_to),
            (_, Some(deep), true) => json::in_line::deep(line, start, deep, top, &mut deep_to),
            (None, None, false) => json::scan_object(line, start, top),
            (None, None, true) => json::in_line::object(line, start, top),
            (Some(key), None, in_line) => {
                let mut to_nested = |at, m: Member<'_>| nested.push((at, MemberSpan::of(&m)));
                if in_line {
                    json::in_line::nested(line, start, key, V::PATH, top, &mut to_nested)
                } else {
                    json::scan_object_nested(line, start, key, V::PATH, top, &mut to_nested)
                }
            }
        };
        scanned.map(|(end, _)| end)
    }

    /// Takes in a line that holds one valid JSON value starting at `line[start]` (whose
    /// members, for an object, [`Acc::scan_members`] collected).
    fn accept(&mut self, offset: u64, line_no: u32, line: &[u8], start: usize) {
        self.parsed += 1;
        let parsed_idx = self.parsed - 1;
        let at = (line_no, offset);
        if line[start] != b'{' {
            let column = json::line_col(line, start).1;
            self.problem(
                ProblemKind::NotEntry,
                at,
                Some(column),
                "a JSON value that is not an object".into(),
            );
            return;
        }
        let mut members = recycle(std::mem::take(&mut self.member_buf));
        members.extend(self.members.iter().map(|m| m.member(line)));
        let Some((kind, id)) = self.admit(at, line, &members) else {
            return;
        };
        let idx = self.entries;
        self.entries += 1;
        if id.is_none() {
            self.note_v1(idx, parsed_idx, kind, line, &members);
        }
        if V::RECORDS {
            self.note_kind(idx, kind, line, &members);
        }
        self.visit(idx, line, &members);
        if V::RECORDS {
            self.recs.push(record(at, line, &members, kind, id));
        }
        self.member_buf = recycle(members);
    }

    /// Whether an object line is an entry: it has a string `type`, a session header came
    /// before it, and (after v1) it has a string `id`. A header line is taken in here, and
    /// every other line that is no entry is a problem. `Some((kind, id))` for an entry,
    /// with `id` `None` in a v1 file (the migration plan assigns them).
    #[inline]
    fn admit<'l>(
        &mut self,
        at: (u32, u64),
        line: &'l [u8],
        members: &[Member<'l>],
    ) -> Option<(Kind, Option<RawStr<'l>>)> {
        let field = |k: &str| json::field(line, members, k);
        let Some(ty) = field("type").and_then(RawStr::from_value) else {
            let msg = "an object without a string \"type\"".into();
            self.problem(ProblemKind::NotEntry, at, None, msg);
            return None;
        };
        if ty.eq_str("session") {
            self.header_line(at, line, members);
            return None;
        }
        if self.header.is_none() {
            self.headless(at);
            return None;
        }
        let kind = Kind::from_type(ty.raw);
        if self.version() < 2 {
            return Some((kind, None)); // ids are assigned by the migration plan
        }
        let Some(id) = field("id").and_then(RawStr::from_value) else {
            let msg = "an entry without a string \"id\"".into();
            self.problem(ProblemKind::NotEntry, at, None, msg);
            return None;
        };
        Some((kind, Some(id)))
    }

    /// A `session` line: the header when this scan looks for one and no entry came first,
    /// else a problem.
    #[cold]
    fn header_line(&mut self, (line_no, offset): (u32, u64), line: &[u8], members: &[Member<'_>]) {
        if self.discover_header && self.header.is_none() && !self.saw_entry {
            match header_from(line, members, line_no) {
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
    }

    /// An entry before any session header: a problem.
    #[cold]
    fn headless(&mut self, (line_no, offset): (u32, u64)) {
        let msg = if self.saw_entry {
            "an entry in a file without a session header (skipped)".to_owned()
        } else {
            format!("the first entry (line {line_no}) comes before any session header line")
        };
        self.saw_entry = true;
        self.problem(ProblemKind::NoHeader, (line_no, offset), None, msg);
    }

    /// What the migration of a v1 file needs: the entry's index among parsed lines, and a
    /// compaction's numeric `firstKeptEntryIndex`.
    #[inline]
    fn note_v1(
        &mut self,
        idx: u32,
        parsed_idx: u32,
        kind: Kind,
        line: &[u8],
        members: &[Member<'_>],
    ) {
        self.parsed_index.push(parsed_idx);
        if kind == Kind::Compaction {
            let fk = json::field(line, members, "firstKeptEntryIndex").and_then(json::number);
            self.first_kept_index.push((idx, fk));
        }
    }

    /// Keeps what opening a session needs from the entries of some kinds: labels, session
    /// names and recorded recoveries of interrupted appends.
    #[inline]
    fn note_kind(&mut self, idx: u32, kind: Kind, line: &[u8], members: &[Member<'_>]) {
        let field = |k: &str| json::field(line, members, k);
        if kind == Kind::Label {
            if let Some(target) = string_field(line, members, "targetId") {
                self.labels.push(LabelRec {
                    entry: idx,
                    target: Id::new(&target),
                    label: string_field(line, members, "label"),
                    timestamp: string_field(line, members, "timestamp").unwrap_or_default(),
                });
            }
        } else if kind == Kind::SessionInfo {
            let name = string_field(line, members, "name").unwrap_or_default();
            self.names.push((idx, name.trim().to_owned()));
        } else if kind == Kind::Custom
            && field("customType")
                .and_then(RawStr::from_value)
                .is_some_and(|t| t.eq_str(super::pending::CUSTOM_TYPE))
            && let Some(range) = field("data").and_then(super::pending::recorded_range)
        {
            self.recoveries.push((idx, range));
        }
    }

    /// Hands the entry to the visitor, with the members below the top level it asked for.
    #[inline]
    fn visit(&mut self, idx: u32, line: &[u8], members: &[Member<'_>]) {
        let Some(key) = V::DEEP.map(|d| d.key).or(V::NESTED) else {
            self.visitor.entry(idx, line, members);
            return;
        };
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
                .entry_deep(idx, line, members, &nested, &elements, &subs);
        } else if !V::PATH.is_empty() {
            // Collected after the nested object's members: those inside its span.
            let mut below = recycle_below(std::mem::take(&mut self.below_buf));
            below.extend(
                self.nested
                    .iter()
                    .filter(|(o, _)| span.is_some_and(|(a, b)| a < *o && *o < b))
                    .map(|(o, m)| (*o, m.member(line))),
            );
            self.visitor
                .entry_below(idx, line, members, &nested, &below);
            self.below_buf = recycle_below(below);
        } else {
            self.visitor.entry_nested(idx, line, members, &nested);
        }
        self.nested_buf = recycle(nested);
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
    pub fn plan(&self) -> Option<upgrade::Plan> {
        let h = self.header.as_ref()?;
        (h.version < 3).then(|| upgrade::Plan::new(h.version, &h.id))
    }
}

/// Where a member of an object lies in its line (a [`Member`] without the borrow). Lines
/// are shorter than 4 GiB. Each field is read from the [`Member`] on its own: a member
/// just written by the scan and read back in wider loads stalls the store forwarding.
#[derive(Clone, Copy)]
struct MemberSpan {
    key_start: u32,
    key_end: u32,
    value_start: u32,
    value_end: u32,
    escaped: bool,
}

impl MemberSpan {
    #[inline(always)]
    fn of(m: &Member<'_>) -> MemberSpan {
        // One load per field, kept apart (see above).
        let one = |x: &usize| std::hint::black_box(*x) as u32;
        MemberSpan {
            key_start: one(&m.key_start),
            key_end: one(&m.key_end),
            value_start: one(&m.value_start),
            value_end: one(&m.value_end),
            escaped: m.key.escaped,
        }
    }

    fn member<'a>(&self, line: &'a [u8]) -> Member<'a> {
        let (ks, ke) = (self.key_start as usize, self.key_end as usize);
        Member {
            key: RawStr {
                raw: &line[ks + 1..ke - 1],
                escaped: self.escaped,
            },
            key_start: ks,
            key_end: ke,
            value_start: self.value_start as usize,
            value_end: self.value_end as usize,
        }
    }
}

/// The record of an entry (its parent not yet resolved): its place, kind, id and
/// `parentId`.
#[inline]
fn record(
    (line_no, offset): (u32, u64),
    line: &[u8],
    members: &[Member<'_>],
    kind: Kind,
    id: Option<RawStr<'_>>,
) -> Rec {
    let (id, parent_id) = match id {
        Some(id) => (
            Id::new(&id.decode()),
            json::field(line, members, "parentId")
                .and_then(RawStr::from_value)
                .map(|p| Id::new(&p.decode())),
        ),
        None => (Id::new(""), None),
    };
    Rec {
        offset,
        len: line.len() as u32,
        line: line_no,
        kind,
        id,
        parent_id,
        parent: NONE,
    }
}

/// The decoded value of the member `key` when it is a string.
fn string_field(line: &[u8], members: &[Member<'_>], key: &str) -> Option<String> {
    json::field(line, members, key)
        .and_then(RawStr::from_value)
        .map(|r| r.decode().into_owned())
}

pub(crate) fn header_from(
    line: &[u8],
    members: &[Member<'_>],
    line_no: u32,
) -> Result<Header, String> {
    let string = |k: &str| string_field(line, members, k);
    let Some(id) = string("id") else {
        return Err(format!(
            "the session header on line {line_no} has no string \"id\""
        ));
    };
    let version = match json::field(line, members, "version").and_then(json::number) {
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
pub(crate) fn for_each_line_in(
    file: &File,
    start: u64,
    end: u64,
    f: impl FnMut(u64, u32, &[u8], bool),
) -> io::Result<bool> {
    for_each_line_into(file, start, end, &mut Lines(f))
}

/// Where [`for_each_line_into`] hands lines.
pub(crate) trait LineSink {
    /// Takes in the line at the start of `rest` (which runs on to the end of the buffer)
    /// and returns its length, when it can find where it ends in the same look.
    fn try_line(&mut self, offset: u64, line_no: u32, rest: &[u8]) -> Option<usize>;
    /// Takes in one line (without its newline); `terminated` is false for a last line with
    /// no newline.
    fn line(&mut self, offset: u64, line_no: u32, line: &[u8], terminated: bool);
}

/// A closure taking every line.
struct Lines<F>(F);

impl<F: FnMut(u64, u32, &[u8], bool)> LineSink for Lines<F> {
    fn try_line(&mut self, _: u64, _: u32, _: &[u8]) -> Option<usize> {
        None
    }
    fn line(&mut self, offset: u64, line_no: u32, line: &[u8], terminated: bool) {
        (self.0)(offset, line_no, line, terminated)
    }
}

impl<V: Visit> LineSink for Acc<V> {
    #[inline]
    fn try_line(&mut self, offset: u64, line_no: u32, rest: &[u8]) -> Option<usize> {
        Acc::try_line(self, offset, line_no, rest)
    }
    fn line(&mut self, offset: u64, line_no: u32, line: &[u8], terminated: bool) {
        Acc::line(self, offset, line_no, line, terminated)
    }
}

/// [`for_each_line_in`] into a [`LineSink`]: a line whose end the sink finds itself is not
/// searched for its newline first.
pub(crate) fn for_each_line_into(
    file: &File,
    start: u64,
    end: u64,
    f: &mut impl LineSink,
) -> io::Result<bool> {
    // Small in unit tests, so that their lines cross from one read into the next.
    const BLOCK: usize = if cfg!(test) { 4096 } else { 1 << 20 };
    // The thread's buffer from an earlier call (no new pages to fault in and zero for every
    // file of a store); taken, so that a nested call gets a buffer of its own.
    let mut buf = BUF.take();
    let size = BLOCK.min((end - start) as usize + 1).max(4096);
    if buf.len() < size {
        buf.resize(size, 0);
    }
    let result = lines_in_buf(file, start, end, &mut buf, f);
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
    f: &mut impl LineSink,
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
        loop {
            let offset = base + line_start as u64;
            let next_no = line_no.saturating_add(1);
            if let Some(len) = f.try_line(offset, next_no, &buf[line_start..stop]) {
                line_no = next_no;
                line_start += len + 1;
                continue;
            }
            // The bytes carried over from the last read hold no newline.
            let from = line_start.max(filled);
            let Some(k) = memchr::memchr(b'\n', &buf[from..stop]) else {
                break;
            };
            let nl = from + k;
            line_no = next_no;
            f.line(offset, line_no, &buf[line_start..nl], true);
            line_start = nl + 1;
        }
        if n == 0 || pos >= end {
            if line_start < stop {
                line_no = line_no.saturating_add(1);
                f.line(
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

/// [`recycle`] for members with the offsets of their objects.
#[allow(clippy::unnecessary_filter_map)]
fn recycle_below<'b>(mut v: Vec<(usize, Member<'_>)>) -> Vec<(usize, Member<'b>)> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

/// Scans `file[..len]`. Returns the accumulator and whether the file ends with `\n`.
pub(crate) fn scan_file<V: Visit>(file: &File, len: u64, visitor: V) -> io::Result<(Acc<V>, bool)> {
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
        let nl = for_each_line_into(file, 0, len, &mut acc)?;
        return Ok((acc, nl || len == 0));
    };
    acc.lines = header_line;
    let header = acc.header.clone();
    let body = len - body_start;
    let threads = if body >= PARALLEL_MIN {
        pi_base::par::threads_at_most(8).min((body / (PARALLEL_MIN / 2)) as usize)
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
            Some(&(s, e)) => for_each_line_into(file, s, e, &mut part)?,
            None => true,
        };
        acc.append(part);
        return Ok((acc, nl));
    }
    let jobs: Vec<_> = ranges
        .iter()
        .map(|&(s, e)| (s, e, Acc::new(header.clone(), false, acc.visitor.split())))
        .collect();
    let threads = jobs.len();
    let parts = pi_base::par::map(jobs, threads, |(s, e, mut part)| {
        let nl = for_each_line_into(file, s, e, &mut part)?;
        Ok::<_, io::Error>((part, nl))
    });
    let mut nl = true;
    for p in parts {
        let (part, ends_nl) = p?;
        nl = ends_nl;
        acc.append(part);
    }
    Ok((acc, nl))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    /// Every entry the pass hands over: its index, line and top-level keys, and the keys
    /// of its `message` object.
    /// An entry's index, line, top-level keys and the keys of its `message`.
    type Visited = (u32, Vec<u8>, Vec<String>, Vec<String>);

    #[derive(Default)]
    struct Seen(Vec<Visited>);

    impl Visit for Seen {
        const NESTED: Option<&'static str> = Some("message");
        fn entry(&mut self, _: u32, _: &[u8], _: &[Member<'_>]) {
            unreachable!("a visitor with NESTED gets entry_nested");
        }
        fn entry_nested(&mut self, idx: u32, line: &[u8], m: &[Member<'_>], n: &[Member<'_>]) {
            let keys = |m: &[Member<'_>]| m.iter().map(|m| m.key.decode().into_owned()).collect();
            self.0.push((idx, line.to_vec(), keys(m), keys(n)));
        }
        fn split(&self) -> Self {
            Seen::default()
        }
        fn merge(&mut self, next: Self, offset: u32) {
            self.0
                .extend(next.0.into_iter().map(|(i, l, k, n)| (i + offset, l, k, n)));
        }
    }

    type Outcome = (
        bool,
        Option<Header>,
        Vec<Rec>,
        Vec<Problem>,
        u32,
        u32,
        Vec<Visited>,
    );

    fn outcome(acc: Acc<Seen>, nl: bool) -> Outcome {
        (
            nl,
            acc.header,
            acc.recs,
            acc.problems,
            acc.lines,
            acc.parsed,
            acc.visitor.0,
        )
    }

    /// The pass that finds each line's end by its scan, and the one that searches for
    /// the newline first.
    fn both(text: &[u8]) -> (Outcome, Outcome) {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(text).unwrap();
        let len = text.len() as u64;
        let mut fused = Acc::new(None, true, Seen::default());
        let nl = for_each_line_into(&f, 0, len, &mut fused).unwrap();
        let fused = outcome(fused, nl);
        let mut plain = Acc::new(None, true, Seen::default());
        let nl = for_each_line_in(&f, 0, len, |o, n, l, t| plain.line(o, n, l, t)).unwrap();
        (fused, outcome(plain, nl))
    }

    fn line() -> impl Strategy<Value = String> {
        let entry = (0u32..50, 0usize..300).prop_map(|(id, pad)| {
            format!(
                r#"{{"type":"message","id":"e{id}","parentId":null,"message":{{"role":"user","content":"{}"}}}}"#,
                "x".repeat(pad)
            )
        });
        prop_oneof![
            4 => entry.clone(),
            1 => entry.clone().prop_map(|l| format!("  {l}")),
            1 => entry.clone().prop_map(|l| format!("{l} \t\r")),
            1 => entry.clone().prop_map(|l| l.replacen(",", ",\n", 1)),
            1 => entry.clone().prop_map(|l| l.replacen(":", " \r\n :", 1)),
            1 => entry.clone().prop_map(|l| l[..l.len() / 2].to_owned()),
            1 => entry.prop_map(|l| l.replacen("user", "us\u{1}er", 1)),
            1 => Just(r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#.to_owned()),
            1 => Just(String::new()),
            1 => Just("[1, 2]".to_owned()),
            1 => Just(r#"{"type":"label","id":"l","targetId":"e1","label":"x"} {}"#.to_owned()),
            1 => "[ -~]{0,20}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn lines_found_by_their_scan_are_the_lines_a_search_finds(
            lines in proptest::collection::vec(line(), 0..60),
            header in any::<bool>(),
            end_nl in any::<bool>(),
        ) {
            let mut text = String::new();
            if header {
                text.push_str(r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#);
                text.push('\n');
            }
            text.push_str(&lines.join("\n"));
            if end_nl {
                text.push('\n');
            }
            let (fused, plain) = both(text.as_bytes());
            prop_assert_eq!(fused, plain);
        }
    }

    /// The keys found below `message` along `usage`, `cost`, and the offsets of their objects.
    #[derive(Default)]
    struct Below(Vec<(usize, String)>);

    impl Visit for Below {
        const NESTED: Option<&'static str> = Some("message");
        const PATH: &'static [&'static str] = &["usage", "cost"];
        fn entry(&mut self, _: u32, _: &[u8], _: &[Member<'_>]) {}
        fn entry_below(
            &mut self,
            _: u32,
            _: &[u8],
            _: &[Member<'_>],
            _: &[Member<'_>],
            below: &[(usize, Member<'_>)],
        ) {
            self.0
                .extend(below.iter().map(|(o, m)| (*o, m.key.decode().into_owned())));
        }
        fn split(&self) -> Self {
            Below::default()
        }
        fn merge(&mut self, next: Self, _: u32) {
            self.0.extend(next.0);
        }
    }

    #[test]
    fn members_below_come_from_the_last_nested_object_only() {
        let head = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#;
        let entry = r#"{"type":"message","id":"a","message":{"usage":{"x":1}},"message":{"role":"r","usage":{"y":2,"cost":{"total":3},"z":{"w":4}}}}"#;
        let text = format!("{head}\n{entry}\n");
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let (acc, _) = scan_file(&f, text.len() as u64, Below::default()).unwrap();
        let usage = entry.rfind(r#"{"y""#).unwrap();
        let cost = entry.rfind(r#"{"total""#).unwrap();
        assert_eq!(
            acc.visitor.0,
            [
                (usage, "y".to_owned()),
                (cost, "total".to_owned()),
                (usage, "cost".to_owned()),
                (usage, "z".to_owned()),
            ]
        );
    }

    #[test]
    fn an_object_over_two_lines_is_two_bad_lines_and_a_long_line_crosses_reads() {
        let head = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#;
        let long = format!(
            r#"{{"type":"message","id":"a","parentId":null,"message":{{"content":"{}"}}}}"#,
            "y".repeat(10_000)
        );
        let text = format!("{head}\n{{\"type\":\"message\",\n\"id\":\"b\"}}\n{long}\n");
        let (fused, plain) = both(text.as_bytes());
        assert_eq!(fused, plain);
        let (_, _, recs, problems, lines, ..) = fused;
        assert_eq!(lines, 4);
        assert_eq!(problems.iter().map(|p| p.line).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].line, 4);
        assert_eq!(recs[0].len as usize, long.len());
    }
}
