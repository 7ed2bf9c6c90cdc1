//! The summary of a branch being left (`pi session branch --summarize`), prepared as the
//! reference prepares it for `/tree` (`collectEntriesForBranchSummary`,
//! `prepareBranchEntries`).

use std::io;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::Summarizer;
use super::job::{JobError, Watch};
use super::prepare::entry_message;
use super::text::FileOps;
use crate::context::tokens;
use crate::runtime;
use pi_ai::config::{self, Settings as LlmSettings};
use pi_ai::models::Registry;
use pi_ai::value::Value;
use pi_session::append::{Appender, NewEntry, Parent};
use pi_session::entry::jstr;
use pi_session::{Kind, Session};

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

/// The entry that moves the leaf to `parent` without a summary: `custom` with
/// `customType: "branch"` and the leaf it moves from.
pub fn move_entry(parent: Parent, from: Option<&str>) -> NewEntry {
    let from = from.map_or_else(|| b"null".to_vec(), jstr);
    let mut data = b"{\"from\":".to_vec();
    data.extend_from_slice(&from);
    data.push(b'}');
    NewEntry::new("custom", parent)
        .field("customType", jstr("branch"))
        .field("data", data)
}

/// A `branch_summary` entry under `parent` (`from_id`: the leaf being left, or `root`);
/// `details` (JSON) given by a hook makes it `fromHook`; `usage` (JSON) is what a summary
/// request used.
pub fn summary_entry(
    parent: Parent,
    from_id: &str,
    summary: &str,
    details: Option<Vec<u8>>,
    usage: Option<Vec<u8>>,
    from_hook: bool,
) -> NewEntry {
    let mut e = NewEntry::new("branch_summary", parent)
        .field("fromId", jstr(from_id))
        .field("summary", jstr(summary));
    if let Some(d) = details {
        e = e.field("details", d);
    }
    // The reference 1.6 writes `usage` before `fromHook`.
    if let Some(u) = usage {
        e = e.field("usage", u);
    }
    e.field(
        "fromHook",
        if from_hook {
            b"true".to_vec()
        } else {
            b"false".to_vec()
        },
    )
}

