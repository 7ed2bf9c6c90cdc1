//! Recording a compaction: the `compaction` entry appended under the writers' lock, only if
//! the session is still where the plan was made, and the `--dry-run` record of a plan.

use std::path::Path;

use serde_json::{Map, Value as Json, json};

use super::{Compaction, Plan};
use pi_base::js;
use pi_session::Session;
use pi_session::append::{AppendError, Appender, NewEntry, Parent};
use pi_session::entry::jstr;

/// What a hook added to a compaction: its `details` (the entry is then `fromHook`), and
/// entries to append after it.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    pub details: Option<Json>,
    pub entries: Vec<NewEntry>,
}

/// Why a compaction was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(
        "the session changed while the summary was written: its leaf moved from {from} to {}; nothing was written",
        .to.as_deref().unwrap_or("(none)")
    )]
    LeafMoved { from: String, to: Option<String> },
    #[error(transparent)]
    Append(#[from] AppendError),
}

/// The reference 1.6's `usage` of a compaction entry: what its summary requests used (none
/// when no request was made: a summary given, or a hook's).
pub(crate) fn usage_field(u: &pi_ai::Usage) -> Option<Vec<u8>> {
    (*u != pi_ai::Usage::default()).then(|| js::stringify(&u.to_json()))
}

/// The reference 1.6's `systemMessage` of a compaction entry: the prompt and tools in effect,
/// stamped with the entry's own time.
pub(crate) fn system_field(system: Option<&pi_ai::value::Value>, now_ms: i64) -> Option<Vec<u8>> {
    let pi_ai::value::Value::Obj(mut o) = system?.clone() else {
        return None;
    };
    o.set("timestamp", pi_ai::value::Value::Num(now_ms as f64));
    Some(pi_ai::value::Value::Obj(o).to_json())
}

/// Appends the compaction entry (and `extra.entries` after it) to the session at `path`,
/// under the lock, if its leaf is still `leaf_id` (unless `explicit_leaf`: the entry is then
/// a child of `leaf_id` wherever the leaf is). Without `wait`, `Ok(None)` when another
/// process holds the lock. Returns the compaction entry's line.
pub fn record(
    path: &Path,
    agent_dir: &Path,
    leaf_id: &str,
    c: &Compaction,
    extra: &Extra,
    explicit_leaf: bool,
    wait: bool,
) -> Result<Option<Vec<u8>>, RecordError> {
    let cache = Some(agent_dir);
    let mut ap = if wait {
        Appender::open(path, cache)?
    } else {
        match Appender::try_open(path, cache)? {
            Some(ap) => ap,
            None => return Ok(None),
        }
    };
    let now = ap.leaf.as_ref().map(|l| l.as_str().to_owned());
    if !explicit_leaf && now.as_deref() != Some(leaf_id) {
        return Err(RecordError::LeafMoved {
            from: leaf_id.to_owned(),
            to: now,
        });
    }
    let details = match &extra.details {
        Some(d) => d.clone(),
        None => json!({"readFiles": c.read_files, "modifiedFiles": c.modified_files}),
    };
    let parent = if explicit_leaf {
        Parent::Id(leaf_id.to_owned())
    } else {
        Parent::Leaf
    };
    let now = pi_base::clock::now_ms();
    let mut entry = NewEntry::new("compaction", parent)
        .field("summary", jstr(&c.summary))
        .field("firstKeptEntryId", jstr(&c.first_kept_entry_id))
        .field("tokensBefore", js::number(c.tokens_before).into_bytes())
        .field("details", js::stringify(&details));
    if let Some(u) = usage_field(&c.usage) {
        entry = entry.field("usage", u);
    }
    entry = entry.field(
        "fromHook",
        if extra.details.is_some() {
            b"true".to_vec()
        } else {
            b"false".to_vec()
        },
    );
    if let Some(sys) = system_field(c.system.as_ref(), now) {
        entry = entry.field("systemMessage", sys);
    }
    let mut batch = vec![entry];
    batch.extend(extra.entries.iter().cloned());
    let lines = ap.append_at(&batch, now)?;
    Ok(lines.into_iter().next())
}

/// The `--dry-run` record of a plan: where it cuts, what it summarizes and keeps.
pub(crate) fn plan_record(s: &Session, p: &Plan, model: Option<String>) -> Map<String, Json> {
    let id = |i: u32| Json::from(s.entries[i as usize].id.to_string());
    let span = |sp: &super::prepare::Span| -> Json {
        let roles: Map<String, Json> = sp
            .roles
            .iter()
            .map(|(r, n)| (r.clone(), Json::from(*n)))
            .collect();
        let mut m = Map::new();
        m.insert("messages".into(), sp.entries.len().into());
        m.insert("roles".into(), Json::Object(roles));
        m.insert(
            "entries".into(),
            sp.entries.iter().map(|&i| id(i)).collect::<Vec<_>>().into(),
        );
        if sp.omitted > 0 {
            m.insert("omitted".into(), sp.omitted.into());
        }
        Json::Object(m)
    };
    let (read, modified) = p.file_ops.lists();
    let mut m = Map::new();
    m.insert("dryRun".into(), true.into());
    m.insert("leaf".into(), id(p.leaf));
    m.insert(
        "firstKeptEntryId".into(),
        p.first_kept_entry_id.clone().into(),
    );
    m.insert("tokensBefore".into(), js::json_number(p.tokens_before));
    m.insert(
        "estimatedTokensAfter".into(),
        js::json_number(p.estimated_tokens_after),
    );
    m.insert("splitTurn".into(), p.split_turn.into());
    m.insert(
        "turnStartEntryId".into(),
        p.turn_start.map_or(Json::Null, id),
    );
    m.insert(
        "previousCompactionId".into(),
        p.previous.map_or(Json::Null, id),
    );
    m.insert(
        "previousSummary".into(),
        p.previous_summary.clone().map_or(Json::Null, Json::from),
    );
    m.insert("boundaryStartEntryId".into(), id(p.boundary_start));
    m.insert("summarize".into(), span(&p.history));
    m.insert("turnPrefix".into(), span(&p.turn_prefix));
    m.insert("keptEntries".into(), p.kept_entries.into());
    m.insert("pathEntries".into(), p.path_entries.into());
    m.insert("readFiles".into(), read.into());
    m.insert("modifiedFiles".into(), modified.into());
    m.insert("reserveTokens".into(), p.budget.reserve_tokens.into());
    m.insert(
        "keepRecentTokens".into(),
        p.budget.keep_recent_tokens.into(),
    );
    m.insert("model".into(), model.map_or(Json::Null, Json::from));
    m
}
