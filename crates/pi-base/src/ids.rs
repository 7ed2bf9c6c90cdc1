//! Random ids. `PI_SEED` makes them reproducible (for documentation examples and tests);
//! otherwise the generator is seeded from the operating system.

pub struct Rng(u64);

impl Rng {
    /// A generator for one operation. When `PI_SEED` is set, `salt` (called only then)
    /// separates the streams of different operations, so two commands run with the same seed
    /// do not propose the same ids; it should depend only on reproducible state (such as the
    /// number of lines in the file).
    pub fn new(salt: impl FnOnce() -> u64) -> Rng {
        let seed = match std::env::var("PI_SEED")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            Some(seed) => seed ^ salt().wrapping_mul(0x9E37_79B9_7F4A_7C15),
            None => {
                let b = *uuid::Uuid::new_v4().as_bytes();
                let mut a = [0u8; 8];
                a.copy_from_slice(&b[..8]);
                let mut c = [0u8; 8];
                c.copy_from_slice(&b[8..]);
                u64::from_le_bytes(a) ^ u64::from_le_bytes(c).rotate_left(29)
            }
        };
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        // SplitMix64.
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Eight lowercase hex digits: the form of entry ids (the first 8 characters of a v4 UUID).
    pub fn short_id(&mut self) -> String {
        format!("{:08x}", self.next_u64() >> 32)
    }

    /// A full v4 UUID string (the fallback id after 100 collisions, as upstream does).
    pub fn uuid_v4(&mut self) -> String {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        b[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        uuid::Builder::from_random_bytes(b).into_uuid().to_string()
    }

    /// A time-ordered v7 UUID for a session created at `ms`.
    pub fn uuid_v7(&mut self, ms: i64) -> String {
        let mut r = [0u8; 10];
        r[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        r[8..].copy_from_slice(&self.next_u64().to_le_bytes()[..2]);
        uuid::Builder::from_unix_timestamp_millis(u64::try_from(ms).unwrap_or(0), &r)
            .into_uuid()
            .to_string()
    }
}
