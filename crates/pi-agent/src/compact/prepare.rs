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

/// One entry of the context, as the cut-point search sees it (an entry of the reference
/// 1.6's projection: its messages after context edits, not kept).
#[derive(Debug, Clone)]
pub struct Item {
    /// Index of the entry in the session.
    pub entry: u32,
    pub kind: Kind,
    /// The estimated tokens of the messages the entry gives the model.
    pub tokens: u64,
    /// The same without its system messages (which a compaction's checkpoint replaces).
    pub conversation_tokens: u64,
    /// Whether it gives the model a message at all.
    pub visible: bool,
    /// Whether one of its messages may start the kept part (user, assistant, shell command,
    /// custom message, summaries).
    pub cut_point: bool,
    /// Whether one of its messages starts a turn (the same, without assistants).
    pub turn_start: bool,
    /// Whether the entry holds a message of its own, before edits.
    pub intrinsic: bool,
    /// Whether it is an assistant message.
    pub assistant: bool,
    /// For a `context_edit`: its target's entry index, if in the file, and whether it
    /// replaces (rather than omits) the target.
    pub edit: Option<(Option<u32>, bool)>,
}

impl Item {
    /// An entry a context edit left out.
    fn omitted(&self) -> bool {
        self.intrinsic && !self.visible
    }
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

const CUT_ROLES: [&str; 6] = [
    "user",
    "assistant",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
];

/// Reads the context's entries (the latest compaction's kept part and what follows) as
/// [`Item`]s, measuring the context as it goes (for `tokensBefore`); the messages
/// themselves are not kept.
fn load(s: &Session, plan: &context::Plan, meter: &mut tokens::Meter) -> io::Result<Vec<Item>> {
    let (selected, kept) = plan.selected();
    let mut items = Vec::with_capacity(selected.len());
    if let Some(c) = plan.info.compaction {
        for m in plan.head_messages(s) {
            meter.add_entry(&m, Some(c), false);
        }
    }
    let mut n = 0usize;
    s.for_each_line(selected, |i, line| {
        let in_kept = n < kept;
        n += 1;
        let kind = s.entries[i as usize].kind;
        let value = Value::parse(line).unwrap_or_default();
        let edit = (kind == Kind::ContextEdit).then(|| {
            let target = value
                .get("targetId")
                .and_then(Value::as_jstr)
                .and_then(|t| s.get(&t.text()));
            let replaces = value
                .get("replacement")
                .is_some_and(|r| !matches!(r, Value::Null));
            (target, replaces)
        });
        let intrinsic = kind == Kind::Compaction || entry_message(kind, &value).is_some();
        let assistant = kind == Kind::Message
            && value
                .get("message")
                .and_then(|m| m.get("role"))
                .is_some_and(|r| r.is_str("assistant"));
        let Some(messages) = plan.project_entry(s, i, value, in_kept) else {
            return Ok(());
        };
        let role_in = |roles: &[&str]| {
            kind != Kind::Compaction
                && messages.iter().any(|m| {
                    m.get("role")
                        .and_then(Value::as_jstr)
                        .is_some_and(|r| roles.contains(&r.text().as_ref()))
                })
        };
        let (mut tokens, mut conversation_tokens) = (0, 0);
        for m in &messages {
            let t = tokens::estimate(m);
            tokens += t;
            if !m.get("role").is_some_and(|r| r.is_str("system")) {
                conversation_tokens += t;
            }
            meter.add_entry(m, Some(i), false);
        }
        items.push(Item {
            entry: i,
            kind,
            tokens,
            conversation_tokens,
            visible: !messages.is_empty(),
            cut_point: role_in(&CUT_ROLES),
            turn_start: role_in(&CUT_ROLES[2..]) || role_in(&CUT_ROLES[..1]),
            intrinsic,
            assistant,
            edit,
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
    fn read(
        s: &Session,
        plan: &context::Plan,
        entries: &[u32],
        limit: u64,
        files: &mut FileOps,
    ) -> io::Result<Span> {
        let mut span = Span::default();
        let mut kept: std::collections::VecDeque<(Value, u64)> = Default::default();
        let mut total = 0u64;
        s.for_each_line(entries, |i, line| {
            let kind = s.entries[i as usize].kind;
            if kind == Kind::Compaction {
                return Ok(());
            }
            let value = Value::parse(line).unwrap_or_default();
            // The messages as the context has them (edits applied); system messages are
            // the prompt, not conversation, and are not summarized.
            let messages = plan
                .project_entry(s, i, value, false)
                .unwrap_or_default()
                .into_iter()
                .filter(|m| !m.get("role").is_some_and(|r| r.is_str("system")));
            for m in messages {
                files.add_message(&m);
                let role = m
                    .get("role")
                    .and_then(Value::as_jstr)
                    .map_or_else(|| "(none)".to_owned(), |r| r.text().into_owned());
                match span.roles.iter_mut().find(|(r, _)| *r == role) {
                    Some((_, n)) => *n += 1,
                    None => span.roles.push((role, 1)),
                }
                if span.entries.last() != Some(&i) {
                    span.entries.push(i);
                }
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

/// The reference 1.6's `findProjectedTurnStartIndex`: the entry (a user message, shell
/// command, custom message or summary) that starts the turn holding item `i`.
pub fn turn_start(items: &[Item], i: usize, start: usize) -> Option<usize> {
    (start..=i).rev().find(|&k| items[k].turn_start)
}

/// The reference 1.6's `findProjectedCutPoint(entries, start, end, keepRecentTokens)`.
pub(crate) fn find_cut_point(items: &[Item], start: usize, end: usize, keep: u64) -> Cut {
    let cuts: Vec<usize> = (start..end).filter(|&i| items[i].cut_point).collect();
    let (Some(&first), Some(&last)) = (cuts.first(), cuts.last()) else {
        return Cut {
            first_kept: start,
            turn_start: None,
            split: false,
        };
    };
    let mut cut = first;
    let mut total = 0u64;
    let mut exceeded = false;
    for i in (start..end).rev() {
        if items[i].tokens == 0 {
            continue;
        }
        total += items[i].tokens;
        if total >= keep {
            exceeded = true;
            // The closest cut point at or after this entry; trailing tool results larger
            // than the budget keep the call they answer.
            cut = cuts.iter().copied().find(|&c| c >= i).unwrap_or(last);
            break;
        }
    }
    // An attempt the user left out of the context (an omitted assistant reply, and the
    // edits that omit it) after the last input is not kept on its own.
    let suffix = &items[(cut + 1).min(end)..end];
    let omitted: Vec<u32> = suffix
        .iter()
        .filter(|e| e.omitted())
        .map(|e| e.entry)
        .collect();
    let replaces_other = suffix
        .iter()
        .any(|e| matches!(e.edit, Some((t, true)) if t.is_none_or(|t| !omitted.contains(&t))));
    let recovery = exceeded
        && !replaces_other
        && suffix.iter().any(|e| e.assistant && e.omitted())
        && suffix.iter().all(|e| {
            e.kind != Kind::Compaction
                && (e.kind == Kind::ContextEdit || !e.intrinsic || e.omitted())
        });
    if recovery {
        cut += 1;
    }
    while cut > start {
        let prev = &items[cut - 1];
        if prev.kind == Kind::Compaction || prev.visible {
            break;
        }
        cut -= 1;
    }
    let starts = items[cut].turn_start;
    let ts = if starts {
        None
    } else {
        turn_start(items, cut, start)
    };
    Cut {
        first_kept: cut,
        turn_start: ts,
        split: !starts && ts.is_some(),
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
    /// The prompt and tools in effect: the context's system messages replayed into one
    /// (the reference 1.6 saves it as the compaction's `systemMessage`).
    pub system: Option<Value>,
    /// The estimated size of the context after the compaction, the summary not counted:
    /// the system checkpoint and the kept messages.
    pub estimated_tokens_after: f64,
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

/// The reference 1.6's `prepareCompaction(pathEntries, settings)` for the path to `leaf`,
/// over the context as the model sees it (edits applied), in memory bounded by what a
/// summary request can carry (`budget.request_tokens()`): the context is read as a list of
/// small items, then the messages to summarize are streamed, keeping the newest that fit.
pub fn prepare(s: &Session, leaf: u32, budget: Budget) -> Result<Result<Plan, NoPlan>, io::Error> {
    let path = s.path_to(leaf);
    let kind = |i: u32| s.entries[i as usize].kind;
    if path.last().is_some_and(|&l| kind(l) == Kind::Compaction) {
        return Ok(Err(NoPlan::AlreadyCompacted));
    }
    if path.is_empty() {
        return Ok(Err(NoPlan::TooSmall));
    }
    let cplan = context::Plan::new(s, Some(leaf))?;
    let mut meter = tokens::Meter::default();
    let items = load(s, &cplan, &mut meter)?;
    let tokens_before = meter.projected(|e| tokens::usage_holds(s, &path, e)).tokens;
    // The previous compaction, unless an edit left it out of the context.
    let previous = cplan
        .info
        .compaction
        .filter(|_| !cplan.head_messages(s).is_empty());
    let prev_entry = match previous {
        Some(c) => Value::parse(&s.line(c)?).unwrap_or_default(),
        None => Value::Null,
    };
    let system = meter.current_system();
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
    if !prev_entry.get("fromHook").is_some_and(Value::truthy) {
        file_ops.add_details(prev_entry.get("details"));
    }
    let limit = budget.request_tokens();
    let history = Span::read(s, &cplan, &entries(0..history_end), limit, &mut file_ops)?;
    let turn_prefix = if cut.split {
        Span::read(
            s,
            &cplan,
            &entries(history_end..cut.first_kept),
            limit,
            &mut file_ops,
        )?
    } else {
        Span::default()
    };
    // Nothing before the kept part to summarize: no plan (the reference's 1.6).
    if history.messages.is_empty() && turn_prefix.messages.is_empty() {
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
        estimated_tokens_after: (system.as_ref().map_or(0, tokens::estimate)
            + items[cut.first_kept..]
                .iter()
                .map(|it| it.conversation_tokens)
                .sum::<u64>()) as f64,
        system,
        previous,
        previous_summary: prev_entry
            .get("summary")
            .filter(|v| !matches!(v, Value::Null))
            .map(|v| Value::js_string(Some(v)).text().into_owned()),
        boundary_start: items.first().map_or(path[0], |it| it.entry),
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
        let roles = |rs: &[&str]| role.is_some_and(|r| rs.contains(&r));
        Item {
            entry: 0,
            kind,
            tokens: chars.div_ceil(4) as u64,
            conversation_tokens: chars.div_ceil(4) as u64,
            visible: role.is_some(),
            cut_point: roles(&CUT_ROLES),
            turn_start: roles(&CUT_ROLES) && role != Some("assistant"),
            intrinsic: role.is_some(),
            assistant: role == Some("assistant"),
            edit: None,
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
        // Trailing tool results over the budget keep the call they answer (1.6).
        assert_eq!(cut(&tools[..3], 50), (1, 0, true));
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
            item(Kind::CustomMessage, Some("custom"), 0),
            m("user", 40),
            m("assistant", 40),
        ];
        // A custom message is context: the kept part does not reach back over it.
        assert_eq!(cut(&custom, 15), (3, -1, false));
        let bash = [
            m("user", 40),
            m("assistant", 40),
            m("bashExecution", 40),
            m("assistant", 40),
        ];
        // A shell command starts a turn (1.6).
        assert_eq!(cut(&bash, 15), (2, -1, false));
        assert_eq!(cut(&[m("toolResult", 40)], 1), (0, -1, false));
        assert_eq!(cut(&[m("assistant", 1)], 1000), (0, -1, false));
    }
}
