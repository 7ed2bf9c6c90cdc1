//! Taking secrets out of a session before it is shared: the keys pi knows (auth.json,
//! models.json, the environment), common token shapes, `NAME=value` assignments of
//! secret-looking names, and the user's own patterns. Every secret becomes `[redacted]`;
//! what was found is counted by kind.
//!
//! Redaction works on the strings of an entry (JSON values), so a redacted session file is
//! still valid JSON with the same structure. The fields that make the tree (ids, parents,
//! types, timestamps) and image data are left alone, so the file stays a valid session.

use std::collections::BTreeMap;
use std::path::Path;

use pi_base::json;
use regex::Regex;
use serde_json::Value;

/// What replaces a secret.
pub const MARK: &str = "[redacted]";

/// Keys whose string values are never redacted: they hold the structure of the session,
/// not content.
const STRUCTURAL: [&str; 15] = [
    "type",
    "id",
    "parentId",
    "timestamp",
    "targetId",
    "firstKeptEntryId",
    "fromId",
    "toolCallId",
    "role",
    "api",
    "provider",
    "model",
    "modelId",
    "stopReason",
    "mimeType",
];

#[derive(Clone)]
struct Pattern {
    kind: &'static str,
    re: Regex,
    /// The capture group that holds the secret (0: the whole match).
    group: usize,
}

/// A configured redaction: known secrets and patterns, and the counts of what it replaced.
pub struct Redactor {
    secrets: Vec<String>,
    patterns: Vec<Pattern>,
    counts: BTreeMap<&'static str, usize>,
}

/// An invalid `--redact-pattern`.
#[derive(Debug, thiserror::Error)]
#[error("invalid redaction pattern {pattern:?}")]
pub struct PatternError {
    pub pattern: String,
    #[source]
    pub source: regex::Error,
}

/// The token shapes found without being told: (kind, regex, group).
const BUILT_IN: [(&str, &str, usize); 10] = [
    (
        "private-key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        0,
    ),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{16,}", 0),
    ("openai-key", r"\bsk-[A-Za-z0-9_\-]{20,}", 0),
    (
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        0,
    ),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", 0),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", 0),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        0,
    ),
    (
        "authorization-header",
        r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest)\s+)?([^\s"',;]+)"#,
        1,
    ),
    // `NAME=value` as in a shell or an .env file: no spaces around `=` (code such as
    // `key === null` or `const tokens = 5` is not an assignment of a secret).
    (
        "secret-assignment",
        r#"(?i)(?:^|[\s;'"(]|\\n)[A-Za-z_][A-Za-z0-9_]*(?:key|secret|token|passw(?:or)?d)[A-Za-z0-9_]*=(?:"([^"\s]{4,})"|'([^'\s]{4,})'|([^\s"'`;,)]{4,}))"#,
        0,
    ),
    (
        "secret-assignment",
        r#"(?i)"[A-Za-z0-9_.\-]*(?:apikey|api_key|secret|token|passw(?:or)?d)[A-Za-z0-9_]*"\s*:\s*"([^"\\\s]{8,})""#,
        1,
    ),
];

/// Whether an assigned value could be a secret: not a number, a boolean or a variable
/// reference.
fn looks_secret(v: &str) -> bool {
    !(v.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || matches!(
            v.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "none" | "undefined" | "changeme" | "xxxx" | "****"
        )
        || v.starts_with('$')
        || v.starts_with("[redacted"))
}

