//! The summary of a branch being left (`pi session branch --summarize`), prepared as the
//! reference prepares it for `/tree` (`collectEntriesForBranchSummary`,
//! `prepareBranchEntries`).

use std::io;

use super::prepare::entry_message;
use super::text::FileOps;
use crate::context::tokens;
use crate::context::value::Value;
use crate::session::{Kind, Session};

/// The entries between the old leaf and the common ancestor with the target, oldest first,
/// and that ancestor. `target` `None` is a new root (no ancestor in common).
pub fn collect(s: &Session, old_leaf: Option<u32>, target: Option<u32>) -> (Vec<u32>, Option<u32>) {
    let Some(old) = old_leaf else {
        return (Vec::new(), None);
    };
    let old_path = s.path_to(old);
    let mut on_old = vec![false; s.entries.len()];
    for &i in &old_path {
        on_old[i as usize] = true;
    }
    let ancestor =
        target.and_then(|t| s.path_to(t).into_iter().rev().find(|&i| on_old[i as usize]));
    let mut entries: Vec<u32> = old_path
        .iter()
        .rev()
        .copied()
        .take_while(|&i| Some(i) != ancestor)
        .collect();
    entries.reverse();
    (entries, ancestor)
}

/// What a branch summary is made of.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    /// Agent messages, oldest first (tool results left out).
    pub messages: Vec<Value>,
    pub file_ops: FileOps,
    pub total_tokens: u64,
}

/// Upstream's `prepareBranchEntries(entries, tokenBudget)` (0: no limit): the newest
/// messages that fit the budget (a summary entry is taken even past it while under 90 %),
/// and the files of all of them and of earlier branch summaries.
pub fn prepare(s: &Session, entries: &[u32], budget: u64) -> io::Result<Prepared> {
    let mut values: Vec<(Kind, Value)> = Vec::with_capacity(entries.len());
    s.for_each_line(entries, |i, line| {
        values.push((
            s.entries[i as usize].kind,
            Value::parse(line).unwrap_or_default(),
        ));
        Ok(())
    })?;
    let mut p = Prepared::default();
    for (kind, e) in &values {
        if *kind == Kind::BranchSummary && !e.get("fromHook").is_some_and(Value::truthy) {
            p.file_ops.add_details(e.get("details"));
        }
    }
    let mut picked: Vec<Value> = Vec::new();
    for (kind, e) in values.iter().rev() {
        let message = match kind {
            Kind::Message => {
                let m = e.get("message");
                if m.and_then(|m| m.get("role"))
                    .is_some_and(|r| r.is_str("toolResult"))
                {
                    continue;
                }
                entry_message(*kind, e)
            }
            Kind::CustomMessage | Kind::BranchSummary | Kind::Compaction => entry_message(*kind, e),
            _ => None,
        };
        let Some(message) = message else { continue };
        p.file_ops.add_message(&message);
        let t = tokens::estimate(&message);
        if budget > 0 && p.total_tokens + t > budget {
            if matches!(kind, Kind::Compaction | Kind::BranchSummary)
                && (p.total_tokens as f64) < budget as f64 * 0.9
            {
                picked.push(message);
                p.total_tokens += t;
            }
            break;
        }
        picked.push(message);
        p.total_tokens += t;
    }
    picked.reverse();
    p.messages = picked;
    Ok(p)
}
