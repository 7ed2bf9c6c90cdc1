//! The session store: the on-disk JSONL format (v1–v3), reading it fast and in bounded
//! memory, appending to it safely, and the tree it describes. No model, agent, terminal or
//! command-line types here: this is the crate an editor plugin, a dashboard or an importer
//! embeds to read and write the sessions of pi and of the reference agent.
//!
//! - [`Session`] (in [`store`]) reads a file once into an index of its entries (offset, id,
//!   parent, kind) and reads each entry's bytes again on demand, so memory follows the
//!   number of entries, not the size of the file.
//! - [`append::Appender`] takes the file's lock, gives new entries fresh ids and their
//!   parents, and writes a batch with one synced `write(2)`.
//! - [`tree`], [`check`], [`migrate`], [`fork`], [`search`], [`summary`] (the listing cache)
//!   and [`usage`] work on those two.
//!
//! A session written and read back:
//!
//! ```
//! use pi_session::Session;
//! use pi_session::append::{Appender, NewEntry, Parent};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("demo.jsonl");
//! // The header line that `pi session new` writes.
//! let mut header = pi_session::fork::header("0195e6a2-1b1c-7000-8000-000000000001", 0, "/src/app", None);
//! header.push(b'\n');
//! std::fs::write(&path, header)?;
//!
//! // Two messages, the second a child of the first.
//! let mut writer = Appender::open(&path, None)?;
//! let ask = br#"{"role":"user","content":"Which tests are slow?","timestamp":0}"#;
//! let answer = br#"{"role":"assistant","content":[{"type":"text","text":"The CLI ones."}],"timestamp":0}"#;
//! writer.append(&[
//!     NewEntry::new("message", Parent::Leaf).field("message", ask.to_vec()),
//!     NewEntry::new("message", Parent::Leaf).field("message", answer.to_vec()),
//! ])?;
//! drop(writer); // releases the lock
//!
//! let session = Session::open(&path)?;
//! assert_eq!(session.session_id(), "0195e6a2-1b1c-7000-8000-000000000001");
//! let leaf = session.leaf().ok_or("no entries")?;
//! let path_to_leaf = session.path_to(leaf);
//! assert_eq!(path_to_leaf.len(), 2);
//! // Each entry's line, as written: the root first.
//! let first = session.line(path_to_leaf[0])?;
//! let first: serde_json::Value = serde_json::from_slice(&first)?;
//! assert_eq!(first["message"]["content"], "Which tests are slow?");
//! assert_eq!(first["parentId"], serde_json::Value::Null);
//! # Ok(())
//! # }
//! ```

pub mod append;
pub mod check;
pub mod entry;
pub mod find;
pub mod fork;
pub mod gc;
pub mod id;
mod idindex;
pub mod import;
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
