//! Streaming the lines of a file for readers of many sessions: a block at a time, so memory
//! stays bounded by the block and the longest line, and optionally only the lines in which a
//! byte pattern occurs (the quick test that lets a search skip most of a file).

use std::fs::File;
use std::io::{self, Read};
use std::ops::ControlFlow;

const BLOCK: usize = 1 << 20;

/// The first read: small, so that a reader that stops early (a search with `-l`, a check for
/// a first message) copies little; later reads double up to [`BLOCK`].
const FIRST: usize = 64 << 10;

/// Calls `f` with every line of `file` (without its `\n`; a last line without one too), or,
/// with `only`, with every line in which `only` matches (each such line once). Stops when `f`
/// breaks.
pub(crate) fn each_line(
    mut file: &File,
    only: Option<&regex::bytes::Regex>,
    mut f: impl FnMut(&[u8]) -> ControlFlow<()>,
) -> io::Result<()> {
    let mut buf: Vec<u8> = vec![0; FIRST];
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0); // a line longer than the buffer
        }
        let n = match file.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let end = filled + n;
        let complete = if n == 0 {
            end // the last line, with or without its newline
        } else {
            match memchr::memrchr(b'\n', &buf[filled..end]) {
                Some(k) => filled + k + 1,
                None => {
                    filled = end;
                    continue;
                }
            }
        };
        if lines_in(&buf[..complete], only, &mut f).is_break() || n == 0 {
            return Ok(());
        }
        buf.copy_within(complete..end, 0);
        filled = end - complete;
        if buf.len() < BLOCK {
            buf.resize(buf.len() * 2, 0);
        }
    }
}

fn lines_in(
    block: &[u8],
    only: Option<&regex::bytes::Regex>,
    f: &mut impl FnMut(&[u8]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let line_at = |from: usize| {
        let end = memchr::memchr(b'\n', &block[from..]).map_or(block.len(), |k| from + k);
        (from, end)
    };
    let mut at = 0;
    while at < block.len() {
        let start = match only {
            None => at,
            Some(re) => match re.find_at(block, at) {
                Some(m) => memchr::memrchr(b'\n', &block[at..m.start()]).map_or(at, |k| at + k + 1),
                None => return ControlFlow::Continue(()),
            },
        };
        let (start, end) = line_at(start);
        f(&block[start..end])?;
        at = end + 1;
    }
    ControlFlow::Continue(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn collect(text: &[u8], only: Option<&str>) -> Vec<String> {
        let mut tmp = tempfile::tempfile().unwrap();
        tmp.write_all(text).unwrap();
        let mut f = tmp;
        std::io::Seek::rewind(&mut f).unwrap();
        let re = only.map(|p| regex::bytes::Regex::new(p).unwrap());
        let mut out = Vec::new();
        each_line(&f, re.as_ref(), |l| {
            out.push(String::from_utf8_lossy(l).into_owned());
            ControlFlow::Continue(())
        })
        .unwrap();
        out
    }

    #[test]
    fn every_line_or_the_matching_ones() {
        assert_eq!(collect(b"a\nbb\nc", None), ["a", "bb", "c"]);
        assert_eq!(collect(b"a\nbb\n", None), ["a", "bb"]);
        assert_eq!(collect(b"xa\nbb\naa a\n", Some("a")), ["xa", "aa a"]);
        let long = format!("{}\nz\n", "y".repeat(3 * BLOCK));
        assert_eq!(collect(long.as_bytes(), Some("z")), ["z"]);
    }
}