impl Redactor {
    /// A redactor for `secrets` (known values) and the user's `patterns` (regexes).
    pub fn new(secrets: Vec<String>, patterns: &[String]) -> Result<Redactor, PatternError> {
        let mut ps = Vec::new();
        for p in patterns {
            let re = Regex::new(p).map_err(|source| PatternError {
                pattern: p.clone(),
                source,
            })?;
            ps.push(Pattern {
                kind: "pattern",
                re,
                group: 0,
            });
        }
        for (kind, re, group) in BUILT_IN {
            // The built-in patterns are constants; one that failed to compile would be a bug,
            // and is left out rather than stopping the export.
            if let Ok(re) = Regex::new(re) {
                ps.push(Pattern { kind, re, group });
            }
        }
        let mut secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= 6).collect();
        secrets.sort();
        secrets.dedup();
        Ok(Redactor {
            secrets,
            patterns: ps,
            counts: BTreeMap::new(),
        })
    }

    /// Redacts one text.
    pub fn text(&mut self, text: &str) -> String {
        let mut out = text.to_owned();
        if !self.secrets.is_empty() {
            let before = out.matches(MARK).count();
            let cut = pi_ai::auth::redact(&out, &self.secrets);
            let n = cut.matches(MARK).count().saturating_sub(before);
            if n > 0 {
                *self.counts.entry("known-key").or_default() += n;
                out = cut;
            }
        }
        for p in &self.patterns {
            if !p.re.is_match(&out) {
                continue;
            }
            let mut result = String::with_capacity(out.len());
            let mut at = 0;
            let mut n = 0;
            for caps in p.re.captures_iter(&out) {
                // Group 0 means: the first group that matched, else the whole match.
                let m = if p.group == 0 {
                    (1..caps.len())
                        .find_map(|g| caps.get(g))
                        .or_else(|| caps.get(0))
                } else {
                    caps.get(p.group)
                };
                let Some(m) = m else {
                    continue;
                };
                if matches!(p.kind, "secret-assignment" | "authorization-header")
                    && !looks_secret(m.as_str())
                {
                    continue;
                }
                if m.as_str() == MARK || m.as_str().is_empty() || m.start() < at {
                    continue;
                }
                result.push_str(&out[at..m.start()]);
                result.push_str(MARK);
                at = m.end();
                n += 1;
            }
            if n > 0 {
                result.push_str(&out[at..]);
                out = result;
                *self.counts.entry(p.kind).or_default() += n;
            }
        }
        out
    }

    /// Redacts every string of a JSON value in place, except structural fields and image
    /// data; returns whether anything was replaced.
    pub fn value(&mut self, v: &mut Value) -> bool {
        match v {
            Value::String(s) => {
                let r = self.text(s);
                if r != *s {
                    *s = r;
                    return true;
                }
                false
            }
            Value::Array(a) => {
                let mut changed = false;
                for x in a {
                    changed |= self.value(x);
                }
                changed
            }
            Value::Object(o) => {
                let image = o.get("type").and_then(Value::as_str) == Some("image");
                let mut changed = false;
                for (k, x) in o.iter_mut() {
                    if STRUCTURAL.contains(&k.as_str()) && x.is_string() {
                        continue;
                    }
                    if image && k == "data" {
                        continue;
                    }
                    changed |= self.value(x);
                }
                // Keys are text too.
                let keys: Vec<String> = o.keys().map(|k| self.text(k)).collect();
                if o.keys().zip(&keys).any(|(a, b)| a != b) {
                    let old = std::mem::take(o);
                    for (k, (_, x)) in keys.into_iter().zip(old) {
                        o.insert(k, x);
                    }
                    changed = true;
                }
                changed
            }
            _ => false,
        }
    }

    /// A redactor with the same secrets and patterns and no counts (for another thread).
    pub fn fresh(&self) -> Redactor {
        Redactor {
            secrets: self.secrets.clone(),
            patterns: self.patterns.clone(),
            counts: BTreeMap::new(),
        }
    }

    /// Adds the counts of a [`Redactor::fresh`] copy.
    pub fn merge(&mut self, other: Redactor) {
        for (k, n) in other.counts {
            *self.counts.entry(k).or_default() += n;
        }
    }

    /// `3 secrets redacted: 1 github-token, 2 known-key`, or `nothing redacted`.
    pub fn report(&self) -> String {
        let total: usize = self.counts.values().sum();
        if total == 0 {
            return "redacted nothing".to_owned();
        }
        let kinds: Vec<String> = self
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        format!(
            "redacted {total} secret{}: {}",
            if total == 1 { "" } else { "s" },
            kinds.join(", ")
        )
    }
}

/// A line that `--redact` could not read: it is never passed through unread.
#[derive(Debug, thiserror::Error)]
#[error("cannot redact line {line}: {reason} at column {column}")]
pub struct UnreadableLine {
    /// 1-based line of the file.
    pub line: usize,
    pub column: usize,
    pub reason: String,
}

