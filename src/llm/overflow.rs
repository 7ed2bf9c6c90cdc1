//! Recognizing failures by their message, with the reference's patterns: a request too large
//! for the model's context window (`isContextOverflow`), and an error worth trying again
//! (the agent's retry rule).
//!
//! The patterns are case-insensitive regular expressions upstream; the few constructs they
//! use are written here as sequences of [`Part`]s and matched by a small backtracking
//! matcher, so no regex engine is needed.

use super::message::{AssistantMessage, StopReason};

#[derive(Debug, Clone, Copy)]
enum Part {
    /// Literal text (lower case).
    L(&'static str),
    /// `\d+`
    Digits,
    /// `.*` (no line breaks)
    Any,
    /// `.?`
    AnyOne,
    /// `\s*`
    Space,
    /// `(?:…)?`
    Opt(&'static str),
    /// `^`: the match must start at the beginning.
    Start,
}

use Part::*;

/// Whether `pat` matches somewhere in `text` (already lower case).
fn find(pat: &[Part], text: &str) -> bool {
    if matches!(pat.first(), Some(Start)) {
        return at(&pat[1..], text);
    }
    text.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .any(|i| at(pat, &text[i..]))
}

/// Whether `pat` matches a prefix of `s`.
fn at(pat: &[Part], s: &str) -> bool {
    let Some((first, rest)) = pat.split_first() else {
        return true;
    };
    match first {
        Start => at(rest, s),
        L(l) => s.strip_prefix(l).is_some_and(|t| at(rest, t)),
        Opt(l) => s.strip_prefix(l).is_some_and(|t| at(rest, t)) || at(rest, s),
        Digits => {
            let n = s.bytes().take_while(u8::is_ascii_digit).count();
            (1..=n).rev().any(|k| at(rest, &s[k..]))
        }
        Space => {
            let ends: Vec<usize> = std::iter::once(0)
                .chain(
                    s.char_indices()
                        .take_while(|(_, c)| c.is_whitespace())
                        .map(|(i, c)| i + c.len_utf8()),
                )
                .collect();
            ends.iter().rev().any(|&k| at(rest, &s[k..]))
        }
        AnyOne => {
            at(rest, s)
                || s.chars()
                    .next()
                    .is_some_and(|c| c != '\n' && c != '\r' && at(rest, &s[c.len_utf8()..]))
        }
        Any => {
            let mut ends = vec![0];
            for (i, c) in s.char_indices() {
                if c == '\n' || c == '\r' {
                    break;
                }
                ends.push(i + c.len_utf8());
            }
            ends.iter().rev().any(|&k| at(rest, &s[k..]))
        }
    }
}

const OVERFLOW: &[&[Part]] = &[
    &[L("prompt is too long")],
    &[L("request_too_large")],
    &[L("input is too long for requested model")],
    &[L("exceeds the context window")],
    &[L("input token count"), Any, L("exceeds the maximum")],
    &[L("maximum prompt length is "), Digits],
    &[L("reduce the length of the messages")],
    &[L("maximum context length is "), Digits, L(" tokens")],
    &[L("exceeds the limit of "), Digits],
    &[L("exceeds the available context size")],
    &[L("greater than the context length")],
    &[L("context window exceeds limit")],
    &[L("exceeded model token limit")],
    &[
        L("too large for model with "),
        Digits,
        L(" maximum context length"),
    ],
    &[L("model_context_window_exceeded")],
    &[
        L("prompt too long; exceeded "),
        Opt("max "),
        L("context length"),
    ],
    &[L("too many tokens")],
    &[L("token limit exceeded")],
];

/// `context[_ ]length[_ ]exceeded`
const CONTEXT_LENGTH_EXCEEDED: [&str; 4] = [
    "context_length_exceeded",
    "context length exceeded",
    "context_length exceeded",
    "context length_exceeded",
];

const NOT_OVERFLOW: &[&[Part]] = &[
    &[Start, L("throttling error:")],
    &[Start, L("service unavailable:")],
    &[L("rate limit")],
    &[L("too many requests")],
];

/// Whether an error message says the request did not fit the context window.
pub fn is_overflow_message(message: &str) -> bool {
    let m = message.to_lowercase();
    if NOT_OVERFLOW.iter().any(|p| find(p, &m)) {
        return false;
    }
    OVERFLOW.iter().any(|p| find(p, &m))
        || CONTEXT_LENGTH_EXCEEDED.iter().any(|l| m.contains(l))
        // `^4(?:00|13)\s*(?:status code)?\s*\(no body\)`: Cerebras.
        || ["400", "413"].iter().any(|code| {
            m.strip_prefix(code).is_some_and(|rest| {
                at(&[Space, Opt("status code"), Space, L("(no body)")], rest)
            })
        })
}

/// Upstream's `isContextOverflow(message, contextWindow)`: an error with an overflow
/// message, or a provider that accepted too much input silently (`stop` with more input
/// than the window, or `length` with no output and a full window).
pub fn is_context_overflow(msg: &AssistantMessage, context_window: u64) -> bool {
    if msg.stop_reason == StopReason::Error
        && let Some(e) = msg.error_message.as_deref()
        && !e.is_empty()
        && is_overflow_message(e)
    {
        return true;
    }
    let input = msg.usage.input + msg.usage.cache_read;
    if context_window > 0 && msg.stop_reason == StopReason::Stop && input > context_window {
        return true;
    }
    context_window > 0
        && msg.stop_reason == StopReason::Length
        && msg.usage.output == 0
        && input as f64 >= context_window as f64 * 0.99
}

const RETRYABLE: &[&[Part]] = &[
    &[L("overloaded")],
    &[L("provider"), AnyOne, L("returned"), AnyOne, L("error")],
    &[L("rate"), AnyOne, L("limit")],
    &[L("too many requests")],
    &[L("429")],
    &[L("500")],
    &[L("502")],
    &[L("503")],
    &[L("504")],
    &[L("service"), AnyOne, L("unavailable")],
    &[L("server"), AnyOne, L("error")],
    &[L("internal"), AnyOne, L("error")],
    &[L("network"), AnyOne, L("error")],
    &[L("connection"), AnyOne, L("error")],
    &[L("connection"), AnyOne, L("refused")],
    &[L("connection"), AnyOne, L("lost")],
    &[L("websocket"), AnyOne, L("closed")],
    &[L("websocket"), AnyOne, L("error")],
    &[L("other side closed")],
    &[L("fetch failed")],
    &[L("upstream"), AnyOne, L("connect")],
    &[L("reset before headers")],
    &[L("socket hang up")],
    &[L("ended without")],
    &[L("http2 request did not get a response")],
    &[L("time"), Opt("d"), L(" out")],
    &[L("timeout")],
    &[L("terminated")],
    &[L("retry delay")],
];

/// The agent's rule for trying a failed turn again: an error message that looks transient
/// (overload, rate limit, 5xx, network) and is not a context overflow.
pub fn is_retryable(msg: &AssistantMessage, context_window: u64) -> bool {
    if msg.stop_reason != StopReason::Error {
        return false;
    }
    let Some(e) = msg.error_message.as_deref().filter(|e| !e.is_empty()) else {
        return false;
    };
    if is_context_overflow(msg, context_window) {
        return false;
    }
    let m = e.to_lowercase();
    RETRYABLE.iter().any(|p| find(p, &m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(m: &str) -> AssistantMessage {
        let mut a = AssistantMessage::new("x", "p", "m", 0);
        a.stop_reason = StopReason::Error;
        a.error_message = Some(m.to_owned());
        a
    }

    #[test]
    fn overflow_messages_co_e7() {
        for yes in [
            "prompt is too long: 213462 tokens > 200000 maximum",
            "400 status code (no body)",
            "413 (no body)",
            "413 status code (no body)",
            "Your input exceeds the context window of this model",
            "This model's maximum context length is 128000 tokens",
            "Request too large: too many tokens",
            "413 {\"error\":{\"type\":\"request_too_large\",\"message\":\"Request exceeds the maximum size\"}}",
            "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
            "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
            "Please reduce the length of the messages or completion",
            "prompt token count of 9 exceeds the limit of 8",
            "the request exceeds the available context size, try increasing it",
            "tokens to keep from the initial prompt is greater than the context length",
            "invalid params, context window exceeds limit",
            "Your request exceeded model token limit: 5 (requested: 6)",
            "Prompt contains 9 tokens ... too large for model with 8 maximum context length",
            "model_context_window_exceeded",
            "prompt too long; exceeded max context length by 5 tokens",
            "prompt too long; exceeded context length by 5 tokens",
            "error: context_length_exceeded",
            "Context length exceeded",
            "token limit exceeded",
            "400 {\"error\":{\"code\":400,\"message\":\"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it\",\"type\":\"exceed_context_size_error\"}}",
        ] {
            assert!(is_context_overflow(&err(yes), 0), "{yes}");
        }
        for no in [
            "429 status code (no body)",
            "529 overloaded_error",
            "Throttling error: Too many tokens, please wait",
            "rate limit: too many tokens",
            "500 internal error",
            "4000 (no body)",
            "maximum context length is many tokens",
        ] {
            assert!(!is_context_overflow(&err(no), 0), "{no}");
        }
    }

    #[test]
    fn silent_overflow() {
        let mut a = AssistantMessage::new("x", "p", "m", 0);
        a.usage.input = 150_000;
        a.usage.cache_read = 60_000;
        assert!(is_context_overflow(&a, 200_000));
        assert!(!is_context_overflow(&a, 0));
        a.usage.cache_read = 50_000;
        assert!(!is_context_overflow(&a, 200_000));
        a.stop_reason = StopReason::Length;
        a.usage.input = 198_000;
        a.usage.cache_read = 0;
        assert!(is_context_overflow(&a, 200_000));
        a.usage.output = 1;
        assert!(!is_context_overflow(&a, 200_000));
    }

    #[test]
    fn retryable_errors() {
        for yes in [
            "529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}",
            "Connection error.",
            "Request timed out.",
            "stream ended without message_stop",
            "terminated",
            "503 Service Unavailable",
        ] {
            assert!(is_retryable(&err(yes), 0), "{yes}");
        }
        for no in [
            "prompt is too long: 5 > 4",
            "401 invalid x-api-key",
            "400 bad request",
        ] {
            assert!(!is_retryable(&err(no), 0), "{no}");
        }
    }
}