/// `entry` of `s` as a target: an entry index, or `None` for `root`.
pub fn resolve_target(s: &Session, entry: &str) -> Result<Option<u32>, JobError> {
    match s.resolve_entry(entry) {
        Ok(i) => Ok(Some(i)),
        Err(_) if entry == "root" => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A branch summary asked of a model (`pi session branch --summarize`).
pub struct BranchSummary {
    pub agent_dir: PathBuf,
    pub registry: Registry,
    pub llm: LlmSettings,
    /// The model (`None`: the session's, else the default).
    pub model: Option<(String, String)>,
    pub instructions: Option<String>,
    pub rt: runtime::Lazy,
}

/// What a summarized move did.
#[derive(Debug)]
pub enum Moved {
    /// The lines appended. `summarized` is false when nothing was left behind (no summary
    /// was asked for; the plain move entry was written).
    Written {
        lines: Vec<Vec<u8>>,
        summarized: bool,
    },
    /// Ctrl-C while the model wrote; nothing was written.
    Interrupted,
}

impl BranchSummary {
    /// Summarizes the path being left by moving the leaf of the session at `path` to
    /// `entry`, and appends the `branch_summary` entry (then `extra`). The model is called
    /// before the session is locked; if the leaf moved meanwhile, nothing is written.
    pub fn run(
        &mut self,
        path: &Path,
        entry: &str,
        extra: Vec<NewEntry>,
        watch: &dyn Watch,
    ) -> Result<Moved, JobError> {
        let s = Session::open(path)?;
        for w in s.skipped_warnings() {
            watch.warning(&w);
        }
        let target = resolve_target(&s, entry)?;
        let target_id = target.map(|t| s.entries[t as usize].id.to_string());
        let old_leaf = s.leaf();
        let old_leaf_id = old_leaf.map(|l| s.entries[l as usize].id.to_string());
        let (entries, _) = collect(&s, old_leaf, target);
        let parent = match &target_id {
            Some(id) => Parent::Id(id.clone()),
            None => Parent::Root,
        };
        let (new_entry, summarized) = if entries.is_empty() {
            (move_entry(parent, old_leaf_id.as_deref()), false)
        } else {
            let Some(e) = self.summarize(&s, path, old_leaf, &entries, parent, watch)? else {
                return Ok(Moved::Interrupted);
            };
            (e, true)
        };
        drop(s);
        let mut ap = Appender::open(path, Some(&self.agent_dir))?;
        let now = ap.leaf.as_ref().map(|l| l.as_str().to_owned());
        if now != old_leaf_id {
            return Err(JobError::Record(super::record::RecordError::LeafMoved {
                from: old_leaf_id.unwrap_or_else(|| "(none)".to_owned()),
                to: now,
            }));
        }
        let mut batch = vec![new_entry];
        batch.extend(extra);
        let lines = ap.append(&batch)?;
        Ok(Moved::Written { lines, summarized })
    }

    /// Asks the model for the summary of `entries`; `None` when interrupted.
    #[allow(clippy::too_many_arguments)]
    fn summarize(
        &mut self,
        s: &Session,
        path: &Path,
        old_leaf: Option<u32>,
        entries: &[u32],
        parent: Parent,
        watch: &dyn Watch,
    ) -> Result<Option<NewEntry>, JobError> {
        let session_model = crate::context::Plan::new(s, old_leaf)
            .ok()
            .and_then(|p| p.info.model_ids());
        let (target, auth) = config::resolve(
            &self.registry,
            &self.agent_dir,
            &self.llm,
            self.model.as_ref(),
            session_model.as_ref(),
        )?;
        let window = match target.model.context_window {
            0 => 128_000,
            w => w,
        };
        // pi's rule for small windows: a reserve that does not fit is a quarter of it
        // (else the budget would be 0, which means no limit).
        let fitted = crate::context::tokens::Reserves {
            reserve_tokens: self
                .llm
                .branch_reserve_tokens
                .unwrap_or(config::DEFAULT_BRANCH_RESERVE_TOKENS),
            keep_recent_tokens: 0,
        }
        .fit(window);
        let model = format!("{}/{}", target.model.provider, target.model.id);
        if let Some(w) = fitted.warning("branchSummary.reserveTokens", Some(&model)) {
            watch.warning(&w);
        }
        let reserve = fitted.used.reserve_tokens;
        let prepared = prepare(s, entries, window.saturating_sub(reserve)).map_err(|source| {
            JobError::Read {
                path: path.to_owned(),
                source,
            }
        })?;
        let options = self.llm.call_options(auth);
        let instructions = self.instructions.clone();
        let (rt, client) = self.rt.with_client()?;
        watch.summarizing(&format!("summarizing the branch with {model}"));
        let progress = |e: &pi_ai::Event| watch.event(e);
        let summarizer = Summarizer {
            client,
            target: &target,
            options,
            thinking_level: None,
            progress: &progress,
        };
        let result = runtime::interruptible(
            rt,
            summarizer.branch(
                &prepared.messages,
                &prepared.file_ops,
                instructions.as_deref(),
            ),
        );
        watch.summarized();
        let (summary, read, modified, usage) = match result {
            None => return Ok(None),
            Some(Err(error)) => return Err(JobError::Summary { error, model }),
            Some(Ok(x)) => x,
        };
        let details = json!({"readFiles": read, "modifiedFiles": modified});
        let details = serde_json::to_vec(&details).unwrap_or_default();
        // `fromId` is the leaf being left (the reference 1.6), `root` without one.
        let from = old_leaf.map_or_else(
            || "root".to_owned(),
            |l| s.entries[l as usize].id.to_string(),
        );
        Ok(Some(summary_entry(
            parent,
            &from,
            &summary,
            Some(details),
            super::record::usage_field(&usage),
            false,
        )))
    }
}
