//! A validating JSON scanner that hands out byte spans.
//!
//! Why it is not serde_json: callers copy the members they do not change through verbatim
//! (so a rewritten session line differs from the original only where it must), it accepts
//! exactly what the reference accepts, and it is the inner loop of every command that opens
//! a session. It validates a JSON text as strictly as RFC 8259 demands (with two deliberate
//! allowances, below) without building a tree, and gives the byte span of each object
//! member.
//!
//! Measured with `cargo bench -p pi-base --bench json` (64 MB of generated session lines,
//! 1965 bytes a line on average; the 2-core x86-64 machine of `docs/performance.md`;
//! medians of 5 runs of best-of-7, 2026-12-03): validating a line and handing out its
//! members' spans runs at 1470 MB/s with AVX2 compares and 1206 MB/s with the SSE2
//! baseline; serde_json validates at 810 MB/s without giving spans (`IgnoredAny`), gives
//! the same members borrowed (`BTreeMap<&str, &RawValue>`) at 439 MB/s, and builds a
//! `Value` at 156 MB/s. So the scanner does the work 3.3 times as fast as the crate, and
//! the AVX2 path is 22% faster than the baseline. An AVX-512BW path measured the same as
//! AVX2 (1497 against 1493 MB/s) and was removed.
//!
//! Allowances, both matching what the reference implementation (JavaScript's `JSON.parse` on a
//! UTF-8 decoded file) accepts:
//! - `\uD800`-style escapes of lone surrogates are valid (decoded as U+FFFD);
//! - bytes that are not valid UTF-8 are accepted inside strings (decoded as U+FFFD).
//!
//! Nothing here recurses, so arbitrarily deep input cannot overflow the stack.

use std::borrow::Cow;
use std::fmt;

/// Why a JSON text was rejected: the byte offset where scanning stopped and what was expected
/// there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub expected: &'static str,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {}", self.expected)
    }
}

impl std::error::Error for SyntaxError {}

type Result<T> = std::result::Result<T, SyntaxError>;

fn err<T>(offset: usize, expected: &'static str) -> Result<T> {
    Err(SyntaxError { offset, expected })
}

/// The kind of a JSON value, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

impl Kind {
    pub fn of(value: &[u8]) -> Option<Kind> {
        match value.first()? {
            b'{' => Some(Kind::Object),
            b'[' => Some(Kind::Array),
            b'"' => Some(Kind::String),
            b't' | b'f' => Some(Kind::Bool),
            b'n' => Some(Kind::Null),
            b'-' | b'0'..=b'9' => Some(Kind::Number),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Object => "an object",
            Kind::Array => "an array",
            Kind::String => "a string",
            Kind::Number => "a number",
            Kind::Bool => "a boolean",
            Kind::Null => "null",
        }
    }
}

#[inline]
pub fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

#[inline]
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

/// [`skip_ws`] for the scanning mode `CTRL` (see [`LINE`]).
#[inline(always)]
fn ws<const CTRL: u8>(b: &[u8], mut i: usize) -> usize {
    if CTRL == LINE {
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r') {
            i += 1;
        }
        i
    } else {
        skip_ws(b, i)
    }
}

#[inline]
fn load8(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(a)
}

/// Index of the first byte at or after `i` that is `"`, `\` or a control character.
#[inline]
fn find_string_special(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    while i + 8 <= b.len() {
        let w = load8(b, i);
        let q = w ^ (ONES * u64::from(b'"'));
        let s = w ^ (ONES * u64::from(b'\\'));
        // A byte is flagged when it is zero in q or s, or below 0x20 in w. Borrows can only
        // produce false flags above a true one, so the lowest flag is always exact.
        let hits = ((q.wrapping_sub(ONES) & !q)
            | (s.wrapping_sub(ONES) & !s)
            | (w.wrapping_sub(ONES * 0x20) & !w))
            & HIGHS;
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\\' || c < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

#[inline]
fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

/// Scans the string starting at `b[i] == '"'`. Returns the index after the closing quote and
/// whether the string contains escapes.
#[inline]
pub fn scan_string(b: &[u8], i: usize) -> Result<(usize, bool)> {
    scan_str::<FULL>(b, i)
}

/// Whether `b` contains a byte below 0x20 (the control characters, which JSON allows only as
/// whitespace between tokens). When it does not, strings can be scanned for just `"` and `\`.
pub(crate) fn has_control(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = b.chunks_exact(32);
    for c in &mut chunks {
        let mut acc = 0u64;
        for k in 0..4 {
            let w = load8(c, k * 8);
            acc |= w.wrapping_sub(ONES * 0x20) & !w;
        }
        if acc & HIGHS != 0 {
            return true;
        }
    }
    chunks.remainder().iter().any(|&c| c < 0x20)
}

/// Whether strings are scanned with vector compares, which check for control characters at
/// no extra cost: then the separate pass of [`has_control`] buys nothing.
const SIMD: bool = cfg!(target_arch = "x86_64");

/// Scanning modes: check everything as [`FULL`] does, and take no line feed for whitespace
/// between tokens: a line of JSONL scanned where it lies in a larger buffer then fails
/// rather than run on into the next line ...
const LINE: u8 = 3;
/// ... check everything, including raw control characters in strings ...
const FULL: u8 = 2;
/// ... everything but those (the caller knows the buffer has none, see [`has_control`]) ...
const NO_CTRL: u8 = 1;
/// ... or nothing: the text was validated before, only its structure is wanted. Strings are
/// then skipped to the first quote not escaped, and report no escapes.
const VALID: u8 = 0;

/// Bit `k` set when `b[i + k]` (k < 64) is `"`, `\\` or, with `CTRL`, a control character:
/// four of [`special_mask16`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special_mask64<const CTRL: bool>(b: &[u8], i: usize) -> u64 {
    let mut mask = 0u64;
    for k in 0..4 {
        let m = if CTRL {
            special_mask16::<FULL>(b, i + k * 16)
        } else {
            special_mask16::<NO_CTRL>(b, i + k * 16)
        };
        mask |= u64::from(m) << (k * 16);
    }
    mask
}

/// The portable version of the x86-64 mask above, eight bytes at a time.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn special_mask64<const CTRL: bool>(b: &[u8], i: usize) -> u64 {
    let mut mask = 0u64;
    for (k, &c) in b[i..i + 64].iter().enumerate() {
        let hit = (c == b'"') | (c == b'\\') | (CTRL & (c < 0x20));
        mask |= u64::from(hit) << k;
    }
    mask
}

/// For each byte after a backslash: the length of the escape it starts (2, 6 for `u`), or 0
/// when it starts none. A table, so that the common escapes take no jump.
const ESCAPE_LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    let simple = *b"\"\\/bfnrt";
    let mut k = 0;
    while k < simple.len() {
        t[simple[k] as usize] = 2;
        k += 1;
    }
    t[b'u' as usize] = 6;
    t
};

/// The length of the escape sequence whose backslash is at `b[j]` (2, or 6 for `\\uXXXX`).
#[inline(always)]
fn escape_len(b: &[u8], j: usize) -> Result<usize> {
    let n = b.get(j + 1).map_or(0, |&c| ESCAPE_LEN[usize::from(c)]);
    if n == 2 {
        return Ok(2);
    }
    if n == 6 {
        if b.len() >= j + 6 && b[j + 2..j + 6].iter().all(|&c| is_hex(c)) {
            return Ok(6);
        }
        return err(j, "four hex digits after '\\u'");
    }
    err(j, "a valid escape sequence")
}

/// How a block-wise string scan ended: `Ok(j)` when fewer than 64 bytes are left with the
/// string still open at `j` (no escape pending there), `Err` with the scan's result.
type Blocks = std::result::Result<usize, Result<(usize, bool)>>;

/// The widest vector compares (in bits) that string scans may use: pi always uses the
/// widest the CPU has; the benchmark (`cargo bench -p pi-base`) lowers it to compare.
static WIDTH_LIMIT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(u32::MAX);

/// Lets string scans use vector compares of at most `bits` (256: AVX2, 128: the x86-64
/// baseline, SSE2) where the CPU has them. For benchmarks.
#[doc(hidden)]
pub fn limit_vector_width(bits: u32) {
    WIDTH_LIMIT.store(bits, std::sync::atomic::Ordering::Relaxed);
}

/// [`scan_str`] 64 bytes at a time while that many remain, with the widest vector compares
/// the CPU has (checked at run time: the build targets the x86-64 baseline).
#[inline]
fn scan_str_blocks<const CTRL: bool>(b: &[u8], j: usize, escaped: &mut bool) -> Blocks {
    #[cfg(all(test, target_arch = "x86_64"))]
    match tests::WIDTH.get() {
        tests::Width::Narrow => return scan_str_blocks_narrow::<CTRL>(b, j, escaped),
        // SAFETY: tests choose a width only when the CPU has it.
        tests::Width::Avx2 => return unsafe { wide::blocks256::<CTRL>(b, j, escaped) },
        tests::Width::Any => {}
    }
    #[cfg(target_arch = "x86_64")]
    {
        let limit = WIDTH_LIMIT.load(std::sync::atomic::Ordering::Relaxed);
        if limit >= 256 && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { wide::blocks256::<CTRL>(b, j, escaped) };
        }
    }
    scan_str_blocks_narrow::<CTRL>(b, j, escaped)
}

