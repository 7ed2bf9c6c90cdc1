//! Planning a compaction as the reference's newest release does (`prepareCompaction`,
//! `findCutPoint`): what is summarized, where the kept part starts, whether a turn is split,
//! the context size before, and the files touched.

use std::io;

use super::text::FileOps;
use crate::context::tokens;
use crate::context::{self, js_date};
use pi_ai::value::Value;
use pi_session::{Kind, Session};

/// `compaction.reserveTokens` and `compaction.keepRecentTokens`, and the context window
/// of the model that writes the summary (what a summary request can carry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
    /// The summary model's context window (0: not known; [`DEFAULT_WINDOW`] is assumed).
    pub window: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
            window: 0,
        }
    }
}

/// The window assumed when the summary model's is not known.
pub(crate) const DEFAULT_WINDOW: u64 = 200_000;

/// The fewest tokens of conversation a summary request is given room for, however small
/// the window.
const MIN_REQUEST_TOKENS: u64 = 4_096;

impl Budget {
    /// How many (estimated) tokens of conversation one summary request can carry: the
    /// window less the reserve for the answer and the prompt. Older messages beyond it are
    /// left out of the request.
    pub(crate) fn request_tokens(&self) -> u64 {
        let window = if self.window == 0 {
            DEFAULT_WINDOW
        } else {
            self.window
        };
        window
            .saturating_sub(self.reserve_tokens)
            .max(MIN_REQUEST_TOKENS)
    }
}

/// One entry of the path, as the cut-point search sees it.
#[derive(Debug, Clone)]
pub struct Item {
    /// Index of the entry in the session.
    pub entry: u32,
    pub kind: Kind,
    /// `message.role` of a message entry.
    pub role: Option<String>,
    /// The message's estimated tokens (message entries only; 0 otherwise).
    pub tokens: u64,
}

/// The agent message of an entry, for summaries (upstream's `getMessageFromEntry`).
pub(crate) fn entry_message(kind: Kind, e: &Value) -> Option<Value> {
    use pi_ai::value::Obj;
    let mut m = Obj::new();
    match kind {
        Kind::Message => return e.get("message").filter(|m| m.truthy()).cloned(),
        Kind::CustomMessage => {
            m.set("role", Value::str("custom"));
            for k in ["customType", "content", "display", "details"] {
                m.set_opt(k, e.get(k).cloned());
            }
        }
        Kind::BranchSummary => {
            m.set("role", Value::str("branchSummary"));
            m.set_opt("summary", e.get("summary").cloned());
            m.set_opt("fromId", e.get("fromId").cloned());
        }
        Kind::Compaction => {
            m.set("role", Value::str("compactionSummary"));
            m.set_opt("summary", e.get("summary").cloned());
            m.set_opt("tokensBefore", e.get("tokensBefore").cloned());
        }
        _ => return None,
    }
    m.set("timestamp", js_date(e.get("timestamp")));
    Some(Value::Obj(m))
}

/// Reads the entries `path` of a session as [`Item`]s (their content is not kept).
pub fn load(s: &Session, path: &[u32]) -> io::Result<Vec<Item>> {
    let mut items = Vec::with_capacity(path.len());
    s.for_each_line(path, |i, line| {
        let kind = s.entries[i as usize].kind;
        let (role, tokens) = match kind {
            Kind::Message => {
                let value = Value::parse(line).unwrap_or_default();
                let msg = value.get("message");
                let role = msg
                    .and_then(|m| m.get("role"))
                    .and_then(Value::as_jstr)
                    .map(|r| r.text().into_owned());
                (role, msg.map_or(0, tokens::estimate))
            }
            _ => (None, 0),
        };
        items.push(Item {
            entry: i,
            kind,
            role,
            tokens,
        });
        Ok(())
    })?;
    Ok(items)
}