/// Redacts one JSON line: every string and every key whose text holds a secret is written
/// again with the secret replaced; all other bytes (numbers, escapes, key order, strings
/// with nothing to redact) are kept as they are. Structural values and image data are left
/// alone. Works on the bytes, so lone surrogates, huge numbers or deep nesting elsewhere in
/// the line change nothing; `Err` only for a line that is not JSON.
pub fn redact_line(line: &[u8], r: &mut Redactor) -> Result<Option<Vec<u8>>, json::SyntaxError> {
    let mut edits: Vec<(usize, usize, Vec<u8>)> = Vec::new();
    json::for_each_string(line, |t| {
        if t.image_data
            || t.member
                .is_some_and(|k| STRUCTURAL.iter().any(|s| k.eq_str(s)))
        {
            return;
        }
        let Some(raw) = json::RawStr::from_value(&line[t.start..t.end]) else {
            return;
        };
        let text = raw.decode();
        let red = r.text(&text);
        if red != text {
            let mut enc = Vec::with_capacity(red.len() + 2);
            json::write_str(&mut enc, &red);
            edits.push((t.start, t.end, enc));
        }
    })?;
    if edits.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(line.len());
    let mut at = 0;
    for (start, end, enc) in edits {
        out.extend_from_slice(&line[at..start]);
        out.extend_from_slice(&enc);
        at = end;
    }
    out.extend_from_slice(&line[at..]);
    Ok(Some(out))
}

/// Redacts JSON lines, each `(line number, bytes)` (see [`redact_line`]; a line with
/// nothing to redact is kept byte for byte), on every core; returns them joined, each with
/// its newline. The first line that cannot be read is an error, and nothing is returned.
pub fn redact_lines(
    lines: Vec<(usize, Vec<u8>)>,
    r: &mut Redactor,
) -> Result<Vec<u8>, UnreadableLine> {
    let parts = par_parts(lines, r, |part, red| {
        let mut out = Vec::new();
        for (n, line) in part {
            if line.iter().all(|&c| json::is_ws(c)) {
                out.extend_from_slice(&line);
                out.push(b'\n');
                continue;
            }
            match redact_line(&line, red) {
                Ok(done) => out.extend_from_slice(done.as_deref().unwrap_or(&line)),
                Err(e) => {
                    let (_, column) = json::line_col(&line, e.offset);
                    return Err(UnreadableLine {
                        line: n,
                        column,
                        reason: e.to_string(),
                    });
                }
            }
            out.push(b'\n');
        }
        Ok(out)
    });
    let mut all = Vec::new();
    for p in parts {
        all.extend_from_slice(&p?);
    }
    Ok(all)
}

/// Runs `f` over `items` on every core, cut into a part a thread, each part with a
/// [`Redactor::fresh`] copy of `r` whose counts are then merged into `r`; the results of
/// the parts in order.
pub(super) fn par_parts<T: Send, R: Send>(
    items: Vec<T>,
    r: &mut Redactor,
    f: impl Fn(Vec<T>, &mut Redactor) -> R + Sync,
) -> Vec<R> {
    let threads = super::threads();
    let done = pi_base::par::map(pi_base::par::split(items, threads), threads, |part| {
        let mut red = r.fresh();
        let out = f(part, &mut red);
        (out, red)
    });
    done.into_iter()
        .map(|(out, red)| {
            r.merge(red);
            out
        })
        .collect()
}