/// The baseline block scan: every special byte of a block is handled in turn from one mask.
#[inline]
fn scan_str_blocks_narrow<const CTRL: bool>(b: &[u8], mut j: usize, escaped: &mut bool) -> Blocks {
    'block: while j + 64 <= b.len() {
        let mut m = special_mask64::<CTRL>(b, j);
        while m != 0 {
            let p = j + m.trailing_zeros() as usize;
            match b[p] {
                b'"' => return Err(Ok((p + 1, *escaped))),
                b'\\' => {
                    *escaped = true;
                    let next = match escape_len(b, p) {
                        Ok(n) => p + n,
                        Err(e) => return Err(Err(e)),
                    };
                    if next - j >= 64 {
                        j = next;
                        continue 'block;
                    }
                    m &= !0u64 << (next - j);
                }
                _ => return Err(err(p, "no raw control characters inside a string")),
            }
        }
        j += 64;
    }
    Ok(j)
}

/// Which bytes of a 64-byte block are escaped, from its backslashes: the characters that
/// follow a run of backslashes of odd length (a backslash escaped by the one before it is
/// not listed: it is always valid). `carry` is 1 when the block's first byte is escaped by
/// the block before. Returns the escaped bytes and the carry for the next block.
///
/// Adding a run's first bit to the run clears it and sets the bit just after it; a run of
/// odd length ends on the other parity than it starts, so runs are added separately by the
/// parity of their start and only the ends of the other parity are kept.
#[inline(always)]
fn escaped_bits(backslashes: u64, carry: u64) -> (u64, u64) {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let bs = backslashes & !carry;
    let starts = bs & !(bs << 1);
    let (from_even, _) = bs.overflowing_add(starts & EVEN);
    let (from_odd, out) = bs.overflowing_add(starts & !EVEN);
    let escaped = (from_even & !bs & !EVEN) | (from_odd & !bs & EVEN) | carry;
    (escaped, u64::from(out))
}

/// [`escaped_bits`], with the usual case first: when no backslash follows another (and the
/// first is not escaped from the block before), each one escapes the byte after it.
#[inline(always)]
fn escaped_after(backslashes: u64, carry: u64) -> (u64, u64) {
    if backslashes & ((backslashes << 1) | carry) == 0 {
        ((backslashes << 1) | carry, backslashes >> 63)
    } else {
        escaped_bits(backslashes, carry)
    }
}

/// The block scan from masks of whole blocks: `masks(b, i)` gives the quotes, backslashes
/// and control characters of `b[i..i + 64]`, `letters(b, i)` its bytes that end a two-byte
/// escape other than `\"` and `\\` (`/bfnrt`). Escapes are resolved for the whole block at
/// once ([`escaped_bits`]); only `\u` escapes and bad ones are looked at one by one. The
/// first error in byte order is the one reported, as in the narrow scan.
#[inline(always)]
fn blocks_masked<const CTRL: bool>(
    b: &[u8],
    mut j: usize,
    escaped: &mut bool,
    masks: impl Fn(&[u8], usize) -> [u64; 3],
    letters: impl Fn(&[u8], usize) -> u64,
) -> Blocks {
    let mut carry = 0u64;
    while j + 64 <= b.len() {
        let [quotes, backslashes, controls] = masks(b, j);
        let controls = if CTRL { controls } else { 0 };
        if backslashes | carry == 0 {
            let stop = quotes | controls;
            if stop != 0 {
                let p = j + stop.trailing_zeros() as usize;
                if b[p] == b'"' {
                    return Err(Ok((p + 1, *escaped)));
                }
                return Err(err(p, "no raw control characters inside a string"));
            }
            j += 64;
            continue;
        }
        let (esc, next_carry) = escaped_after(backslashes, carry);
        let closing = quotes & !esc;
        // The bits before the closing quote (all of them when the string goes on).
        let open = closing.wrapping_sub(1) & !closing;
        let controls = controls & open;
        let first_control = if controls == 0 {
            usize::MAX
        } else {
            j + controls.trailing_zeros() as usize
        };
        let mut check = esc & !quotes & !backslashes & open;
        if check != 0 {
            // Escaped bytes in this block: the one at `j` may belong to the block before.
            check &= !letters(b, j);
        }
        while check != 0 {
            // The escaped byte is at `p`, its backslash at `p - 1` (in the block before
            // when `p == j`).
            let p = j + check.trailing_zeros() as usize;
            if p - 1 > first_control {
                break;
            }
            match ESCAPE_LEN[usize::from(b[p])] {
                2 => {}
                6 if hex4(b, p + 1).is_some() => {}
                6 => return Err(err(p - 1, "four hex digits after '\\u'")),
                _ => return Err(err(p - 1, "a valid escape sequence")),
            }
            check &= check - 1;
        }
        if controls != 0 {
            return Err(err(
                first_control,
                "no raw control characters inside a string",
            ));
        }
        if backslashes & open != 0 {
            *escaped = true;
        }
        if closing != 0 {
            return Err(Ok((j + closing.trailing_zeros() as usize + 1, *escaped)));
        }
        carry = next_carry;
        j += 64;
    }
    // An escape pending across the end of the last block: go back to its backslash, so that
    // the byte-wise rest sees the whole escape.
    Ok(j - carry as usize)
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::{Blocks, blocks_masked};
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8,
    };

    /// The letters of the two-byte escapes besides `\"` and `\\`.
    const LETTERS: [u8; 6] = *b"/bfnrt";

    /// The 64 bytes at `b[i..]` (`None` when fewer are left), as two vectors.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn load256(b: &[u8], i: usize) -> Option<[__m256i; 2]> {
        let chunk = b.get(i..i + 64)?;
        // SAFETY: each load reads 32 of the 64 bytes of `chunk`.
        Some(unsafe {
            [
                _mm256_loadu_si256(chunk.as_ptr().cast::<__m256i>()),
                _mm256_loadu_si256(chunk[32..].as_ptr().cast::<__m256i>()),
            ]
        })
    }

    /// The 64-bit mask of a pair of 32-byte compare results.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn mask256(halves: [__m256i; 2]) -> u64 {
        let [lo, hi] = halves.map(|m| u64::from(_mm256_movemask_epi8(m) as u32));
        lo | hi << 32
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn letters256(b: &[u8], i: usize) -> u64 {
        let Some(x) = load256(b, i) else { return 0 };
        mask256(x.map(|x| {
            LETTERS.iter().fold(_mm256_set1_epi8(0), |m, &c| {
                _mm256_or_si256(m, _mm256_cmpeq_epi8(x, _mm256_set1_epi8(c as i8)))
            })
        }))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn masks256(b: &[u8], i: usize) -> [u64; 3] {
        let Some(x) = load256(b, i) else {
            return [0; 3];
        };
        [
            mask256(x.map(|x| _mm256_cmpeq_epi8(x, _mm256_set1_epi8(b'"' as i8)))),
            mask256(x.map(|x| _mm256_cmpeq_epi8(x, _mm256_set1_epi8(b'\\' as i8)))),
            mask256(x.map(|x| _mm256_cmpeq_epi8(_mm256_min_epu8(x, _mm256_set1_epi8(0x1f)), x))),
        ]
    }

    /// The block scan with AVX2 compares.
    #[target_feature(enable = "avx2")]
    pub(super) fn blocks256<const CTRL: bool>(b: &[u8], j: usize, escaped: &mut bool) -> Blocks {
        // The closure has this function's target features.
        blocks_masked::<CTRL>(
            b,
            j,
            escaped,
            |b, i| masks256(b, i),
            |b, i| letters256(b, i),
        )
    }
}

/// Bit `k` set when `b[i + k]` (k < 16) is `"`, `\\` or, in [`FULL`] mode, a control
/// character.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special_mask16<const CTRL: u8>(b: &[u8], i: usize) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let chunk: &[u8; 16] = match b[i..i + 16].try_into() {
        Ok(c) => c,
        Err(_) => return 0,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline; the load reads the 16 bytes of `chunk`.
    unsafe {
        let x = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
        let mut m = _mm_or_si128(
            _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8)),
            _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8)),
        );
        if CTRL >= FULL {
            m = _mm_or_si128(m, _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x));
        }
        _mm_movemask_epi8(m) as u32
    }
}

/// `CTRL`: the scanning mode ([`FULL`], [`NO_CTRL`] or [`VALID`]). Most strings (keys,
/// ids, times) end within 32 bytes with no escape: that case is one or two compares, inline.
#[inline(always)]
fn scan_str<const CTRL: u8>(b: &[u8], i: usize) -> Result<(usize, bool)> {
    #[cfg(target_arch = "x86_64")]
    if i + 33 <= b.len() {
        let mut m = special_mask16::<CTRL>(b, i + 1);
        let mut at = i + 1;
        if m == 0 {
            // Times and ids are mostly 20 to 32 bytes: a second look covers them.
            m = special_mask16::<CTRL>(b, i + 17);
            at = i + 17;
        }
        if m != 0 {
            let p = at + m.trailing_zeros() as usize;
            if b[p] == b'"' {
                return Ok((p + 1, false));
            }
        }
    }
    scan_str_long::<CTRL>(b, i)
}

#[inline(never)]
fn scan_str_long<const CTRL: u8>(b: &[u8], i: usize) -> Result<(usize, bool)> {
    debug_assert_eq!(b.get(i), Some(&b'"'));
    let mut j = i + 1;
    let mut escaped = false;
    {
        // Validated text has neither bad escapes nor control characters, so checking them
        // again changes nothing.
        let blocks = if CTRL >= FULL {
            scan_str_blocks::<true>(b, j, &mut escaped)
        } else {
            scan_str_blocks::<false>(b, j, &mut escaped)
        };
        match blocks {
            Ok(rest) => j = rest,
            Err(done) => return done.map(|(end, e)| (end, e && CTRL != VALID)),
        }
    }
    loop {
        j = if CTRL >= FULL {
            find_string_special(b, j)
        } else {
            memchr::memchr2(b'"', b'\\', &b[j.min(b.len())..]).map_or(b.len(), |k| j + k)
        };
        match b.get(j) {
            None => return err(j, "'\"' to close the string"),
            Some(b'"') => return Ok((j + 1, escaped && CTRL != VALID)),
            Some(b'\\') => {
                escaped = true;
                j += escape_len(b, j)?;
            }
            Some(_) => return err(j, "no raw control characters inside a string"),
        }
    }
}

