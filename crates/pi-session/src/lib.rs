//! The session store: the on-disk JSONL format (v1–v3), reading it fast and in bounded
//! memory, appending to it safely, and the tree it describes. No command-line concerns here.

pub mod append;
pub mod check;
pub mod entry;
pub mod find;
pub mod fork;
pub mod gc;
pub mod id;
mod idindex;
pub mod index;
mod index_cache;
pub mod info;
mod lines;
pub mod migrate;
pub mod pending;
pub mod preview;
pub mod rows;
pub mod scan;
pub mod search;
mod stamp;
pub mod store;
pub mod summary;
pub mod tree;
mod upgrade;
pub mod usage;

pub use store::{Kind, Session};

/// The format version this program writes.
pub const VERSION: u32 = 3;
