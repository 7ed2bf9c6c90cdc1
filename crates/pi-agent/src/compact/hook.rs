//! What may take part in a compaction before a model writes the summary: the
//! `session_before_compact` hooks, which may cancel it or supply the summary.

use std::future::Future;

use serde_json::Value as Json;

use super::Plan;
use pi_session::append::NewEntry;

/// Why a compaction runs (`compaction_start.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionReason {
    /// Asked for (`pi compact`; never by `pi run`).
    Manual,
    /// The context passed `contextWindow − reserveTokens`.
    Threshold,
    /// The model refused the request as too large.
    Overflow,
}

impl CompactionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionReason::Manual => "manual",
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
        }
    }
}

/// A finished compaction: `compaction_end.result`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: f64,
    /// The estimated tokens of the context rebuilt after the compaction (1.6's
    /// `estimatedTokensAfter`); set once the compaction is recorded.
    pub estimated_tokens_after: Option<f64>,
    /// What the summary requests cost (1.6's `usage`); `None` for a hook's summary.
    pub usage: Option<Box<pi_ai::Usage>>,
    /// `{readFiles, modifiedFiles}`.
    pub details: Json,
}

/// What the `session_before_compact` hook decides about an automatic compaction.
#[derive(Debug, Clone, PartialEq)]
pub enum Compact {
    Proceed,
    /// Do not compact (`compaction_end` says `aborted`).
    Cancel,
    /// Use this summary instead of asking the model.
    Use(CompactionResult),
}

/// Something that decides about a compaction before the summary is written (the
/// `session_before_compact` hooks of `crate::extensions`). The defaults change nothing.
#[allow(clippy::manual_async_fn)]
pub trait BeforeCompact {
    fn before_compact(
        &mut self,
        plan: &Plan,
        reason: CompactionReason,
        instructions: Option<&str>,
    ) -> impl Future<Output = Compact> {
        let _ = (plan, reason, instructions);
        async { Compact::Proceed }
    }

    /// Entries asked for meanwhile, to append after the compaction entry (taken).
    fn take_entries(&mut self) -> Vec<NewEntry> {
        Vec::new()
    }
}
