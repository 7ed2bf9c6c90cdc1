//! Entry ids as map keys: short ids (the usual 8 hex characters) live inline, longer ones on
//! the heap, and hashing uses a fast non-cryptographic hasher.

use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

const INLINE: usize = 22;

/// An entry id (any string; normally 8 lowercase hex characters).
#[derive(Clone, PartialEq, Eq)]
pub enum Id {
    Inline { len: u8, buf: [u8; INLINE] },
    Heap(Box<str>),
}

impl Id {
    pub fn new(s: &str) -> Id {
        if s.len() <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            Id::Inline {
                len: s.len() as u8,
                buf,
            }
        } else {
            Id::Heap(s.into())
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Id::Inline { len, buf } => {
                // Built from a &str, so the prefix is valid UTF-8.
                std::str::from_utf8(&buf[..usize::from(*len)]).unwrap_or("")
            }
            Id::Heap(s) => s,
        }
    }
}

impl std::hash::Hash for Id {
    /// An inline id as three words (its bytes past the length are zero), a longer one as its
    /// bytes. A string is always stored the same way, so equal ids hash alike.
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Id::Inline { len, buf } => {
                let word = |k: usize| {
                    let mut w = [0u8; 8];
                    let part = &buf[(k * 8).min(INLINE)..(k * 8 + 8).min(INLINE)];
                    w[..part.len()].copy_from_slice(part);
                    u64::from_le_bytes(w)
                };
                state.write_u64(word(0) ^ u64::from(*len));
                state.write_u64(word(1));
                state.write_u64(word(2));
            }
            Id::Heap(s) => state.write(s.as_bytes()),
        }
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Fx hash (as used by rustc): fast for short keys, fine for ids we did not choose.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            self.add(u64::from_le_bytes(a));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(SEED);
    }
}

pub(crate) type FxBuild = BuildHasherDefault<FxHasher>;
pub type IdMap<V> = std::collections::HashMap<Id, V, FxBuild>;
pub(crate) type IdSet = std::collections::HashSet<Id, FxBuild>;

/// The hash of an id, as the maps above compute it.
#[inline]
pub(crate) fn hash_id(id: &Id) -> u64 {
    use std::hash::BuildHasher;
    FxBuild::default().hash_one(id)
}

/// An open session's ids, indexed: a hash table of entry numbers, each hashed by the id of
/// its entry. Holding 4-byte numbers rather than ids keeps the table small, which is what
/// makes it quick to build for a million entries (building a map of ids was mostly cache
/// misses). The entries themselves answer which id a number stands for (`id_of`).
#[derive(Default)]
pub(crate) struct IdIndex {
    table: hashbrown::HashTable<u32>,
}

impl IdIndex {
    pub(crate) fn with_capacity(n: usize) -> IdIndex {
        IdIndex {
            table: hashbrown::HashTable::with_capacity(n),
        }
    }

    /// Records that entry `i` has the id `id_of(i)`. Returns the entry that had it before
    /// (which the id no longer finds).
    pub(crate) fn insert<'a>(&mut self, id_of: impl Fn(u32) -> &'a Id, i: u32) -> Option<u32> {
        let id = id_of(i);
        match self
            .table
            .entry(hash_id(id), |&k| id_of(k) == id, |&k| hash_id(id_of(k)))
        {
            hashbrown::hash_table::Entry::Occupied(mut o) => {
                Some(std::mem::replace(o.get_mut(), i))
            }
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(i);
                None
            }
        }
    }

    /// The (last) entry with the id `id`.
    pub(crate) fn get<'a>(&self, id_of: impl Fn(u32) -> &'a Id, id: &Id) -> Option<u32> {
        self.table.find(hash_id(id), |&k| id_of(k) == id).copied()
    }

    /// Every entry the index finds, in no particular order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = u32> + '_ {
        self.table.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_finds_the_last_entry_of_an_id() {
        let ids: Vec<Id> = [
            "a1",
            "b2",
            "a1",
            "a long id that is kept on the heap",
            "a1\0",
            "b2",
        ]
        .iter()
        .map(|s| Id::new(s))
        .collect();
        let id_of = |k: u32| &ids[k as usize];
        let mut index = IdIndex::with_capacity(1);
        let before: Vec<Option<u32>> = (0..ids.len() as u32)
            .map(|i| index.insert(id_of, i))
            .collect();
        assert_eq!(before, [None, None, Some(0), None, None, Some(1)]);
        assert_eq!(index.get(id_of, &Id::new("a1")), Some(2));
        assert_eq!(index.get(id_of, &Id::new("b2")), Some(5));
        assert_eq!(index.get(id_of, &Id::new("a1\0")), Some(4));
        assert_eq!(
            index.get(id_of, &Id::new("a long id that is kept on the heap")),
            Some(3)
        );
        assert_eq!(index.get(id_of, &Id::new("a")), None);
        let mut all: Vec<u32> = index.entries().collect();
        all.sort_unstable();
        assert_eq!(all, [2, 3, 4, 5]);
    }
}
