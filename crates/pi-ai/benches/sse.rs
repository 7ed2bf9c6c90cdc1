//! Why pi reads server-sent events with its own parser: the same generated answer streams
//! read by `pi_ai`'s parser and by the `eventsource-stream` crate (the one the crate review
//! names as the alternative), fed in chunks as a response arrives.
//!
//! ```sh
//! cargo bench -p pi-ai --bench sse
//! ```
//!
//! The stream is an Anthropic Messages answer of text deltas of 2 to 40 characters (the way
//! models stream), 16 MB in all. Each figure is the best of 7 passes, in MB/s.

use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use eventsource_stream::Eventsource;
use futures_util::Stream;

/// A seeded stream body of about `mb` megabytes.
fn body(mb: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let words = [
        "the ", "session ", "file", "\\n", "parse", "d ", "entry", "—", "über ", "`fn`",
    ];
    let mut out = b"event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n".to_vec();
    while out.len() < mb << 20 {
        let mut text = String::new();
        while text.len() < 2 + (next() % 38) as usize {
            text.push_str(words[(next() % words.len() as u64) as usize]);
        }
        out.extend_from_slice(b"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"");
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(b"\"}}\r\n\r\n");
        if next() % 50 == 0 {
            out.extend_from_slice(b": ping\r\n\r\n");
        }
    }
    out.extend_from_slice(b"event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n");
    out
}

/// `eventsource-stream` over the same chunks, polled to the end (every chunk is ready).
fn crate_sse(body: &[u8], chunk: usize) -> (usize, usize) {
    let chunks = futures_util::stream::iter(
        body.chunks(chunk)
            .map(|c| Ok::<_, std::convert::Infallible>(c.to_vec())),
    );
    let mut events = pin!(chunks.eventsource());
    let mut cx = Context::from_waker(Waker::noop());
    let (mut n, mut data) = (0, 0);
    loop {
        match events.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(Ok(ev))) => {
                n += 1;
                data += ev.data.len();
            }
            Poll::Ready(Some(Err(e))) => panic!("eventsource-stream: {e}"),
            Poll::Ready(None) | Poll::Pending => break,
        }
    }
    (n, data)
}

/// The best of 7 runs of `f`, in MB/s of `body`.
fn measure(body: &[u8], f: impl Fn(&[u8]) -> (usize, usize)) -> (f64, (usize, usize)) {
    let mut best = f64::MAX;
    let mut got = (0, 0);
    for _ in 0..7 {
        let t = Instant::now();
        got = f(black_box(body));
        best = best.min(t.elapsed().as_secs_f64());
    }
    (body.len() as f64 / (1 << 20) as f64 / best, got)
}

fn main() {
    let body = body(16);
    println!("| chunk | pi_ai MB/s | eventsource-stream MB/s | pi_ai is |");
    println!("|---:|---:|---:|---:|");
    // A TCP read, a TLS record, and a whole buffer.
    for chunk in [1460, 16 << 10, 256 << 10] {
        let (ours, a) = measure(&body, |b| pi_ai::bench::sse(b, chunk));
        let (theirs, b) = measure(&body, |b| crate_sse(b, chunk));
        assert_eq!(a, b, "the parsers disagree");
        println!(
            "| {chunk} | {ours:.0} | {theirs:.0} | {:.1}x faster |",
            ours / theirs
        );
    }
}
