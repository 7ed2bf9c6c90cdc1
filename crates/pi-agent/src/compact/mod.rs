//! Compaction: replacing the older part of a session's context by a summary, as the
//! reference's newest release does it, and summaries of branches being left.
//!
//! - [`prepare`]: the plan (upstream's `prepareCompaction` and `findCutPoint`): the token
//!   budget, the cut point among valid entries, a split turn and its prefix, the summarized
//!   span starting at the previous compaction's kept entry, the files read and modified
//!   (carried across compactions), and the context size before.
//! - [`text`]: the conversation as summary text, the file lists, and pi's prompts.
//! - [`summarize`]: the model calls (history and turn prefix at the same time).
//! - [`branch`]: what a branch summary covers and fits in.
//! - [`record`]: the entry appended (under the lock, if the session did not move on), and
//!   the `--dry-run` record.

pub mod branch;
pub mod hook;
pub mod job;
pub mod prepare;
pub mod record;
pub mod summarize;
pub mod text;

pub use hook::{BeforeCompact, Compact, CompactionReason, CompactionResult};
pub use prepare::{Budget, NoPlan, Plan, prepare};
pub use summarize::{Compaction, Summarizer, SummaryError};
