//! Reading v1 and v2 files as v3 (and [`crate::migrate`] rewrites them with these lines).
//!
//! v1 → v2: every entry gets an id and is chained to the previous entry; a compaction's
//! `firstKeptEntryIndex` (a line index, header = 0) becomes `firstKeptEntryId`.
//! v2 → v3: `hookMessage` messages become `custom` messages.
//!
//! Upstream assigns random ids when it migrates (and rewrites the file on open). We never
//! rewrite on open, so ids are derived from the session id and the entry's position instead:
//! every read of an unmigrated file shows the same ids, and `pi session migrate` writes them.
//! Edits are spliced into the original line so everything else stays byte for byte; new keys
//! go last, as JavaScript's property assignment puts them.

use super::id::{Id, IdSet};
use super::index::{Kind, Rec};
use pi_base::json::{self, RawStr};

#[derive(Debug, Clone)]
enum FirstKept {
    Set(Id),
    Remove,
    Untouched,
}

#[derive(Debug)]
pub struct Plan {
    pub from_version: u32,
    session_id: String,
    /// For v1 compactions: (entry index, numeric `firstKeptEntryIndex` if any).
    pub first_kept_index: Vec<(u32, Option<f64>)>,
    /// Resolved per compaction (entry index → outcome), sorted by entry index.
    first_kept: Vec<(u32, FirstKept, bool)>,
}

impl Plan {
    pub fn new(from_version: u32, session_id: &str) -> Plan {
        Plan {
            from_version,
            session_id: session_id.to_owned(),
            first_kept_index: Vec::new(),
            first_kept: Vec::new(),
        }
    }

    /// Assigns ids and the linear parent chain of a v1 file, and resolves compactions.
    pub(crate) fn assign_v1(&mut self, entries: &mut [Rec], parsed_index: &[u32]) {
        let mut used = IdSet::default();
        let seed = fnv(self.session_id.as_bytes());
        let mut prev: Option<Id> = None;
        for (i, r) in entries.iter_mut().enumerate() {
            let id = deterministic_id(seed, i as u64, &used);
            used.insert(id.clone());
            r.id = id.clone();
            r.parent_id = prev.replace(id);
        }
        for &(ci, k) in &self.first_kept_index {
            let outcome = match k {
                None => (FirstKept::Untouched, false),
                Some(k) if k >= 0.0 && k.fract() == 0.0 && k < f64::from(u32::MAX) => {
                    let k = k as u32;
                    match parsed_index.binary_search(&k) {
                        Ok(j) if j <= ci as usize => (FirstKept::Set(entries[j].id.clone()), true),
                        Ok(_) => (FirstKept::Remove, true),
                        // The header, a second header, a non-object line or nothing.
                        Err(_) => (FirstKept::Untouched, true),
                    }
                }
                Some(_) => (FirstKept::Untouched, true),
            };
            self.first_kept.push((ci, outcome.0, outcome.1));
        }
    }

    /// The v3 form of entry `i`'s line.
    pub(crate) fn entry_line(&self, r: &Rec, i: u32, raw: &[u8]) -> Vec<u8> {
        let mut edits: Vec<(&str, Option<Vec<u8>>)> = Vec::new();
        if self.from_version < 2 {
            let mut id = Vec::new();
            json::write_str(&mut id, r.id.as_str());
            edits.push(("id", Some(id)));
            let parent = match &r.parent_id {
                Some(p) => {
                    let mut v = Vec::new();
                    json::write_str(&mut v, p.as_str());
                    v
                }
                None => b"null".to_vec(),
            };
            edits.push(("parentId", Some(parent)));
            if r.kind == Kind::Compaction
                && let Ok(pos) = self.first_kept.binary_search_by_key(&i, |(ci, _, _)| *ci)
            {
                let (_, outcome, delete_index) = &self.first_kept[pos];
                match outcome {
                    FirstKept::Set(id) => {
                        let mut v = Vec::new();
                        json::write_str(&mut v, id.as_str());
                        edits.push(("firstKeptEntryId", Some(v)));
                    }
                    FirstKept::Remove => edits.push(("firstKeptEntryId", None)),
                    FirstKept::Untouched => {}
                }
                if *delete_index {
                    edits.push(("firstKeptEntryIndex", None));
                }
            }
        }
        let mut line = splice(raw, &edits);
        if r.kind == Kind::Message
            && let Some(renamed) = rename_hook_message(&line)
        {
            line = renamed;
        }
        line
    }
}