/// The messages of a span, as a summary request carries them: the newest that fit in
/// `limit` tokens (older ones are counted, not kept), and every entry they come from.
#[derive(Debug, Clone, Default)]
pub struct Span {
    /// The agent messages the request carries, oldest first.
    pub messages: Vec<Value>,
    /// Every entry of the span that has a message (also those left out).
    pub entries: Vec<u32>,
    /// Messages per role (all of them), in order of first appearance.
    pub roles: Vec<(String, usize)>,
    /// The oldest messages left out of the request.
    pub omitted: usize,
}

impl Span {
    /// Reads the messages of `entries` (compactions skipped), keeping the newest that fit
    /// in `limit` tokens, and adding every message's files to `files`.
    fn read(s: &Session, entries: &[u32], limit: u64, files: &mut FileOps) -> io::Result<Span> {
        let mut span = Span::default();
        let mut kept: std::collections::VecDeque<(Value, u64)> = Default::default();
        let mut total = 0u64;
        s.for_each_line(entries, |i, line| {
            let kind = s.entries[i as usize].kind;
            if kind == Kind::Compaction {
                return Ok(());
            }
            let value = Value::parse(line).unwrap_or_default();
            let Some(m) = entry_message(kind, &value) else {
                return Ok(());
            };
            files.add_message(&m);
            let role = m
                .get("role")
                .and_then(Value::as_jstr)
                .map_or_else(|| "(none)".to_owned(), |r| r.text().into_owned());
            match span.roles.iter_mut().find(|(r, _)| *r == role) {
                Some((_, n)) => *n += 1,
                None => span.roles.push((role, 1)),
            }
            span.entries.push(i);
            let t = tokens::estimate(&m);
            total += t;
            kept.push_back((m, t));
            // Keep at least the newest message, whatever its size.
            while total > limit && kept.len() > 1 {
                if let Some((_, old)) = kept.pop_front() {
                    total -= old;
                    span.omitted += 1;
                }
            }
            Ok(())
        })?;
        span.messages = kept.into_iter().map(|(m, _)| m).collect();
        Ok(span)
    }
}

/// Where to cut: the first kept item, and the start of the turn it splits (if any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub first_kept: usize,
    pub turn_start: Option<usize>,
    pub split: bool,
}

fn is_cut_point(it: &Item) -> bool {
    match it.kind {
        Kind::Message => matches!(
            it.role.as_deref(),
            Some(
                "bashExecution"
                    | "custom"
                    | "branchSummary"
                    | "compactionSummary"
                    | "user"
                    | "assistant"
            )
        ),
        Kind::BranchSummary | Kind::CustomMessage => true,
        _ => false,
    }
}

/// Upstream's `findTurnStartIndex`: the user message (or shell command, custom message,
/// branch summary) that starts the turn holding item `i`.
pub fn turn_start(items: &[Item], i: usize, start: usize) -> Option<usize> {
    (start..=i).rev().find(|&k| {
        let it = &items[k];
        matches!(it.kind, Kind::BranchSummary | Kind::CustomMessage)
            || (it.kind == Kind::Message
                && matches!(it.role.as_deref(), Some("user" | "bashExecution")))
    })
}

/// Upstream's `findCutPoint(entries, start, end, keepRecentTokens)`.
pub(crate) fn find_cut_point(items: &[Item], start: usize, end: usize, keep: u64) -> Cut {
    let cuts: Vec<usize> = (start..end).filter(|&i| is_cut_point(&items[i])).collect();
    let Some(&first) = cuts.first() else {
        return Cut {
            first_kept: start,
            turn_start: None,
            split: false,
        };
    };
    let mut cut = first;
    let mut total = 0u64;
    for i in (start..end).rev() {
        if items[i].kind != Kind::Message {
            continue;
        }
        total += items[i].tokens;
        if total >= keep {
            if let Some(&c) = cuts.iter().find(|&&c| c >= i) {
                cut = c;
            }
            break;
        }
    }
    while cut > start {
        let prev = &items[cut - 1];
        if matches!(prev.kind, Kind::Compaction | Kind::Message) {
            break;
        }
        cut -= 1;
    }
    let at = &items[cut];
    let user = at.kind == Kind::Message && at.role.as_deref() == Some("user");
    let ts = if user {
        None
    } else {
        turn_start(items, cut, start)
    };
    Cut {
        first_kept: cut,
        turn_start: ts,
        split: !user && ts.is_some(),
    }
}