fn scan_number(b: &[u8], mut i: usize) -> Result<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits_end(b, i + 1),
        _ => return err(i, "a digit"),
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return err(i, "a digit after the decimal point");
        }
        i = digits_end(b, i + 1);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return err(i, "a digit in the exponent");
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    Ok(i)
}

/// The end of the run of ASCII digits at `b[i..]`, eight bytes at a time while eight are
/// left: a byte is a digit when its high bit is clear and its low seven bits are at least
/// `0` and below `:`, both compared by an addition whose result lands in each byte's high
/// bit (no sum exceeds 0xff, so nothing carries into the next byte).
fn digits_end(b: &[u8], mut i: usize) -> usize {
    const HI: u64 = u64::from_ne_bytes([0x80; 8]);
    const LOW: u64 = u64::from_ne_bytes([0x7f; 8]);
    let splat = |c: u8| u64::from_ne_bytes([c; 8]);
    while let Some(chunk) = b.get(i..).and_then(|r| r.first_chunk::<8>()) {
        let v = u64::from_le_bytes(*chunk);
        let low = v & LOW;
        // High bit set: at least `0` (0x30), and at least `:` (0x3a).
        let from_zero = (low + splat(0x80 - b'0')) & HI;
        let past_nine = (low + splat(0x80 - b'9' - 1)) & HI;
        let not_digit = (v & HI) | !from_zero & HI | past_nine;
        if not_digit != 0 {
            return i + (not_digit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while matches!(b.get(i), Some(b'0'..=b'9')) {
        i += 1;
    }
    i
}

fn scan_literal(b: &[u8], i: usize, lit: &'static [u8], expected: &'static str) -> Result<usize> {
    if b.len() >= i + lit.len() && &b[i..i + lit.len()] == lit {
        Ok(i + lit.len())
    } else {
        err(i, expected)
    }
}

/// A stack of container kinds (true = object) that stays allocation-free up to depth 128.
struct Nesting {
    bits: u128,
    len: usize,
    spill: Vec<bool>,
}

impl Nesting {
    fn new() -> Self {
        Nesting {
            bits: 0,
            len: 0,
            spill: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, object: bool) {
        if self.len < 128 {
            if object {
                self.bits |= 1 << self.len;
            } else {
                self.bits &= !(1 << self.len);
            }
        } else {
            self.spill.push(object);
        }
        self.len += 1;
    }

    #[inline]
    fn top(&self) -> Option<bool> {
        match self.len {
            0 => None,
            n if n <= 128 => Some(self.bits & (1 << (n - 1)) != 0),
            _ => self.spill.last().copied(),
        }
    }

    #[inline]
    fn pop(&mut self) {
        if self.len > 128 {
            self.spill.pop();
        }
        self.len = self.len.saturating_sub(1);
    }
}

/// Scans one value starting exactly at `i` (no leading whitespace). Returns the index after it
/// and the deepest container nesting seen (0 for scalars).
pub fn scan_value(b: &[u8], i: usize) -> Result<(usize, usize)> {
    scan_val::<FULL>(b, i)
}

fn scan_val<const CTRL: u8>(b: &[u8], i: usize) -> Result<(usize, usize)> {
    let mut i = i;
    let mut stack = Nesting::new();
    let mut max_depth = 0;
    'value: loop {
        // A value is expected at i.
        match b.get(i) {
            Some(b'{') => {
                i = ws::<CTRL>(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    max_depth = max_depth.max(stack.len + 1);
                    i += 1;
                } else {
                    i = scan_key_colon::<CTRL>(b, i)?;
                    stack.push(true);
                    max_depth = max_depth.max(stack.len);
                    i = ws::<CTRL>(b, i);
                    continue 'value;
                }
            }
            Some(b'[') => {
                i = ws::<CTRL>(b, i + 1);
                if b.get(i) == Some(&b']') {
                    max_depth = max_depth.max(stack.len + 1);
                    i += 1;
                } else {
                    stack.push(false);
                    max_depth = max_depth.max(stack.len);
                    continue 'value;
                }
            }
            Some(b'"') => i = scan_str::<CTRL>(b, i)?.0,
            Some(b't') => i = scan_literal(b, i, b"true", "'true'")?,
            Some(b'f') => i = scan_literal(b, i, b"false", "'false'")?,
            Some(b'n') => i = scan_literal(b, i, b"null", "'null'")?,
            Some(b'-' | b'0'..=b'9') => i = scan_number(b, i)?,
            _ => return err(i, "a JSON value"),
        }
        // A value ended at i.
        loop {
            let Some(object) = stack.top() else {
                return Ok((i, max_depth));
            };
            i = ws::<CTRL>(b, i);
            match b.get(i) {
                Some(b',') => {
                    i = ws::<CTRL>(b, i + 1);
                    if object {
                        i = ws::<CTRL>(b, scan_key_colon::<CTRL>(b, i)?);
                    }
                    continue 'value;
                }
                Some(b'}') if object => {
                    stack.pop();
                    i += 1;
                }
                Some(b']') if !object => {
                    stack.pop();
                    i += 1;
                }
                _ => return err(i, if object { "',' or '}'" } else { "',' or ']'" }),
            }
        }
    }
}

/// Scans `"key"` then optional whitespace and `:`; returns the index after the colon.
fn scan_key_colon<const CTRL: u8>(b: &[u8], i: usize) -> Result<usize> {
    if b.get(i) != Some(&b'"') {
        return err(i, "'\"' to start an object key");
    }
    let (end, _) = scan_str::<CTRL>(b, i)?;
    let j = ws::<CTRL>(b, end);
    if b.get(j) != Some(&b':') {
        return err(j, "':' after the object key");
    }
    Ok(j + 1)
}

/// Validates that `b` holds exactly one JSON value, optionally surrounded by whitespace.
/// Returns the span of the value and its nesting depth.
pub fn validate(b: &[u8]) -> Result<(usize, usize, usize)> {
    let start = skip_ws(b, 0);
    let (end, depth) = if SIMD || has_control(b) {
        scan_val::<FULL>(b, start)?
    } else {
        scan_val::<NO_CTRL>(b, start)?
    };
    let rest = skip_ws(b, end);
    if rest != b.len() {
        return err(rest, "the end of the JSON value");
    }
    Ok((start, end, depth))
}

/// The raw text between the quotes of a JSON string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawStr<'a> {
    pub raw: &'a [u8],
    pub escaped: bool,
}

impl<'a> RawStr<'a> {
    /// `value` is a complete, validated JSON string including quotes.
    pub fn from_value(value: &'a [u8]) -> Option<RawStr<'a>> {
        if value.len() >= 2 && value[0] == b'"' && value[value.len() - 1] == b'"' {
            let raw = &value[1..value.len() - 1];
            // Most values looked at are short (types, roles, times, ids): a plain loop
            // beats the call.
            let escaped = if raw.len() <= 32 {
                raw.iter().fold(false, |e, &c| e | (c == b'\\'))
            } else {
                memchr::memchr(b'\\', raw).is_some()
            };
            Some(RawStr { raw, escaped })
        } else {
            None
        }
    }

    /// Compares with a plain (unescaped) string without allocating when possible.
    pub fn eq_str(&self, s: &str) -> bool {
        if self.escaped {
            decode_str(self.raw) == s
        } else {
            self.raw == s.as_bytes()
        }
    }

    pub fn decode(&self) -> Cow<'a, str> {
        if self.escaped {
            Cow::Owned(decode_str(self.raw).into_owned())
        } else {
            utf8_lossy(self.raw)
        }
    }
}

/// `String::from_utf8_lossy`, with a quicker answer for the usual short valid text.
#[inline]
fn utf8_lossy(raw: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(raw) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(raw),
    }
}

/// Decodes the inside of a validated JSON string (escapes resolved, invalid UTF-8 and lone
/// surrogates replaced by U+FFFD).
pub fn decode_str(raw: &[u8]) -> Cow<'_, str> {
    if memchr::memchr(b'\\', raw).is_none() {
        return utf8_lossy(raw);
    }
    let mut out: Vec<u8> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let Some(k) = memchr::memchr(b'\\', &raw[i..]) else {
            out.extend_from_slice(&raw[i..]);
            break;
        };
        out.extend_from_slice(&raw[i..i + k]);
        i += k;
        if let Some(c) = simple_escape(raw.get(i + 1).copied().unwrap_or(b'\\')) {
            out.push(c);
            i += 2;
            continue;
        }
        let (u, len) = unicode_escape(raw, i);
        i += len;
        let c = char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER);
        out.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes());
    }
    match String::from_utf8(out) {
        Ok(s) => Cow::Owned(s),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// The byte a one-letter escape (`\n`, `\"`, …) stands for; `None` for `u`.
pub fn simple_escape(letter: u8) -> Option<u8> {
    match letter {
        b'"' | b'\\' | b'/' => Some(letter),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        _ => None,
    }
}

/// The four hex digits of a `\uXXXX` escape starting at `b[i]`.
fn hex4(b: &[u8], i: usize) -> Option<u32> {
    let digits = b.get(i..i + 4)?;
    let mut v = 0u32;
    for &d in digits {
        v = v * 16 + (d as char).to_digit(16)?;
    }
    Some(v)
}

/// The `\uXXXX` escape whose backslash is at `b[i]`, read as `JSON.parse` reads it: a high
/// surrogate followed by a low-surrogate escape is one character. Returns the code point (a
/// lone surrogate as its own value, U+FFFD for bad digits) and the length of the escape text.
pub fn unicode_escape(b: &[u8], i: usize) -> (u32, usize) {
    let u = hex4(b, i + 2).unwrap_or(0xFFFD);
    if (0xD800..0xDC00).contains(&u)
        && b.get(i + 6) == Some(&b'\\')
        && b.get(i + 7) == Some(&b'u')
        && let Some(lo @ 0xDC00..=0xDFFF) = hex4(b, i + 8)
    {
        return (0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00), 12);
    }
    (u, 6)
}

