//! HTTP plumbing every caller shares: the text of a client error with its causes, the
//! timeout of a call, and setting a header.

use std::time::Duration;

use crate::request::Options;

/// The text of an error and its sources (reqwest puts the useful part in the sources).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        let t = x.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = x.source();
    }
    s
}

/// The time allowed for the response headers, and between two chunks of the body.
pub(crate) fn timeout(opts: &Options) -> Duration {
    Duration::from_millis(opts.retry.timeout_ms.max(1))
}

/// Sets a header, replacing one of the same name (names compare case-insensitively).
pub(crate) fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: String) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    headers.push((name.to_owned(), value));
}
