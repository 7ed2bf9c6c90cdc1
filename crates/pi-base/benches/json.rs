//! Why pi has its own JSON scanner, and whether its wide vector paths pay: session lines
//! validated and split into their members by `pi_base::json::scan_object` at each vector
//! width, against serde_json doing less (validation only) and the same (borrowed members) and
//! more (a `Value` tree).
//!
//! ```sh
//! cargo bench -p pi-base --bench json            # 64 MB of generated session lines
//! cargo bench -p pi-base --bench json -- 256     # another size, in MB
//! ```
//!
//! The lines are generated here, seeded, with the mix of a coding session: short user
//! prompts, assistant messages with thinking, text and tool calls, and long tool results
//! (source and logs: newlines, tabs, quotes, non-ASCII text). Each figure is the best of 7
//! passes over all lines, in MB/s of line bytes.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use serde_json::json;
use serde_json::value::RawValue;

/// A small seeded generator (xorshift64*), so that every run measures the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "the",
    "session",
    "file",
    "let",
    "fn",
    "parse",
    "entry",
    "=>",
    "{",
    "}",
    "Result<(),",
    "Error>",
    "cargo",
    "test",
    "\"quoted\"",
    "path/to/src/main.rs",
    "0x1f",
    "über",
    "→",
    "warning:",
    "unused",
    "variable",
    "self.index",
    "return",
    "Ok(())",
    "if",
    "else",
    "42",
    "tool",
    "call",
    "\\n",
    "assert_eq!(a,",
    "b);",
    "café",
    "日本語",
    "#[derive(Debug)]",
];

/// `lines` lines of about `width` characters, words from [`WORDS`], some indented by tabs.
fn text(rng: &mut Rng, lines: usize, width: usize) -> String {
    let mut out = String::new();
    for _ in 0..lines {
        if rng.below(4) == 0 {
            out.push('\t');
        }
        let start = out.len();
        while out.len() - start < width {
            out.push_str(WORDS[rng.below(WORDS.len())]);
            out.push(' ');
        }
        out.push('\n');
    }
    out
}

fn entry(rng: &mut Rng, i: usize) -> serde_json::Value {
    let id = format!("{:08x}", rng.next() as u32);
    let parent = format!("{:08x}", rng.next() as u32);
    let time = format!(
        "2026-01-02T03:{:02}:{:02}.{:03}Z",
        i / 60 % 60,
        i % 60,
        i % 1000
    );
    let message = match rng.below(20) {
        0..=2 => {
            let width = 20 + rng.below(280);
            json!({"role": "user", "content": text(rng, 1, width), "timestamp": i})
        }
        3..=11 => {
            let lines = 1 + rng.below(12);
            let thinking_lines = 1 + rng.below(6);
            json!({
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": text(rng, thinking_lines, 80), "thinkingSignature": "EqQBCkYIBxgC"},
                    {"type": "text", "text": text(rng, lines, 70)},
                    {"type": "toolCall", "id": format!("call_{i}"), "name": "bash", "arguments": {"command": text(rng, 1, 40), "timeout": 60}},
                ],
                "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                "usage": {"input": 1200 + i, "output": 300, "cacheRead": 9000, "cacheWrite": 0, "totalTokens": 10500 + i,
                          "cost": {"input": 0.0036, "output": 0.0045, "cacheRead": 0.0027, "cacheWrite": 0.0, "total": 0.0108}},
                "stopReason": "toolUse", "timestamp": i,
            })
        }
        _ => {
            let (lines, width) = (4 + rng.below(60), 60 + rng.below(40));
            json!({
                "role": "toolResult", "toolCallId": format!("call_{i}"), "toolName": "bash",
                "content": [{"type": "text", "text": text(rng, lines, width)}],
                "isError": false, "timestamp": i,
            })
        }
    };
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": time, "message": message})
}

/// Session lines of about `mb` megabytes in all.
fn lines(mb: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    let mut total = 0;
    while total < mb << 20 {
        let line = serde_json::to_vec(&entry(&mut rng, out.len())).unwrap_or_default();
        total += line.len();
        out.push(line);
    }
    out
}

/// The best of 7 passes of `f` over `lines`, in MB/s; `f` returns a count that must agree
/// between passes.
fn measure(lines: &[Vec<u8>], f: impl Fn(&[u8]) -> usize) -> (f64, usize) {
    let bytes: usize = lines.iter().map(Vec::len).sum();
    let mut best = f64::MAX;
    let mut count = 0;
    for _ in 0..7 {
        let t = Instant::now();
        count = lines.iter().map(|l| f(black_box(l))).sum();
        best = best.min(t.elapsed().as_secs_f64());
    }
    (bytes as f64 / (1 << 20) as f64 / best, count)
}

fn pi_members(line: &[u8]) -> usize {
    let mut n = 0;
    match pi_base::json::scan_object(line, 0, |_| n += 1) {
        Ok(_) => n,
        Err(_) => 0,
    }
}

fn main() {
    let mb = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(64);
    let lines = lines(mb);
    let bytes: usize = lines.iter().map(Vec::len).sum();
    println!(
        "{} lines, {:.1} MB, {:.0} bytes a line",
        lines.len(),
        bytes as f64 / (1 << 20) as f64,
        bytes as f64 / lines.len() as f64
    );
    println!("| what | MB/s | vs serde_json validating |");
    println!("|---|---:|---:|");
    let (base, _) = measure(&lines, |l| {
        usize::from(serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok())
    });
    let row = |what: &str, speed: f64| println!("| {what} | {speed:.0} | {:.2}x |", speed / base);
    let mut widths = vec![(128, "SSE2 (x86-64 baseline)")];
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            widths.push((256, "AVX2"));
        }
    }
    let mut members = None;
    for (bits, name) in widths {
        pi_base::json::limit_vector_width(bits);
        let (speed, n) = measure(&lines, pi_members);
        assert!(members.is_none_or(|m| m == n), "the widths disagree");
        members = Some(n);
        row(
            &format!("pi scan_object, members as byte spans, {name}"),
            speed,
        );
    }
    row("serde_json, validation only (IgnoredAny)", base);
    let (speed, n) = measure(&lines, |l| {
        serde_json::from_slice::<BTreeMap<&str, &RawValue>>(l).map_or(0, |m| m.len())
    });
    assert_eq!(Some(n), members, "serde_json finds other members");
    row(
        "serde_json, members borrowed (BTreeMap<&str, &RawValue>)",
        speed,
    );
    let (speed, _) = measure(&lines, |l| {
        serde_json::from_slice::<serde_json::Value>(l)
            .map_or(0, |v| v.as_object().map_or(0, |o| o.len()))
    });
    row("serde_json, a Value tree", speed);
}