/// One member of an object: its key and the span of its value within the scanned buffer.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub key: RawStr<'a>,
    /// Offset of the key's opening quote.
    pub key_start: usize,
    /// Offset after the key's closing quote.
    pub key_end: usize,
    pub value_start: usize,
    pub value_end: usize,
}

/// Whether strings from `b[i]` on are scanned with the check for raw control characters
/// ([`FULL`]) rather than without it ([`NO_CTRL`], when a first pass found none).
fn check_controls(b: &[u8], i: usize) -> bool {
    SIMD || has_control(&b[i.min(b.len())..])
}

/// Validates the object starting at `b[i]` (no leading whitespace) and calls `f` for each
/// member in order. Returns the index after the closing brace and the nesting depth.
pub fn scan_object<'a>(b: &'a [u8], i: usize, f: impl FnMut(Member<'a>)) -> Result<(usize, usize)> {
    if check_controls(b, i) {
        scan_obj::<FULL>(b, i, f, None)
    } else {
        scan_obj::<NO_CTRL>(b, i, f, None)
    }
}

/// Scans a member's value instead of the plain scan: given the member's key and where its
/// value starts, `Some(result)` (the index after the value and its nesting depth) when the
/// hook scanned the value itself, `None` for the plain scan.
type Hook<'h, 'a> = Option<&'h mut dyn FnMut(&RawStr<'a>, usize) -> Option<Result<(usize, usize)>>>;

/// [`scan_object`], also calling `g(offset of the object, member)` for each member of the
/// object value of every member whose key is `key` (when the key is repeated, each of its
/// values in turn, as they come). One pass: the inner object is scanned only once.
///
/// `path` goes further down: the members of the object value of an inner member whose key
/// is `path[0]` are reported to `g` as well (with the offset of their own object), and so
/// on for `path[1]` in that object. A member is reported after those inside its value.
pub fn scan_object_nested<'a>(
    b: &'a [u8],
    i: usize,
    key: &str,
    path: &[&str],
    f: impl FnMut(Member<'a>),
    g: &mut dyn FnMut(usize, Member<'a>),
) -> Result<(usize, usize)> {
    if check_controls(b, i) {
        scan_nested::<FULL>(b, i, key, path, f, g)
    } else {
        scan_nested::<NO_CTRL>(b, i, key, path, f, g)
    }
}

fn scan_nested<'a, const CTRL: u8>(
    b: &'a [u8],
    i: usize,
    key: &str,
    path: &[&str],
    f: impl FnMut(Member<'a>),
    g: &mut dyn FnMut(usize, Member<'a>),
) -> Result<(usize, usize)> {
    let mut hook = |k: &RawStr<'a>, at: usize| {
        (b.get(at) == Some(&b'{') && k.eq_str(key)).then(|| scan_path::<CTRL>(b, at, path, g))
    };
    scan_obj::<CTRL>(b, i, f, Some(&mut hook))
}

/// The object at `b[at]`, its members reported to `g`, and those of the objects `path`
/// leads to below it (see [`scan_object_nested`]).
fn scan_path<'a, const CTRL: u8>(
    b: &'a [u8],
    at: usize,
    path: &[&str],
    g: &mut dyn FnMut(usize, Member<'a>),
) -> Result<(usize, usize)> {
    let Some((next, rest)) = path.split_first() else {
        return scan_obj::<CTRL>(b, at, |m| g(at, m), None);
    };
    // The levels take turns with `g`: a member is reported after its value was scanned, so
    // the borrows never overlap.
    let g = std::cell::RefCell::new(g);
    let mut below = |k: &RawStr<'a>, inner: usize| {
        (b.get(inner) == Some(&b'{') && k.eq_str(next)).then(|| {
            let mut g = g.borrow_mut();
            scan_path::<CTRL>(b, inner, rest, &mut **g)
        })
    };
    scan_obj::<CTRL>(b, at, |m| (g.borrow_mut())(at, m), Some(&mut below))
}

/// The members of the validated object at `b[at]`, with those of the objects `path` leads
/// to below it (as [`scan_object_nested`] reports them).
pub fn path_members_valid<'a>(
    b: &'a [u8],
    at: usize,
    path: &[&str],
    g: &mut dyn FnMut(usize, Member<'a>),
) -> Result<(usize, usize)> {
    scan_path::<VALID>(b, at, path, g)
}

/// Where a member reported by [`scan_object_deep`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// In the object value of the top-level member `Deep::key`.
    Inner,
    /// In an object element of that object's array member `Deep::list`.
    Element,
    /// In such an element's object member `Deep::sub`.
    Sub,
}

/// The keys of the members [`scan_object_deep`] reports below the top level.
#[derive(Debug, Clone, Copy)]
pub struct Deep {
    pub key: &'static str,
    pub list: &'static str,
    pub sub: &'static str,
}