/// Why there is no compaction to make.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoPlan {
    #[error("already compacted: the last entry of the path is a compaction")]
    AlreadyCompacted,
    #[error("nothing to compact: the session is too small")]
    TooSmall,
}

/// What a compaction will summarize and keep.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The entry the path ends at.
    pub leaf: u32,
    pub first_kept_entry_id: String,
    /// Session entry index of the first kept entry.
    pub first_kept: u32,
    /// The messages to summarize (the newest that fit in a request; the entries of all).
    pub history: Span,
    /// The first part of a split turn, likewise.
    pub turn_prefix: Span,
    pub split_turn: bool,
    /// Session entry index where the split turn starts.
    pub turn_start: Option<u32>,
    /// The context size before compaction (estimate of the rebuilt context).
    pub tokens_before: f64,
    /// The latest earlier compaction on the path, and its summary.
    pub previous: Option<u32>,
    pub previous_summary: Option<String>,
    /// Where the summarized span starts (the previous compaction's kept entry, or the
    /// first entry).
    pub boundary_start: u32,
    pub file_ops: FileOps,
    /// Entries on the path from the first kept entry to the leaf.
    pub kept_entries: usize,
    pub path_entries: usize,
    pub budget: Budget,
}

/// The previous compaction on a path, as the next one starts from it.
struct Previous {
    /// Its position on the path.
    pos: usize,
    summary: Option<String>,
    /// Where the span to summarize starts: the position of its first kept entry.
    boundary: usize,
    /// Its file lists (unless a hook wrote it).
    details: Option<Value>,
}

fn previous(s: &Session, path: &[u32]) -> io::Result<Option<Previous>> {
    let Some(p) = path
        .iter()
        .rposition(|&i| s.entries[i as usize].kind == Kind::Compaction)
    else {
        return Ok(None);
    };
    let e = Value::parse(&s.line(path[p])?).unwrap_or_default();
    let kept = e
        .get("firstKeptEntryId")
        .and_then(Value::as_jstr)
        .map(|k| k.text().into_owned());
    Ok(Some(Previous {
        pos: p,
        summary: e
            .get("summary")
            .filter(|v| !matches!(v, Value::Null))
            .map(|v| Value::js_string(Some(v)).text().into_owned()),
        boundary: kept
            .and_then(|k| {
                path.iter()
                    .position(|&i| s.entries[i as usize].id.as_str() == k)
            })
            .unwrap_or(p + 1),
        details: if e.get("fromHook").is_some_and(Value::truthy) {
            None
        } else {
            e.get("details").cloned()
        },
    }))
}

