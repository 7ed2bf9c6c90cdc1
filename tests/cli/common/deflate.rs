//! Raw DEFLATE (RFC 1951) decoding of the generated golden inputs, which are stored
//! compressed.

use std::io::Read;

/// The decompressed bytes of a raw DEFLATE stream; panics on corrupt input.
pub fn inflate(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(data)
        .read_to_end(&mut out)
        .expect("deflate: corrupt input");
    out
}