/// [`scan_object_nested`] two levels further: also `g(Depth, offset of the object, member)`
/// for each member of the object elements of the inner object's array member `deep.list`,
/// and of those elements' object member `deep.sub` (as the key `deep.key` in
/// [`scan_object_nested`], every occurrence of a repeated key is reported). One pass.
pub fn scan_object_deep<'a>(
    b: &'a [u8],
    i: usize,
    deep: Deep,
    f: impl FnMut(Member<'a>),
    g: &mut dyn FnMut(Depth, usize, Member<'a>),
) -> Result<(usize, usize)> {
    if check_controls(b, i) {
        scan_deep::<FULL>(b, i, deep, f, g)
    } else {
        scan_deep::<NO_CTRL>(b, i, deep, f, g)
    }
}

/// The scans of [`scan_object`], [`scan_object_nested`] and [`scan_object_deep`] for an
/// object that starts a line of JSONL in a buffer holding more lines: whitespace between
/// tokens does not include a line feed, so the scan fails (rather than run on) where the
/// line does not hold the whole object. A success ends within the line.
pub mod in_line {
    use super::{Deep, Depth, LINE, Member, Result, scan_deep, scan_nested, scan_obj};

    pub fn object<'a>(b: &'a [u8], i: usize, f: impl FnMut(Member<'a>)) -> Result<(usize, usize)> {
        scan_obj::<LINE>(b, i, f, None)
    }

    pub fn nested<'a>(
        b: &'a [u8],
        i: usize,
        key: &str,
        path: &[&str],
        f: impl FnMut(Member<'a>),
        g: &mut dyn FnMut(usize, Member<'a>),
    ) -> Result<(usize, usize)> {
        scan_nested::<LINE>(b, i, key, path, f, g)
    }

    pub fn deep<'a>(
        b: &'a [u8],
        i: usize,
        deep: Deep,
        f: impl FnMut(Member<'a>),
        g: &mut dyn FnMut(Depth, usize, Member<'a>),
    ) -> Result<(usize, usize)> {
        scan_deep::<LINE>(b, i, deep, f, g)
    }
}

fn scan_deep<'a, const CTRL: u8>(
    b: &'a [u8],
    i: usize,
    deep: Deep,
    f: impl FnMut(Member<'a>),
    g: &mut dyn FnMut(Depth, usize, Member<'a>),
) -> Result<(usize, usize)> {
    let mut inner = |k: &RawStr<'a>, at: usize| {
        (b.get(at) == Some(&b'{') && k.eq_str(deep.key))
            .then(|| scan_deep_inner::<CTRL>(b, at, deep, &mut *g))
    };
    scan_obj::<CTRL>(b, i, f, Some(&mut inner))
}

/// [`scan_object_deep`] for an object already validated, from its inner level: `g` gets the
/// members of the object at `b[i]` ([`Depth::Inner`]) and those below them.
pub fn deep_members_valid<'a>(
    b: &'a [u8],
    i: usize,
    deep: Deep,
    g: &mut dyn FnMut(Depth, usize, Member<'a>),
) -> Result<(usize, usize)> {
    scan_deep_inner::<VALID>(b, i, deep, g)
}

/// The inner object of [`scan_object_deep`] at `b[i]` and the levels below it. Each level is
/// a closure of its own that hands the next level's scan to `scan_obj`.
fn scan_deep_inner<'a, const CTRL: u8>(
    b: &'a [u8],
    i: usize,
    deep: Deep,
    g: &mut dyn FnMut(Depth, usize, Member<'a>),
) -> Result<(usize, usize)> {
    // The levels take turns with `g`: each call through it ends before the next one starts
    // (a member is reported after its value is scanned), so the borrows never overlap.
    let g = std::cell::RefCell::new(g);
    let mut sub = |k: &RawStr<'a>, at: usize| {
        (b.get(at) == Some(&b'{') && k.eq_str(deep.sub))
            .then(|| scan_obj::<CTRL>(b, at, |m| (g.borrow_mut())(Depth::Sub, at, m), None))
    };
    let mut element = |at: usize| {
        (b.get(at) == Some(&b'{')).then(|| {
            scan_obj::<CTRL>(
                b,
                at,
                |m| (g.borrow_mut())(Depth::Element, at, m),
                Some(&mut sub),
            )
        })
    };
    let mut list = |k: &RawStr<'a>, at: usize| {
        (b.get(at) == Some(&b'[') && k.eq_str(deep.list))
            .then(|| scan_arr::<CTRL>(b, at, &mut element))
    };
    scan_obj::<CTRL>(
        b,
        i,
        |m| (g.borrow_mut())(Depth::Inner, i, m),
        Some(&mut list),
    )
}

/// Scans the array at `b[i]`; `element(start)` may scan an element itself (see [`Hook`]).
/// The same errors as the plain scan. Returns the index after it and its nesting depth.
fn scan_arr<const CTRL: u8>(
    b: &[u8],
    i: usize,
    element: &mut dyn FnMut(usize) -> Option<Result<(usize, usize)>>,
) -> Result<(usize, usize)> {
    let mut j = ws::<CTRL>(b, i + 1);
    if b.get(j) == Some(&b']') {
        return Ok((j + 1, 1));
    }
    let mut depth = 1;
    loop {
        let (end, d) = match element(j) {
            Some(r) => r?,
            None => scan_val::<CTRL>(b, j)?,
        };
        depth = depth.max(d + 1);
        j = ws::<CTRL>(b, end);
        match b.get(j) {
            Some(b',') => j = ws::<CTRL>(b, j + 1),
            Some(b']') => return Ok((j + 1, depth)),
            _ => return err(j, "',' or ']'"),
        }
    }
}

fn scan_obj<'a, const CTRL: u8>(
    b: &'a [u8],
    i: usize,
    mut f: impl FnMut(Member<'a>),
    mut hook: Hook<'_, 'a>,
) -> Result<(usize, usize)> {
    if b.get(i) != Some(&b'{') {
        return err(i, "a JSON object");
    }
    let mut depth = 1;
    let mut j = ws::<CTRL>(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return Ok((j + 1, depth));
    }
    loop {
        if b.get(j) != Some(&b'"') {
            return err(j, "'\"' to start an object key");
        }
        let key_start = j;
        let (key_end, mut escaped) = scan_str::<CTRL>(b, j)?;
        if CTRL == VALID {
            escaped = memchr::memchr(b'\\', &b[key_start + 1..key_end - 1]).is_some();
        }
        j = ws::<CTRL>(b, key_end);
        if b.get(j) != Some(&b':') {
            return err(j, "':' after the object key");
        }
        let value_start = ws::<CTRL>(b, j + 1);
        let key = RawStr {
            raw: &b[key_start + 1..key_end - 1],
            escaped,
        };
        let (value_end, d) = match hook.as_mut().and_then(|h| h(&key, value_start)) {
            Some(r) => r?,
            // Strings and numbers, most members' values, without the container loop.
            None => match b.get(value_start) {
                Some(b'"') => (scan_str::<CTRL>(b, value_start)?.0, 0),
                Some(b'0'..=b'9') => (scan_number(b, value_start)?, 0),
                _ => scan_val::<CTRL>(b, value_start)?,
            },
        };
        depth = depth.max(d + 1);
        f(Member {
            key,
            key_start,
            key_end,
            value_start,
            value_end,
        });
        j = ws::<CTRL>(b, value_end);
        match b.get(j) {
            Some(b',') => j = ws::<CTRL>(b, j + 1),
            Some(b'}') => return Ok((j + 1, depth)),
            _ => return err(j, "',' or '}'"),
        }
    }
}

/// The value of `key` among the `members` of the object in `value` (the last one if the key
/// is repeated, as `JSON.parse` does).
pub fn field<'a>(value: &'a [u8], members: &[Member<'_>], key: &str) -> Option<&'a [u8]> {
    members
        .iter()
        .rev()
        .find(|m| m.key.eq_str(key))
        .map(|m| &value[m.value_start..m.value_end])
}

/// Members of a validated object value, collected (for small objects off the hot path).
pub fn members(value: &[u8]) -> Result<Vec<Member<'_>>> {
    let mut out = Vec::new();
    scan_object(value, 0, |m| out.push(m))?;
    Ok(out)
}

/// [`members`] of an object already validated as part of a larger text: strings are skipped
/// by their quotes and backslashes alone (no second look for control characters).
pub fn members_valid(value: &[u8]) -> Result<Vec<Member<'_>>> {
    let mut out = Vec::new();
    scan_obj::<VALID>(value, 0, |m| out.push(m), None)?;
    Ok(out)
}

/// [`scan_object`] for an object already validated (see [`members_valid`]).
pub fn scan_object_valid<'a>(
    b: &'a [u8],
    i: usize,
    f: impl FnMut(Member<'a>),
) -> Result<(usize, usize)> {
    scan_obj::<VALID>(b, i, f, None)
}

/// For each element of the array `value`, already validated as part of a larger text: its
/// members when it is an object (offsets into `value`), else `None`; one pass over the bytes.
pub fn for_each_element_members_valid<'a>(
    value: &'a [u8],
    mut f: impl FnMut(Option<&[Member<'a>]>),
) -> Result<()> {
    if value.first() != Some(&b'[') {
        return err(0, "a JSON array");
    }
    let mut j = skip_ws(value, 1);
    if value.get(j) == Some(&b']') {
        return Ok(());
    }
    let mut members = Vec::new();
    loop {
        let end = if value.get(j) == Some(&b'{') {
            members.clear();
            let (end, _) = scan_obj::<VALID>(value, j, |m| members.push(m), None)?;
            f(Some(&members));
            end
        } else {
            let (end, _) = scan_val::<VALID>(value, j)?;
            f(None);
            end
        };
        j = skip_ws(value, end);
        match value.get(j) {
            Some(b',') => j = skip_ws(value, j + 1),
            Some(b']') => return Ok(()),
            _ => return err(j, "',' or ']'"),
        }
    }
}

/// The value of `key` in the validated object `value` (the last one if repeated, as
/// `JSON.parse` does).
pub fn get<'a>(value: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let mut found = None;
    scan_object(value, 0, |m| {
        if m.key.eq_str(key) {
            found = Some((m.value_start, m.value_end));
        }
    })
    .ok()?;
    found.map(|(s, e)| &value[s..e])
}

/// The string at `key`, decoded.
pub fn get_str<'a>(value: &'a [u8], key: &str) -> Option<Cow<'a, str>> {
    get(value, key)
        .and_then(RawStr::from_value)
        .map(|s| s.decode())
}

/// Calls `f` with every element of the validated array `value`.
pub fn for_each_element<'a>(value: &'a [u8], mut f: impl FnMut(&'a [u8])) -> Result<()> {
    if value.first() != Some(&b'[') {
        return err(0, "a JSON array");
    }
    let mut j = skip_ws(value, 1);
    if value.get(j) == Some(&b']') {
        return Ok(());
    }
    loop {
        let (end, _) = scan_value(value, j)?;
        f(&value[j..end]);
        j = skip_ws(value, end);
        match value.get(j) {
            Some(b',') => j = skip_ws(value, j + 1),
            Some(b']') => return Ok(()),
            _ => return err(j, "',' or ']'"),
        }
    }
}

/// A validated number as f64 (JavaScript's view of it).
pub fn number(value: &[u8]) -> Option<f64> {
    if Kind::of(value) != Some(Kind::Number) {
        return None;
    }
    // Integers of up to 15 digits (token counts, times in ms) are exact as f64: no need
    // for the float parser.
    let (negative, digits) = match value.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, value),
    };
    if let Some(n) = short_decimal(digits) {
        return Some(if negative { -n } else { n });
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// `digits` (an integer, or a decimal fraction with digits on both sides of the point) as
/// f64 when it has at most 15 digits: the digits without the point make an integer below
/// 2^53 and the place of the point a power of ten of at most 10^15, both exact as f64, so
/// their quotient is the correctly rounded value, as the full parser gives it (Clinger's
/// fast path). `None` for anything else (exponents, longer numbers).
#[inline]
fn short_decimal(digits: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let (mut n, mut point, mut count) = (0u64, None, 0usize);
    for (k, &d) in digits.iter().enumerate() {
        match d {
            b'0'..=b'9' => {
                n = n * 10 + u64::from(d - b'0');
                count += 1;
            }
            b'.' if point.is_none() && k > 0 && k + 1 < digits.len() => point = Some(k),
            _ => return None,
        }
    }
    if count > 15 {
        return None;
    }
    let places = point.map_or(0, |k| digits.len() - k - 1);
    Some(n as f64 / POW10[places])
}

/// Removes insignificant whitespace from a validated JSON text, keeping everything else
/// (number spelling, string escapes, key order) byte for byte.
pub fn minify(b: &[u8]) -> Cow<'_, [u8]> {
    if !b.iter().any(|&c| is_ws(c)) {
        return Cow::Borrowed(b);
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' {
            let end = scan_string(b, i).map(|(e, _)| e).unwrap_or(b.len());
            out.extend_from_slice(&b[i..end]);
            i = end;
        } else {
            if !is_ws(c) {
                out.push(c);
            }
            i += 1;
        }
    }
    Cow::Owned(out)
}

/// Appends `s` to `out` as a JSON string literal, escaped the way `JSON.stringify` does.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    loop {
        // The runs between characters that need an escape are copied whole.
        let i = find_string_special(bytes, start);
        out.extend_from_slice(&bytes[start..i]);
        let Some(&c) = bytes.get(i) else { break };
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            _ => b"",
        };
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(c >> 4)]);
            out.push(HEX[usize::from(c & 15)]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.push(b'"');
}