/// The v3 form of a v1/v2 header line.
pub(crate) fn header_line(raw: &[u8]) -> Vec<u8> {
    splice(raw, &[("version", Some(b"3".to_vec()))])
}

/// Rewrites the top-level object `raw`: each edit replaces the value of an existing key in
/// place (`Some`), removes the key (`None`), or appends the key at the end when absent.
pub(crate) fn splice(raw: &[u8], edits: &[(&str, Option<Vec<u8>>)]) -> Vec<u8> {
    let start = json::skip_ws(raw, 0);
    let Ok(members) = json::members(&raw[start..]) else {
        return raw.to_vec();
    };
    let raw = &raw[start..];
    let mut out = Vec::with_capacity(raw.len() + 64);
    out.push(b'{');
    let mut done = vec![false; edits.len()];
    let mut first = true;
    for m in &members {
        let edit = edits.iter().position(|(k, _)| m.key.eq_str(k));
        let piece: Option<Vec<u8>> = match edit {
            Some(e) => {
                done[e] = true;
                edits[e].1.as_ref().map(|v| {
                    let mut p = raw[m.key_start..m.key_end].to_vec();
                    p.push(b':');
                    p.extend_from_slice(v);
                    p
                })
            }
            None => Some(raw[m.key_start..m.value_end].to_vec()),
        };
        if let Some(p) = piece {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(&p);
        }
    }
    for (e, (k, v)) in edits.iter().enumerate() {
        if let (false, Some(v)) = (done[e], v) {
            if !first {
                out.push(b',');
            }
            first = false;
            json::write_str(&mut out, k);
            out.push(b':');
            out.extend_from_slice(v);
        }
    }
    out.push(b'}');
    out
}

/// `{"type":"message",…,"message":{"role":"hookMessage",…}}` → role `custom`.
fn rename_hook_message(line: &[u8]) -> Option<Vec<u8>> {
    let members = json::members(line).ok()?;
    let m = members.iter().rev().find(|m| m.key.eq_str("message"))?;
    let msg = &line[m.value_start..m.value_end];
    let role = json::get(msg, "role").and_then(RawStr::from_value)?;
    if !role.eq_str("hookMessage") {
        return None;
    }
    let new_msg = splice(msg, &[("role", Some(b"\"custom\"".to_vec()))]);
    let mut out = line[..m.value_start].to_vec();
    out.extend_from_slice(&new_msg);
    out.extend_from_slice(&line[m.value_end..]);
    Some(out)
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &c| {
        (h ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn deterministic_id(seed: u64, index: u64, used: &IdSet) -> Id {
    for attempt in 0..100u64 {
        let h = mix(seed ^ mix(index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (attempt << 48)));
        let id = Id::new(&format!("{:08x}", h >> 32));
        if !used.contains(&id) {
            return id;
        }
    }
    Id::new(&format!("{:016x}-{index}", mix(seed ^ index)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_replaces_removes_and_appends() {
        let raw = br#"{"type":"compaction","firstKeptEntryIndex":3,"summary":"s"}"#;
        let out = splice(
            raw,
            &[
                ("id", Some(br#""abc""#.to_vec())),
                ("firstKeptEntryIndex", None),
                ("summary", Some(br#""t""#.to_vec())),
            ],
        );
        assert_eq!(out, br#"{"type":"compaction","summary":"t","id":"abc"}"#);
    }

    #[test]
    fn header_gets_version_last_or_in_place() {
        assert_eq!(
            header_line(br#"{"type":"session","id":"x"}"#),
            br#"{"type":"session","id":"x","version":3}"#
        );
        assert_eq!(
            header_line(br#"{"type":"session","version":2,"id":"x"}"#),
            br#"{"type":"session","version":3,"id":"x"}"#
        );
    }

    #[test]
    fn hook_messages_become_custom() {
        let line = br#"{"type":"message","id":"a","message":{"role":"hookMessage","content":"x"}}"#;
        assert_eq!(
            rename_hook_message(line).unwrap(),
            br#"{"type":"message","id":"a","message":{"role":"custom","content":"x"}}"#
        );
        assert!(rename_hook_message(br#"{"type":"message","message":{"role":"user"}}"#).is_none());
    }

    #[test]
    fn deterministic_ids_are_stable_and_unique() {
        let mut used = IdSet::default();
        for i in 0..1000 {
            let id = deterministic_id(7, i, &used);
            assert_eq!(id, deterministic_id(7, i, &used));
            assert_eq!(id.as_str().len(), 8);
            assert!(used.insert(id));
        }
    }
}