/// Upstream's `prepareCompaction(pathEntries, settings)` for the path to `leaf`, in memory
/// bounded by what a summary request can carry (`budget.request_tokens()`): the path is read
/// as a list of small items, then the messages to summarize are streamed, keeping the newest
/// that fit.
pub fn prepare(s: &Session, leaf: u32, budget: Budget) -> Result<Result<Plan, NoPlan>, io::Error> {
    let path = s.path_to(leaf);
    let kind = |i: u32| s.entries[i as usize].kind;
    if path.last().is_some_and(|&l| kind(l) == Kind::Compaction) {
        return Ok(Err(NoPlan::AlreadyCompacted));
    }
    if path.is_empty() {
        return Ok(Err(NoPlan::TooSmall));
    }
    let prev = previous(s, &path)?;
    let boundary = prev.as_ref().map_or(0, |p| p.boundary);
    // The context the model would see now: its estimated size.
    let mut meter = tokens::Meter::default();
    context::Plan::new(s, Some(leaf))?.each(s, |m| {
        meter.add(&m.value, false);
        Ok(())
    })?;
    let tokens_before = meter.estimate().tokens;
    let items = load(s, &path[boundary..])?;
    let cut = find_cut_point(&items, 0, items.len(), budget.keep_recent_tokens);
    let Some(first) = items.get(cut.first_kept) else {
        return Ok(Err(NoPlan::TooSmall));
    };
    let first_kept_entry_id = s.entries[first.entry as usize].id.to_string();
    if first_kept_entry_id.is_empty() {
        return Ok(Err(NoPlan::TooSmall));
    }
    let history_end = if cut.split {
        cut.turn_start.unwrap_or(cut.first_kept)
    } else {
        cut.first_kept
    };
    let entries =
        |r: std::ops::Range<usize>| -> Vec<u32> { items[r].iter().map(|it| it.entry).collect() };
    let mut file_ops = FileOps::default();
    file_ops.add_details(prev.as_ref().and_then(|p| p.details.as_ref()));
    let limit = budget.request_tokens();
    let history = Span::read(s, &entries(0..history_end), limit, &mut file_ops)?;
    let turn_prefix = if cut.split {
        Span::read(
            s,
            &entries(history_end..cut.first_kept),
            limit,
            &mut file_ops,
        )?
    } else {
        Span::default()
    };
    // Nothing before the kept part to summarize: no plan (the reference's 1.6).
    if history.entries.is_empty() && turn_prefix.entries.is_empty() {
        return Ok(Err(NoPlan::TooSmall));
    }
    Ok(Ok(Plan {
        leaf,
        first_kept_entry_id,
        first_kept: first.entry,
        history,
        turn_prefix,
        split_turn: cut.split,
        turn_start: cut.turn_start.filter(|_| cut.split).map(|t| items[t].entry),
        tokens_before,
        previous: prev.as_ref().map(|p| path[p.pos]),
        previous_summary: prev.and_then(|p| p.summary),
        boundary_start: path[boundary],
        file_ops,
        kept_entries: items.len() - cut.first_kept,
        path_entries: path.len(),
        budget,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: Kind, role: Option<&str>, chars: usize) -> Item {
        Item {
            entry: 0,
            kind,
            role: role.map(str::to_owned),
            tokens: chars.div_ceil(4) as u64,
        }
    }

    fn m(role: &str, chars: usize) -> Item {
        item(Kind::Message, Some(role), chars)
    }

    fn cut(items: &[Item], keep: u64) -> (usize, i64, bool) {
        let c = find_cut_point(items, 0, items.len(), keep);
        (c.first_kept, c.turn_start.map_or(-1, |t| t as i64), c.split)
    }

    #[test]
    fn co_b_cut_points() {
        let uaua = [
            m("user", 40),
            m("assistant", 40),
            m("user", 40),
            m("assistant", 40),
        ];
        assert_eq!(cut(&uaua, 15), (2, -1, false));
        assert_eq!(cut(&uaua, 5), (3, 2, true));
        assert_eq!(cut(&uaua, 1000), (0, -1, false));
        // read {"path":"a.ts"}: 4 + 15 characters.
        let tools = [
            m("user", 40),
            m("assistant", 19),
            m("toolResult", 400),
            m("assistant", 40),
        ];
        assert_eq!(cut(&tools, 50), (3, 0, true));
        assert_eq!(cut(&tools[..3], 50), (0, -1, false));
        let thinking = [
            m("user", 40),
            m("assistant", 40),
            item(Kind::ThinkingLevelChange, None, 0),
            m("user", 40),
            m("assistant", 40),
        ];
        assert_eq!(cut(&thinking, 15), (2, 0, true));
        let custom = [
            m("user", 40),
            m("assistant", 40),
            item(Kind::CustomMessage, None, 0),
            m("user", 40),
            m("assistant", 40),
        ];
        assert_eq!(cut(&custom, 15), (2, 2, true));
        let bash = [
            m("user", 40),
            m("assistant", 40),
            m("bashExecution", 40),
            m("assistant", 40),
        ];
        assert_eq!(cut(&bash, 15), (2, 2, true));
        assert_eq!(cut(&[m("toolResult", 40)], 1), (0, -1, false));
        assert_eq!(cut(&[m("assistant", 1)], 1000), (0, -1, false));
    }
}