/// How deep [`to_value`] builds: the values it returns are walked by recursive code (their
/// drop among it), which must not run out of stack.
pub const MAX_VALUE_DEPTH: usize = 512;

/// Reads a JSON text as JavaScript's `JSON.parse` reads a decoded file: lone surrogate
/// escapes and bytes that are not UTF-8 become U+FFFD, a number too large for f64
/// (`1e999`, `Infinity` to JavaScript) becomes `null` (what `JSON.stringify` writes for
/// it), a repeated key keeps its last value. Fails on what is not JSON, and on nesting
/// deeper than [`MAX_VALUE_DEPTH`]. Nothing here recurses.
pub fn to_value(b: &[u8]) -> Result<serde_json::Value> {
    use serde_json::{Map, Value};
    enum Frame {
        Array(Vec<Value>),
        Object(Map<String, Value>, String),
    }
    let (start, end, depth) = validate(b)?;
    if depth > MAX_VALUE_DEPTH {
        return err(start, "no more than 512 levels of nesting");
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = start;
    loop {
        // A value starts at i.
        i = skip_ws(b, i);
        let mut value = match b.get(i) {
            Some(b'{') => {
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    i += 1;
                    Value::Object(Map::new())
                } else {
                    let (k, next) = read_key(b, i)?;
                    stack.push(Frame::Object(Map::new(), k));
                    i = next;
                    continue;
                }
            }
            Some(b'[') => {
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b']') {
                    i += 1;
                    Value::Array(Vec::new())
                } else {
                    stack.push(Frame::Array(Vec::new()));
                    continue;
                }
            }
            _ => {
                let (v, e) = scalar(b, i)?;
                i = e;
                v
            }
        };
        // A value ended at i: add it to its container, closing those that end here.
        loop {
            let Some(top) = stack.last_mut() else {
                return if skip_ws(b, i) == end || i == end {
                    Ok(value)
                } else {
                    err(i, "the end of the JSON value")
                };
            };
            match top {
                Frame::Array(a) => a.push(value),
                Frame::Object(m, k) => {
                    // A repeated key keeps its first place and takes the last value, as in
                    // JavaScript.
                    m.insert(std::mem::take(k), value);
                }
            }
            i = skip_ws(b, i);
            match (b.get(i), &mut *top) {
                (Some(b','), Frame::Array(_)) => {
                    i += 1;
                    break;
                }
                (Some(b','), Frame::Object(_, k)) => {
                    let (key, next) = read_key(b, skip_ws(b, i + 1))?;
                    *k = key;
                    i = next;
                    break;
                }
                (Some(b']'), Frame::Array(_)) | (Some(b'}'), Frame::Object(..)) => {
                    i += 1;
                    value = match stack.pop() {
                        Some(Frame::Array(a)) => Value::Array(a),
                        Some(Frame::Object(m, _)) => Value::Object(m),
                        None => return err(i, "a container"),
                    };
                }
                _ => return err(i, "',' or a closing bracket"),
            }
        }
    }
}

/// The string, number or literal at `b[i]` of a validated text, and where it ends.
fn scalar(b: &[u8], i: usize) -> Result<(serde_json::Value, usize)> {
    use serde_json::Value;
    Ok(match b.get(i) {
        Some(b'"') => {
            let (e, _) = scan_string(b, i)?;
            (Value::String(decode_str(&b[i + 1..e - 1]).into_owned()), e)
        }
        Some(b't') => (Value::Bool(true), i + 4),
        Some(b'f') => (Value::Bool(false), i + 5),
        Some(b'n') => (Value::Null, i + 4),
        Some(b'-' | b'0'..=b'9') => {
            let e = scan_number(b, i)?;
            (number_value(&b[i..e]), e)
        }
        _ => return err(i, "a JSON value"),
    })
}

/// The key whose quote is at `b[i]`, and where its value starts (after the colon).
fn read_key(b: &[u8], i: usize) -> Result<(String, usize)> {
    if b.get(i) != Some(&b'"') {
        return err(i, "'\"' to start an object key");
    }
    let (e, _) = scan_string(b, i)?;
    let key = decode_str(&b[i + 1..e - 1]).into_owned();
    let j = skip_ws(b, e);
    if b.get(j) != Some(&b':') {
        return err(j, "':' after the object key");
    }
    Ok((key, j + 1))
}

/// A validated number as JavaScript holds it: integers that fit stay integers, others are
/// f64, and what overflows f64 is `null`.
fn number_value(text: &[u8]) -> serde_json::Value {
    let s = std::str::from_utf8(text).unwrap_or("0");
    if !s.contains(['.', 'e', 'E']) {
        if let Ok(n) = s.parse::<i64>() {
            return n.into();
        }
        if let Ok(n) = s.parse::<u64>() {
            return n.into();
        }
    }
    s.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// One string token of a JSON text, as [`for_each_string`] reports it.
#[derive(Debug, Clone, Copy)]
pub struct StringToken<'a> {
    /// The span of the token, quotes included.
    pub start: usize,
    pub end: usize,
    /// Whether it is an object key.
    pub is_key: bool,
    /// For the value of an object member, its key (`None` for keys, array elements and a
    /// top-level string).
    pub member: Option<RawStr<'a>>,
    /// For the value of a member `data`, whether its object also has `"type": "image"`.
    pub image_data: bool,
}

