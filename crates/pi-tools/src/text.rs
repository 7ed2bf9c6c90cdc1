//! Bytes to text the way upstream's Node runtime decodes them: invalid UTF-8 becomes U+FFFD
//! (one per maximal invalid subsequence), also when the bytes arrive in pieces.

/// A streaming UTF-8 decoder: a sequence split between two chunks is completed by the next
/// one; [`Utf8Decoder::finish`] replaces a sequence left incomplete at the end.
#[derive(Debug, Default)]
pub(crate) struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    pub(crate) fn new() -> Utf8Decoder {
        Utf8Decoder::default()
    }

    /// Decodes `chunk`, appending the text to `out`.
    pub(crate) fn decode(&mut self, chunk: &[u8], out: &mut String) {
        if self.pending.is_empty() {
            let rest = decode_into(chunk, out);
            self.pending.extend_from_slice(rest);
        } else {
            let mut buf = std::mem::take(&mut self.pending);
            buf.extend_from_slice(chunk);
            let rest = decode_into(&buf, out);
            self.pending = rest.to_vec();
        }
    }

    /// Flushes an incomplete sequence as U+FFFD.
    pub(crate) fn finish(&mut self, out: &mut String) {
        if !self.pending.is_empty() {
            out.push_str(&String::from_utf8_lossy(&self.pending));
            self.pending.clear();
        }
    }
}

/// Decodes `bytes` into `out` and returns the incomplete sequence at the end (if any).
fn decode_into<'a>(mut bytes: &'a [u8], out: &mut String) -> &'a [u8] {
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return &[];
            }
            Err(e) => {
                let (good, bad) = bytes.split_at(e.valid_up_to());
                // `good` is valid UTF-8 by construction.
                out.push_str(&String::from_utf8_lossy(good));
                match e.error_len() {
                    Some(n) => {
                        out.push('\u{FFFD}');
                        bytes = &bad[n..];
                    }
                    None => return bad,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_sequences_are_joined() {
        let bytes = "aé😀b".as_bytes();
        for cut in 0..bytes.len() {
            let mut d = Utf8Decoder::new();
            let mut out = String::new();
            d.decode(&bytes[..cut], &mut out);
            d.decode(&bytes[cut..], &mut out);
            d.finish(&mut out);
            assert_eq!(out, "aé😀b", "cut at {cut}");
        }
    }

    #[test]
    fn invalid_bytes_are_replaced_like_whole_decoding() {
        let bytes = b"a\xff\xe2\x82b\xf0\x9f\x98";
        let whole = String::from_utf8_lossy(bytes).into_owned();
        let mut d = Utf8Decoder::new();
        let mut out = String::new();
        for b in bytes {
            d.decode(std::slice::from_ref(b), &mut out);
        }
        d.finish(&mut out);
        assert_eq!(out, whole);
        assert_eq!(String::from_utf8_lossy(bytes).len(), whole.len());
    }
}
