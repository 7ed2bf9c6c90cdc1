//! Recognizing failures by their message, with the reference's patterns: a request too large
//! for the model's context window (`isContextOverflow`), and an error worth trying again
//! (the agent's retry rule).
//!
//! The patterns are upstream's case-insensitive regular expressions, matched against the
//! lower-cased message; as in JavaScript, `.` stops at `\r` and `\n` and digits are ASCII.

use std::sync::LazyLock;

use regex::Regex;

use crate::message::{AssistantMessage, LlmError, StopReason};

/// One regex matching any of `patterns` (CRLF mode, so `.` matches neither `\r` nor `\n`);
/// `None` only if a pattern is invalid, which a test rules out.
fn any_of(patterns: &[&str]) -> Option<Regex> {
    Regex::new(&format!("(?R){}", patterns.join("|"))).ok()
}

fn matches(re: &LazyLock<Option<Regex>>, text: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(text))
}

const OVERFLOW: &[&str] = &[
    "prompt is too long",
    "request_too_large",
    "input is too long for requested model",
    "exceeds the context window",
    "input token count.*exceeds the maximum",
    "maximum prompt length is [0-9]+",
    "reduce the length of the messages",
    "maximum context length is [0-9]+ tokens",
    "exceeds the limit of [0-9]+",
    "exceeds the available context size",
    "greater than the context length",
    "context window exceeds limit",
    "exceeded model token limit",
    "too large for model with [0-9]+ maximum context length",
    "model_context_window_exceeded",
    "prompt too long; exceeded (?:max )?context length",
    "too many tokens",
    "token limit exceeded",
    "context[_ ]length[_ ]exceeded",
    // Cerebras: 400/413 without a body.
    r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
];

const NOT_OVERFLOW: &[&str] = &[
    "^throttling error:",
    "^service unavailable:",
    "rate limit",
    "too many requests",
];

static OVERFLOW_RE: LazyLock<Option<Regex>> = LazyLock::new(|| any_of(OVERFLOW));
static NOT_OVERFLOW_RE: LazyLock<Option<Regex>> = LazyLock::new(|| any_of(NOT_OVERFLOW));

/// Whether an error message says the request did not fit the context window.
pub fn is_overflow_message(message: &str) -> bool {
    let m = message.to_lowercase();
    !matches(&NOT_OVERFLOW_RE, &m) && matches(&OVERFLOW_RE, &m)
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

const RETRYABLE: &[&str] = &[
    "overloaded",
    "provider.?returned.?error",
    "rate.?limit",
    "too many requests",
    "429",
    "500",
    "502",
    "503",
    "504",
    "service.?unavailable",
    "server.?error",
    "internal.?error",
    "network.?error",
    "connection.?error",
    "connection.?refused",
    "connection.?lost",
    "websocket.?closed",
    "websocket.?error",
    "other side closed",
    "fetch failed",
    "upstream.?connect",
    "reset before headers",
    "socket hang up",
    "ended without",
    "http2 request did not get a response",
    "timed? out",
    "timeout",
    "terminated",
    "retry delay",
];

static RETRYABLE_RE: LazyLock<Option<Regex>> = LazyLock::new(|| any_of(RETRYABLE));

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
    matches(&RETRYABLE_RE, &e.to_lowercase())
}

impl LlmError {
    /// The provider refused the request as larger than the model's context window.
    pub fn is_overflow(&self) -> bool {
        is_overflow_message(&self.message)
    }
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
    fn patterns_compile_and_keep_js_semantics() {
        for re in [&OVERFLOW_RE, &NOT_OVERFLOW_RE, &RETRYABLE_RE] {
            assert!(re.is_some());
        }
        // `.` stops at line breaks, `\d` is ASCII, `\s` any white space, matching anywhere.
        assert!(is_overflow_message(
            "Input token count 5 > 4; exceeds the maximum"
        ));
        assert!(!is_overflow_message(
            "input token count 5\rexceeds the maximum"
        ));
        assert!(!is_overflow_message(
            "input token count 5\nexceeds the maximum"
        ));
        assert!(!is_overflow_message("maximum prompt length is \u{663}"));
        assert!(is_overflow_message("413\u{a0}\t(no body)"));
        assert!(!is_overflow_message("error 413 (no body)"));
        // The throttling exception holds only at the start.
        assert!(is_overflow_message("x: throttling error: too many tokens"));
        assert!(is_retryable(&err("Provider returned error"), 0));
        assert!(is_retryable(&err("provider_returned-error"), 0));
        assert!(!is_retryable(&err("provider\rreturned error"), 0));
        assert!(is_retryable(&err("time out"), 0));
        assert!(!is_retryable(&err("timedd out"), 0));
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