/// Calls `f` for every string of a JSON text, keys included, in text order. The text is
/// validated first (with the allowances of this module); nothing here recurses.
pub fn for_each_string<'a>(b: &'a [u8], mut f: impl FnMut(StringToken<'a>)) -> Result<()> {
    // Each open container: where it starts, whether it is an object, its latest key.
    struct Open<'a> {
        start: usize,
        object: bool,
        key: Option<RawStr<'a>>,
    }
    let (start, end, _) = validate(b)?;
    let mut stack: Vec<Open<'a>> = Vec::new();
    let mut i = start;
    while i < end {
        match b[i] {
            b'"' => {
                let (e, _) = scan_string(b, i)?;
                let raw = RawStr::from_value(&b[i..e]);
                let j = skip_ws(b, e);
                let top = stack.last().filter(|o| o.object);
                let is_key = top.is_some() && b.get(j) == Some(&b':');
                let member = if is_key {
                    None
                } else {
                    top.and_then(|o| o.key)
                };
                // Only the object of a `data` string is looked at again (image blocks).
                let image_data = match (member, top) {
                    (Some(k), Some(o)) if k.eq_str("data") => {
                        let (oe, _) = scan_value(b, o.start)?;
                        get(&b[o.start..oe], "type").is_some_and(|t| t == b"\"image\"")
                    }
                    _ => false,
                };
                f(StringToken {
                    start: i,
                    end: e,
                    is_key,
                    member,
                    image_data,
                });
                if is_key && let Some(o) = stack.last_mut() {
                    o.key = raw;
                }
                i = e;
            }
            c @ (b'{' | b'[') => {
                stack.push(Open {
                    start: i,
                    object: c == b'{',
                    key: None,
                });
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Line (1-based) and column (1-based, in characters) of a byte offset in `text`.
pub fn line_col(text: &[u8], offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |p| p + 1);
    let col = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> bool {
        validate(s.as_bytes()).is_ok()
    }

    #[test]
    fn accepts_valid_json() {
        for s in [
            "{}",
            "[]",
            " {\"a\" : [1, -2.5e+3, true, false, null, \"x\\u00e9\\n\"]} ",
            "0",
            "-0.0e0",
            "\"\\ud800\"",
            "[[[[[]]]]]",
            "{\"a\":{\"b\":{\"c\":[{}]}}}",
        ] {
            assert!(ok(s), "{s}");
        }
    }

    #[test]
    fn rejects_invalid_json() {
        for s in [
            "",
            "{",
            "{\"a\"}",
            "{\"a\":}",
            "{a:1}",
            "[1,]",
            "[1 2]",
            "01",
            "1.",
            "-",
            "1e",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\tb\"",
            "tru",
            "{} {}",
            "{\"a\":1,}",
            "\"abc",
        ] {
            assert!(!ok(s), "{s:?}");
        }
    }

    #[test]
    fn error_offsets_point_at_the_problem() {
        let e = validate(b"{\"a\":1,}").unwrap_err();
        assert_eq!(e.offset, 7);
        assert_eq!(e.expected, "'\"' to start an object key");
        let e = validate(b"[1,2").unwrap_err();
        assert_eq!(e.offset, 4);
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let n = 200_000;
        let s = format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(validate(s.as_bytes()).unwrap().2, n);
        let s = format!("{}{}", "{\"a\":".repeat(n), "1".to_owned() + &"}".repeat(n));
        assert_eq!(validate(s.as_bytes()).unwrap().2, n);
    }

    #[test]
    fn decodes_strings() {
        assert_eq!(decode_str(br"a\nb\u00e9\ud83d\ude00"), "a\nbé😀");
        assert_eq!(decode_str(br"\ud83d"), "\u{fffd}");
        assert_eq!(decode_str(br"\ud83dx"), "\u{fffd}x");
        assert_eq!(decode_str(b"\xff"), "\u{fffd}");
    }

    #[test]
    fn members_and_get() {
        let v = br#"{"type":"message","id":"ab","n":{"x":[1,2]},"id":"cd"}"#;
        let m = members(v).unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(&v[m[2].value_start..m[2].value_end], br#"{"x":[1,2]}"#);
        assert_eq!(get(v, "id"), Some(&br#""cd""#[..]));
        assert_eq!(get_str(v, "type").unwrap(), "message");
    }

    #[test]
    fn minify_keeps_strings() {
        assert_eq!(
            &*minify(b" { \"a b\" : [ 1 , \"c d\" ] } "),
            br#"{"a b":[1,"c d"]}"#
        );
    }

    #[test]
    fn write_str_matches_json_stringify() {
        let mut out = Vec::new();
        write_str(&mut out, "a\"b\\c\n\u{1}é");
        assert_eq!(out, r#""a\"b\\c\n\u0001é""#.as_bytes());
    }

    proptest::proptest! {
        #[test]
        fn digit_runs_end_where_a_byte_loop_ends(
            text in proptest::collection::vec(
                proptest::sample::select(vec![b'0', b'5', b'9', b'/', b':', b'.', b'e', 0xb0, 0xb9, b' ']),
                0..40,
            ),
            from in 0usize..40,
        ) {
            let from = from.min(text.len());
            let mut want = from;
            while want < text.len() && text[want].is_ascii_digit() {
                want += 1;
            }
            proptest::prop_assert_eq!(digits_end(&text, from), want);
        }

        #[test]
        fn lone_backslashes_escape_as_the_full_resolution_says(
            backslashes in proptest::prelude::any::<u64>(),
            carry in 0u64..2,
            thin in proptest::prelude::any::<u64>(),
        ) {
            // Thinned out, most masks have no two backslashes side by side.
            let backslashes = backslashes & thin;
            proptest::prop_assert_eq!(
                escaped_after(backslashes, carry),
                escaped_bits(backslashes, carry)
            );
        }

        #[test]
        fn numbers_read_as_the_full_parser_reads_them(
            int in "-?(0|[1-9][0-9]{0,17})",
            frac in proptest::option::of("[0-9]{1,18}"),
            exp in proptest::option::of("[eE][+-]?[0-9]{1,3}"),
        ) {
            let text = format!(
                "{int}{}{}",
                frac.map(|f| format!(".{f}")).unwrap_or_default(),
                exp.unwrap_or_default()
            );
            let want: f64 = text.parse().unwrap();
            let got = number(text.as_bytes()).unwrap();
            // Bit for bit: the same double, the sign of a zero included.
            proptest::prop_assert_eq!(got.to_bits(), want.to_bits(), "{}", text);
        }
    }

    proptest::proptest! {
        #[test]
        fn write_str_writes_what_serde_json_writes(s in "(?s).{0,80}", pad in 0usize..20) {
            // Runs longer than the 8-byte steps, and every control character.
            let s = format!("{}{s}\u{1f}{}\u{7f}\u{8}\u{c}", "x".repeat(pad), "é".repeat(pad));
            let mut out = Vec::new();
            write_str(&mut out, &s);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&s).unwrap());
        }
    }

    /// A plain byte loop: where the string starting at `b[i]` ends, whether it has escapes.
    fn scan_str_reference(b: &[u8], i: usize) -> Option<(usize, bool)> {
        let mut j = i + 1;
        let mut escaped = false;
        loop {
            match *b.get(j)? {
                b'"' => return Some((j + 1, escaped)),
                b'\\' => {
                    escaped = true;
                    j += match *b.get(j + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                        b'u' if b.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                        _ => return None,
                    };
                }
                c if c < 0x20 => return None,
                _ => j += 1,
            }
        }
    }

    /// Bytes that make strings interesting: quotes, backslashes, escape letters, hex digits,
    /// control characters, non-ASCII; long runs so that 64-byte blocks are crossed.
    fn string_bytes() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            4 => proptest::collection::vec(b'a'..=b'z', 0..70),
            2 => Just(b"\\n".to_vec()),
            1 => Just(b"\\\\".to_vec()),
            1 => Just(b"\\\"".to_vec()),
            1 => Just(b"\\u00e9".to_vec()),
            1 => Just(b"\\u12".to_vec()),
            1 => Just(b"\\x".to_vec()),
            1 => Just(b"\\".to_vec()),
            1 => proptest::collection::vec(Just(b'\\'), 1..7),
            1 => Just(b"\\/".to_vec()),
            1 => Just(b"\\t".to_vec()),
            1 => Just(b"\\b".to_vec()),
            1 => Just(b"\\U".to_vec()),
            1 => Just(b"\"".to_vec()),
            1 => Just(vec![0x01]),
            1 => Just(b"\t".to_vec()),
            1 => Just("é".as_bytes().to_vec()),
            1 => Just(vec![0xff]),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    /// Which block scan [`scan_str_blocks`] uses on this thread.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(super) enum Width {
        Any,
        Narrow,
        Avx2,
    }

    thread_local! {
        pub(super) static WIDTH: std::cell::Cell<Width> = const { std::cell::Cell::new(Width::Any) };
    }

    /// The widths this CPU can run, the widest (what `Any` picks) first.
    fn widths() -> Vec<Width> {
        let mut w = vec![Width::Any];
        if std::arch::is_x86_feature_detected!("avx2") {
            w.push(Width::Avx2);
        }
        w.push(Width::Narrow);
        w
    }

    /// Which bytes of a block are escaped, one byte at a time.
    fn escaped_bits_reference(backslashes: u64, carry: u64) -> (u64, u64) {
        let mut escaped = 0u64;
        let mut pending = carry == 1;
        for k in 0..64 {
            if pending {
                escaped |= 1 << k;
                pending = false;
            } else if backslashes & (1 << k) != 0 {
                pending = true;
            }
        }
        (escaped, u64::from(pending))
    }

    #[test]
    fn escapes_across_block_ends_scan_alike_at_every_width() {
        // Every place a run of backslashes can end near a 64-byte block's end, whatever
        // the escape is; a proptest would rarely hit the exact byte.
        for prefix in 0..66 {
            for run in 1..5 {
                for at in 40..150 {
                    for next in [
                        &b"\"x\""[..],
                        b"nx\"",
                        b"u00e9\"",
                        b"u0\"",
                        b"q\"",
                        b"\x01\"",
                    ] {
                        let mut b = vec![b' '; prefix];
                        b.push(b'"');
                        b.extend(std::iter::repeat_n(b'a', at));
                        b.extend(std::iter::repeat_n(b'\\', run));
                        b.extend_from_slice(next);
                        b.extend(std::iter::repeat_n(b'z', 20));
                        let mut got = Vec::new();
                        for w in widths() {
                            WIDTH.set(w);
                            got.push(scan_str::<FULL>(&b, prefix));
                            WIDTH.set(Width::Any);
                        }
                        assert!(
                            got.windows(2).all(|p| p[0] == p[1]),
                            "{prefix} {run} {at}: {got:?}"
                        );
                        let want = scan_str_reference(&b, prefix);
                        assert_eq!(got[0].clone().ok(), want, "{prefix} {run} {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn numbers_read_as_the_float_parser_reads_them() {
        for n in [
            "0",
            "-0",
            "7",
            "-12",
            "123456789012345",
            "1234567890123456",
            "9007199254740993",
            "-999999999999999",
            "1.5",
            "1e3",
            "-0.0",
            "12345678901234567890",
            "007",
        ] {
            let want: Option<f64> = n.parse().ok();
            let got = number(n.as_bytes());
            assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{n}");
        }
    }

    proptest::proptest! {
        #[test]
        fn integers_read_as_the_float_parser_reads_them(n in proptest::prelude::any::<i64>(), digits in 1usize..18) {
            let s = n.to_string();
            let s = &s[..s.len().min(digits + usize::from(n < 0))];
            let want: Option<f64> = s.parse().ok();
            proptest::prop_assert_eq!(number(s.as_bytes()).map(f64::to_bits), want.map(f64::to_bits));
        }

        #[test]
        fn escaped_bits_match_a_byte_loop(
            backslashes in proptest::prelude::any::<u64>(),
            runs in proptest::prelude::any::<u64>(),
            carry in 0u64..2,
        ) {
            // Both random bits and long runs of backslashes.
            for bs in [backslashes, backslashes | runs, backslashes & runs, !0, !0 << 1, !0 >> 1] {
                let (got, got_carry) = escaped_bits(bs, carry);
                let (want, want_carry) = escaped_bits_reference(bs, carry);
                // Escaped backslashes are left out: they are always valid.
                proptest::prop_assert_eq!(got & !bs, want & !bs, "bs {:x} carry {}", bs, carry);
                proptest::prop_assert_eq!(got & 1, carry);
                proptest::prop_assert_eq!(got_carry, want_carry, "bs {:x} carry {}", bs, carry);
            }
        }

        #[test]
        fn every_block_width_scans_strings_alike(
            prefix in 0usize..70,
            body in string_bytes(),
            tail in 0usize..3,
        ) {
            // Whole results, errors included (offset and message), and with or without the
            // string closed within the last 64 bytes.
            let mut b = vec![b' '; prefix];
            b.push(b'"');
            b.extend_from_slice(&body);
            b.extend(std::iter::repeat_n(b'x', tail * 40));
            let run = |w: Width| {
                WIDTH.set(w);
                let got = (
                    scan_str::<FULL>(&b, prefix),
                    (!has_control(&b)).then(|| scan_str::<NO_CTRL>(&b, prefix)),
                );
                WIDTH.set(Width::Any);
                got
            };
            let narrow = run(Width::Narrow);
            for w in widths() {
                proptest::prop_assert_eq!(&run(w), &narrow, "{:?}", w);
            }
        }

        #[test]
        fn block_scanned_strings_end_where_a_byte_loop_ends(
            prefix in 0usize..70,
            body in string_bytes(),
        ) {
            let mut b = vec![b' '; prefix];
            b.push(b'"');
            b.extend_from_slice(&body);
            let want = scan_str_reference(&b, prefix);
            let got = scan_str::<FULL>(&b, prefix).ok();
            proptest::prop_assert_eq!(got, want);
            if memchr::memchr(b'\\', &body).is_none() && !has_control(&body) {
                proptest::prop_assert_eq!(scan_str::<NO_CTRL>(&b, prefix).ok(), want);
            }
            if let Some((end, _)) = want {
                proptest::prop_assert_eq!(
                    scan_str::<VALID>(&b, prefix).ok().map(|(e, _)| e),
                    Some(end)
                );
            }
        }

        #[test]
        fn accepts_what_serde_json_accepts(line in json_line()) {
            // serde_json rejects what the allowances let through: lone surrogate escapes
            // and invalid UTF-8 (which an edit that removes one byte of a character makes).
            proptest::prop_assume!(std::str::from_utf8(&line).is_ok());
            let ours = validate(&line).is_ok();
            let theirs = serde_json::from_slice::<serde_json::Value>(&line).is_ok();
            proptest::prop_assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(&line));
        }

        #[test]
        fn nested_members_change_nothing_else(line in json_line()) {
            let mut plain = Vec::new();
            let a = scan_object(&line, 0, |m| plain.push((m.key_start, m.value_end)));
            let mut top = Vec::new();
            let mut inner = Vec::new();
            let b = scan_object_nested(
                &line,
                0,
                "message",
                &[],
                |m| top.push((m.key_start, m.value_end)),
                &mut |at, m| inner.push((at, m.key_start, m.value_end)),
            );
            proptest::prop_assert_eq!(&a, &b);
            proptest::prop_assert_eq!(plain, top);
            if a.is_ok() && let Some(v) = get(&line, "message") && v[0] == b'{' {
                let at = line.len() - line[v.as_ptr() as usize - line.as_ptr() as usize..].len();
                let want: Vec<_> = members(v)
                    .unwrap()
                    .iter()
                    .map(|m| (at, m.key_start + at, m.value_end + at))
                    .collect();
                let last: Vec<_> = inner.iter().copied().filter(|(o, _, _)| *o == at).collect();
                proptest::prop_assert_eq!(last, want);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn deep_members_change_nothing_else(line in json_line()) {
            let deep = Deep { key: "message", list: "content", sub: "arguments" };
            let mut plain = Vec::new();
            let a = scan_object(&line, 0, |m| plain.push((m.key_start, m.value_end)));
            let mut top = Vec::new();
            let mut below = Vec::new();
            let b = scan_object_deep(
                &line,
                0,
                deep,
                |m| top.push((m.key_start, m.value_end)),
                &mut |d, at, m| below.push((d, at, m.key_start, m.value_end)),
            );
            // The same verdict, error offset and message, and top-level members.
            proptest::prop_assert_eq!(&a, &b);
            proptest::prop_assert_eq!(plain, top);
            if a.is_ok() && let Some(v) = get(&line, "message") && v[0] == b'{' {
                // What the pass found in the last `message` is what scanning it again finds.
                let at = v.as_ptr() as usize - line.as_ptr() as usize;
                let span = at..at + v.len();
                let mut again = Vec::new();
                let r = deep_members_valid(&line, at, deep, &mut |d, o, m| {
                    again.push((d, o, m.key_start, m.value_end))
                });
                proptest::prop_assert!(r.is_ok());
                let found: Vec<_> = below
                    .iter()
                    .copied()
                    .filter(|(d, o, _, _)| if *d == Depth::Inner { *o == at } else { span.contains(o) })
                    .collect();
                proptest::prop_assert_eq!(found, again);
            }
        }
    }

    #[test]
    fn deep_members_reach_blocks_and_arguments() {
        let line = br#"{"message":{"role":"assistant","content":[{"type":"text","text":"a"},7,{"type":"toolCall","name":"bash","arguments":{"command":"ls"}}]}}"#;
        let deep = Deep {
            key: "message",
            list: "content",
            sub: "arguments",
        };
        let mut got = Vec::new();
        scan_object_deep(line, 0, deep, |_| {}, &mut |d, at, m| {
            got.push((d, at, String::from_utf8_lossy(m.key.raw).into_owned()))
        })
        .unwrap();
        let keys: Vec<_> = got.iter().map(|(d, _, k)| (*d, k.as_str())).collect();
        assert_eq!(
            keys,
            [
                (Depth::Inner, "role"),
                (Depth::Element, "type"),
                (Depth::Element, "text"),
                (Depth::Element, "type"),
                (Depth::Element, "name"),
                (Depth::Sub, "command"),
                (Depth::Element, "arguments"),
                (Depth::Inner, "content"),
            ]
        );
        // Each member names the object that holds it.
        assert_eq!(&line[got[0].1..got[0].1 + 8], br#"{"role":"#);
        assert_eq!(&line[got[1].1..got[1].1 + 8], br#"{"type":"#);
        assert_eq!(&line[got[5].1..got[5].1 + 11], br#"{"command":"#);
    }

    /// Session-like lines and mutations of them: bytes dropped, doubled or replaced by
    /// JSON's special characters.
    fn json_line() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let base = prop_oneof![
            Just(r#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"hi\n there \"q\" \u00e9","timestamp":1761842798503}}"#.to_owned()),
            Just(r#"{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"a\\b"}],"usage":{"input":1,"cost":{"total":0.5e-3}},"model":"m"},"message":{"x":[1,-2.5E+3,true,false,{}]}}"#.to_owned()),
            Just(r#" {"a" : [ 1 , 2 ] , "message" : { "k" : "v" } } "#.to_owned()),
            Just(r#"{"type":"message","message":{"role":"assistant","content":[ {"type":"thinking","thinking":"hm\n"} , {"type":"toolCall","name":"edit","arguments":{"path":"a.rs","x":[{"y":1}]},"arguments":{"k":[]}},"s",[{"z":{}}] ],"content":[{"type":"text","text":"t"}]}}"#.to_owned()),
            string_bytes().prop_map(|b| format!(r#"{{"message":{{"text":"{}"}},"id":"x"}}"#, String::from_utf8_lossy(&b))),
        ];
        let edit = (
            0usize..400,
            prop_oneof![
                Just(None),
                Just(Some(b'"')),
                Just(Some(b'\\')),
                Just(Some(b'{')),
                Just(Some(b'}')),
                Just(Some(b',')),
                Just(Some(b':')),
                Just(Some(b'0')),
                Just(Some(b'.')),
                Just(Some(0x01u8)),
            ],
        );
        (base, proptest::collection::vec(edit, 0..3)).prop_map(|(line, edits)| {
            let mut b = line.into_bytes();
            for (at, c) in edits {
                if b.is_empty() {
                    break;
                }
                let at = at % b.len();
                match c {
                    None => {
                        b.remove(at);
                    }
                    Some(c) => b[at] = c,
                }
            }
            b
        })
    }

    #[test]
    fn line_col_counts_chars() {
        assert_eq!(line_col(b"ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é\nxé!".as_bytes(), 6), (2, 3));
    }
}

#[cfg(test)]
mod lenient_tests {
    use super::*;

    #[test]
    fn to_value_reads_what_json_parse_reads() {
        let v = to_value(br#"{"a":"x \ud83d y","b":1e999,"c":[1,-2,3.5,18446744073709551615],"a":"last","d":{"e":null,"f":true}}"#).unwrap();
        assert_eq!(v["a"], "last");
        assert_eq!(v.as_object().unwrap().keys().next().unwrap(), "a");
        assert!(v["b"].is_null());
        assert_eq!(
            v["c"],
            serde_json::json!([1, -2, 3.5, 18446744073709551615u64])
        );
        assert_eq!(v["d"]["f"], true);
        let v = to_value(b"{\"k\xff\":\"\xfe\"}").unwrap();
        assert_eq!(v["k\u{fffd}"], "\u{fffd}");
        assert_eq!(to_value(br#" "\ud800" "#).unwrap(), "\u{fffd}");
        assert!(to_value(b"{\"a\":}").is_err());
        assert!(to_value(b"[1] x").is_err());
        let deep = format!("{}{}", "[".repeat(600), "]".repeat(600));
        assert!(to_value(deep.as_bytes()).is_err());
        let ok = format!("{}{}", "[".repeat(500), "]".repeat(500));
        assert!(to_value(ok.as_bytes()).is_ok());
    }

    #[test]
    fn every_string_is_reported() {
        let text = br#"{"id":"x","m":{"content":[{"type":"image","data":"AAA"},{"data":"B"}],"k\ud800":"v"}}"#;
        let mut seen = Vec::new();
        for_each_string(text, |t| {
            seen.push((
                String::from_utf8_lossy(&text[t.start..t.end]).into_owned(),
                t.is_key,
                t.member.map(|k| k.decode().into_owned()),
                t.image_data,
            ));
        })
        .unwrap();
        let s = |x: &str| x.to_owned();
        assert_eq!(seen[0], (s("\"id\""), true, None, false));
        assert_eq!(seen[1], (s("\"x\""), false, Some(s("id")), false));
        assert!(seen.contains(&(s("\"AAA\""), false, Some(s("data")), true)));
        assert!(seen.contains(&(s("\"B\""), false, Some(s("data")), false)));
        assert!(seen.contains(&(s("\"k\\ud800\""), true, None, false)));
        assert_eq!(seen.len(), 12);
        assert!(for_each_string(b"{\"a\" 1}", |_| {}).is_err());
    }
}