/// The secrets pi knows: keys and tokens in `auth.json`, `apiKey` and header values of
/// `models.json` (and the environment variables they name), and the values of environment
/// variables whose names look secret (KEY, SECRET, TOKEN, PASSWORD) or that hold a
/// provider's key. `!command` values are not run.
pub fn known_secrets(agent_dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let configured = |v: &str, out: &mut Vec<String>| {
        if v.starts_with('!') {
            return;
        }
        if let Some(e) = env(v) {
            out.push(e);
        }
        out.push(v.to_owned());
    };
    let read = |name: &str| -> Option<Value> {
        let text = std::fs::read_to_string(agent_dir.join(name)).ok()?;
        serde_json::from_str(&text).ok()
    };
    if let Some(Value::Object(auth)) = read("auth.json") {
        for cred in auth.values() {
            for k in ["key", "access", "refresh"] {
                if let Some(v) = cred.get(k).and_then(Value::as_str) {
                    configured(v, &mut out);
                }
            }
        }
    }
    if let Some(models) = read("models.json")
        && let Some(Value::Object(providers)) = models.get("providers")
    {
        for p in providers.values() {
            if let Some(k) = p.get("apiKey").and_then(Value::as_str) {
                configured(k, &mut out);
            }
            let mut headers: Vec<&Value> = p.get("headers").into_iter().collect();
            if let Some(Value::Array(ms)) = p.get("models") {
                headers.extend(ms.iter().filter_map(|m| m.get("headers")));
            }
            for h in headers {
                if let Value::Object(h) = h {
                    for v in h.values().filter_map(Value::as_str) {
                        configured(v, &mut out);
                    }
                }
            }
        }
    }
    for (name, value) in std::env::vars() {
        let upper = name.to_ascii_uppercase();
        let secret_name = ["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD"]
            .iter()
            .any(|w| upper.contains(w));
        if secret_name && value.len() >= 8 {
            out.push(value);
        }
    }
    // Words, paths and numbers are not secrets, even when configured as one.
    out.retain(|s| s.len() >= 8 && !s.contains(char::is_whitespace));
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_found_and_counted() {
        let mut r =
            Redactor::new(vec!["my-own-secret-1234".into()], &["acct-[0-9]+".into()]).unwrap();
        let t = r.text(
            "key sk-ant-api03-abcdefghijklmnopqrstuv and sk-proj-abcdefghijklmnopqrstuvwx, \
             ghp_abcdefghijklmnopqrstuvwxyz0123456789 xoxb-1234567890-abcdef AKIAABCDEFGHIJKLMNOP \
             eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U \
             my-own-secret-1234 acct-42",
        );
        assert!(!t.contains("sk-"), "{t}");
        assert!(
            !t.contains("ghp_") && !t.contains("xoxb") && !t.contains("AKIA") && !t.contains("eyJ"),
            "{t}"
        );
        assert!(!t.contains("my-own") && !t.contains("acct-42"), "{t}");
        let c = &r.counts;
        assert_eq!(c["anthropic-key"], 1);
        assert_eq!(c["openai-key"], 1);
        assert_eq!(c["known-key"], 1);
        assert_eq!(c["pattern"], 1);
        let t = r.text("export OPENAI_API_KEY=abc123def\nAuthorization: Bearer tok_9f8e7d6c\nmax_tokens: 100 and DB_PASSWORD='hunter22'");
        assert_eq!(
            t,
            "export OPENAI_API_KEY=[redacted]\nAuthorization: Bearer [redacted]\nmax_tokens: 100 and DB_PASSWORD='[redacted]'"
        );
        // Code is not an assignment of a secret.
        let code = "if (key === null) {}\nconst tokens = 5;\nMAX_TOKENS=4096 KEY=$KEY token=true";
        assert_eq!(r.text(code), code);
        let t = r.text(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nafter",
        );
        assert_eq!(t, "[redacted]\nafter");
        assert!(r.report().starts_with("redacted "));
    }

    #[test]
    fn structure_is_kept() {
        let mut r = Redactor::new(vec![], &["[0-9a-f]{8}".into()]).unwrap();
        let mut v: Value = serde_json::from_str(
            r#"{"type":"message","id":"deadbeef","parentId":"cafebabe","message":{"role":"user","content":[{"type":"text","text":"see deadbeef"},{"type":"image","data":"aaaaaaaa","mimeType":"image/png"}]}}"#,
        )
        .unwrap();
        r.value(&mut v);
        assert_eq!(v["id"], "deadbeef");
        assert_eq!(v["parentId"], "cafebabe");
        assert_eq!(v["message"]["content"][0]["text"], "see [redacted]");
        assert_eq!(v["message"]["content"][1]["data"], "aaaaaaaa");
        assert!(Redactor::new(vec![], &["(".into()]).is_err());
    }

    #[test]
    fn lines_are_redacted_byte_for_byte_or_refused() {
        let mut r = Redactor::new(vec![], &[]).unwrap();
        let lines = vec![
            (1, br#"{"type":"session","id":"x"}"#.to_vec()),
            (
                2,
                br#"{"a":"ghp_abcdefghijklmnopqrstuvwxyz0123","n":1e999,"k\ud800":[1.50]}"#
                    .to_vec(),
            ),
        ];
        let out = redact_lines(lines, &mut r).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"session\",\"id\":\"x\"}\n{\"a\":\"[redacted]\",\"n\":1e999,\"k\\ud800\":[1.50]}\n"
        );
        let bad = vec![(1, b"{}".to_vec()), (7, b"{\"a\":\"ghp_x\" 1}".to_vec())];
        let e = redact_lines(bad, &mut r).unwrap_err();
        assert_eq!(e.line, 7);
        assert_eq!(
            e.to_string(),
            "cannot redact line 7: expected ',' or '}' at column 14"
        );
    }
}
