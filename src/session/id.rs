//! Entry ids as map keys: short ids (the usual 8 hex characters) live inline, longer ones on
//! the heap, and hashing uses a fast non-cryptographic hasher.

use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

const INLINE: usize = 22;

/// An entry id (any string; normally 8 lowercase hex characters).
#[derive(Clone, PartialEq, Eq, Hash)]
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

pub type FxBuild = BuildHasherDefault<FxHasher>;
pub type IdMap<V> = std::collections::HashMap<Id, V, FxBuild>;
pub type IdSet = std::collections::HashSet<Id, FxBuild>;
