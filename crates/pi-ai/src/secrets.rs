//! Secrets at the lowest level: the `auth.json` file as stored, configured values that name
//! a command (`!cmd`) or an environment variable, and cutting secrets out of any text that
//! leaves the process ([`redact`]).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Why a `!command` value gave no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("cannot run the command: {0}")]
    Run(String),
    #[error("the command took more than 10 seconds")]
    Timeout,
    #[error("the command failed ({0})")]
    Failed(String),
    #[error("the command printed nothing")]
    Empty,
    /// `$NAME` names variables that are not set (or empty).
    #[error("environment variable {0} is not set")]
    MissingEnv(String),
}

/// A piece of a configured value that is not a command.
#[derive(Debug, PartialEq)]
enum Part {
    Literal(String),
    Env(String),
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits a value into literal text and `$NAME` / `${NAME}` references, as the reference
/// 1.6 reads it: `$$` is a `$` and `$!` a `!`; a `$` that starts no reference is itself.
fn template(config: &str) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    let mut lit = String::new();
    let mut rest = config;
    while let Some(i) = rest.find('$') {
        lit.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let mut chars = after.chars();
        match chars.next() {
            Some(c @ ('$' | '!')) => {
                lit.push(c);
                rest = &after[1..];
            }
            Some('{') => match after.find('}') {
                Some(end) => {
                    let name = &after[1..end];
                    let valid = name.starts_with(is_name_start) && name.chars().all(is_name);
                    if valid {
                        if !lit.is_empty() {
                            parts.push(Part::Literal(std::mem::take(&mut lit)));
                        }
                        parts.push(Part::Env(name.to_owned()));
                    } else {
                        lit.push('$');
                        lit.push_str(&after[..=end]);
                    }
                    rest = &after[end + 1..];
                }
                None => {
                    lit.push('$');
                    rest = after;
                }
            },
            Some(c) if is_name_start(c) => {
                let end = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
                if !lit.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut lit)));
                }
                parts.push(Part::Env(after[..end].to_owned()));
                rest = &after[end..];
            }
            _ => {
                lit.push('$');
                rest = after;
            }
        }
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        parts.push(Part::Literal(lit));
    }
    parts
}

/// The variables a value names that are not set (none for a command).
fn missing_env(config: &str) -> Vec<String> {
    if config.starts_with('!') {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for p in template(config) {
        if let Part::Env(n) = p
            && env(&n).is_none()
            && !out.contains(&n)
        {
            out.push(n);
        }
    }
    out
}

/// Whether a configured value can give a value without running anything: a command, or
/// text whose `$NAME` references are all set (the reference's "configured" check).
pub(crate) fn is_configured(config: &str) -> bool {
    missing_env(config).is_empty()
}

/// Resolves a configured value as the reference 1.6 does: `!command` is the command's
/// output (trimmed); any other text is literal except for `$NAME` / `${NAME}`, the
/// environment variable's value (`$$` and `$!` give `$` and `!`). A command that fails or
/// prints nothing, or a variable that is not set, gives `Err`.
pub(crate) fn resolve_value(config: &str) -> Result<String, CommandError> {
    if let Some(cmd) = config.strip_prefix('!') {
        return run_command(cmd);
    }
    let missing = missing_env(config);
    if !missing.is_empty() {
        return Err(CommandError::MissingEnv(missing.join(", ")));
    }
    Ok(template(config)
        .into_iter()
        .map(|p| match p {
            Part::Literal(s) => s,
            Part::Env(n) => env(&n).unwrap_or_default(),
        })
        .collect())
}

fn run_command(cmd: &str) -> Result<String, CommandError> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| CommandError::Run(e.to_string()))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CommandError::Timeout);
            }
            Err(e) => return Err(CommandError::Run(e.to_string())),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| CommandError::Run(e.to_string()))?;
    if !out.status.success() {
        return Err(CommandError::Failed(out.status.to_string()));
    }
    let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if v.is_empty() {
        return Err(CommandError::Empty);
    }
    Ok(v)
}

/// `<agent dir>/auth.json`, or nothing when it is missing or unreadable.
pub(crate) fn auth_file(agent_dir: &Path) -> serde_json::Map<String, Value> {
    std::fs::read(agent_dir.join("auth.json"))
        .ok()
        .and_then(|t| serde_json::from_slice::<Value>(&t).ok())
        .and_then(|v| match v {
            Value::Object(o) => Some(o),
            _ => None,
        })
        .unwrap_or_default()
}

/// The shortest piece of a secret that is cut out on its own: a text holding the first 12
/// characters of a key (a truncated key in an error message) gives the key away.
pub(crate) const REDACT_PREFIX: usize = 12;

/// Cuts secrets (keys, header values) out of a text: each as it is, JSON-escaped or
/// percent-encoded (as a URL or a form carries it), in any mix of upper and lower case, and
/// any piece of 12 or more characters that starts it. Values shorter than 6 characters are
/// left alone (they are not secrets: `none`, `x`, `local`).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for s in secrets.iter().filter(|s| s.chars().count() >= 6) {
        for form in forms(s) {
            find_prefixes(text.as_bytes(), form.as_bytes(), &mut ranges);
        }
    }
    if ranges.is_empty() {
        return text.to_owned();
    }
    ranges.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in ranges {
        if end <= at {
            continue;
        }
        if start >= at {
            out.push_str(&text[at..start]);
            out.push_str("[redacted]");
        }
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The ways a secret may be written in a text.
fn forms(s: &str) -> Vec<String> {
    let mut out = vec![s.to_owned()];
    if let Ok(q) = serde_json::to_string(s) {
        let json = q[1..q.len() - 1].to_owned();
        // Escapes some writers add: `\\/`, and every non-ASCII character as `\\uXXXX`.
        let mut ascii = String::new();
        for c in json.chars() {
            if c.is_ascii() {
                ascii.push(c);
            } else {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    ascii.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
        for j in [json, ascii] {
            out.push(j.replace('/', "\\/"));
            out.push(j);
        }
    }
    let url = percent_encode(s);
    out.push(url.replace("%20", "+"));
    out.push(url);
    out.sort();
    out.dedup();
    out
}

/// Adds to `out` every place where `text` holds `form` (ASCII letters in any case), or a
/// piece of it at least [`REDACT_PREFIX`] characters long that starts it.
fn find_prefixes(text: &[u8], form: &[u8], out: &mut Vec<(usize, usize)>) {
    let Some(&first) = form.first() else {
        return;
    };
    // The shortest piece that counts, in bytes, at a character boundary of `form`.
    let boundary =
        |n: usize| (n..=form.len()).find(|&k| k == form.len() || (form[k] & 0xC0) != 0x80);
    let min = match form.iter().filter(|b| (**b & 0xC0) != 0x80).count() {
        n if n > REDACT_PREFIX => {
            let nth = form
                .iter()
                .enumerate()
                .filter(|(_, b)| (**b & 0xC0) != 0x80)
                .nth(REDACT_PREFIX)
                .map_or(form.len(), |(i, _)| i);
            boundary(nth).unwrap_or(form.len())
        }
        _ => form.len(),
    };
    let mut i = 0;
    while i < text.len() {
        if !text[i].eq_ignore_ascii_case(&first) {
            i += 1;
            continue;
        }
        let mut n = text[i..]
            .iter()
            .zip(form)
            .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
            .count();
        // Only whole characters of the form (and so of the text).
        while n > 0 && n < form.len() && (form[n] & 0xC0) == 0x80 {
            n -= 1;
        }
        if n >= min {
            out.push((i, i + n));
            i += n;
        } else {
            i += 1;
        }
    }
}

fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_literal_but_for_dollar_references() {
        use Part::*;
        let l = |s: &str| Literal(s.to_owned());
        let e = |s: &str| Env(s.to_owned());
        assert_eq!(template("sk-plain"), vec![l("sk-plain")]);
        assert_eq!(template("MY_KEY"), vec![l("MY_KEY")]);
        assert_eq!(template("$MY_KEY"), vec![e("MY_KEY")]);
        assert_eq!(
            template("Bearer ${TOK}-x$A1/b"),
            vec![l("Bearer "), e("TOK"), l("-x"), e("A1"), l("/b")]
        );
        assert_eq!(
            template("a$$b$!c$1${9x}${open"),
            vec![l("a$b!c$1${9x}${open")]
        );
        let home = std::env::var("PATH").unwrap();
        assert_eq!(resolve_value("p=$PATH").unwrap(), format!("p={home}"));
        assert_eq!(
            resolve_value("$PI_TEST_SURELY_UNSET_1 $PI_TEST_SURELY_UNSET_2"),
            Err(CommandError::MissingEnv(
                "PI_TEST_SURELY_UNSET_1, PI_TEST_SURELY_UNSET_2".into()
            ))
        );
        assert!(!is_configured("$PI_TEST_SURELY_UNSET_1"));
        assert!(is_configured("!false") && is_configured("lit"));
    }

    #[test]
    fn redaction() {
        let secrets = vec![
            "sk-secret-123".to_owned(),
            "x".to_owned(),
            "a b/c=d".to_owned(),
        ];
        assert_eq!(
            redact(
                "401 bad key sk-secret-123 at http://h/?k=a%20b%2Fc%3Dd",
                &secrets
            ),
            "401 bad key [redacted] at http://h/?k=[redacted]"
        );
        assert_eq!(redact("x marks", &secrets), "x marks");
    }

    #[test]
    fn redaction_catches_variants() {
        let key = "sk-Proj-9f8e7d6c5b4a3210".to_owned();
        let s = std::slice::from_ref(&key);
        assert_eq!(redact("k=SK-PROJ-9F8E7D6C5B4A3210!", s), "k=[redacted]!");
        assert_eq!(redact("k=sk-proj-9f8e7d6c5b4a3210", s), "k=[redacted]");
        // A prefix of 12 characters or more, as error messages show keys.
        assert_eq!(
            redact("Incorrect API key provided: sk-Proj-9f8e****3210.", s),
            "Incorrect API key provided: [redacted]****3210."
        );
        assert_eq!(redact("sk-Proj-9f8e", s), "[redacted]");
        assert_eq!(redact("sk-Proj-9f8", s), "sk-Proj-9f8");
        // Escaped forms.
        let odd = "p@ss/wörd \"quoted\" 123".to_owned();
        let s = std::slice::from_ref(&odd);
        let json = serde_json::to_string(&odd).unwrap();
        assert_eq!(redact(&format!("body {json}"), s), "body \"[redacted]\"");
        assert_eq!(
            redact(r#"{"k":"p@ss\/w\u00f6rd \"quoted\" 123"}"#, s),
            r#"{"k":"[redacted]"}"#
        );
        assert_eq!(
            redact("?k=p%40ss%2Fw%C3%B6rd+%22quoted%22+123&x", s),
            "?k=[redacted]&x"
        );
        assert_eq!(
            redact("?k=p%40ss%2fw%c3%b6rd%20%22quoted%22%20123", s),
            "?k=[redacted]"
        );
        // Overlapping finds make one cut.
        let two = vec!["abcdefghijklmnop".to_owned(), "ghijklmnopqrstuv".to_owned()];
        assert_eq!(redact("xabcdefghijklmnopqrstuvx", &two), "x[redacted]x");
    }

    #[test]
    fn config_values() {
        assert_eq!(resolve_value("!printf ' k1 '").unwrap(), "k1");
        assert!(resolve_value("!exit 3").is_err());
        assert_eq!(
            resolve_value("LITERAL_VALUE_NOT_AN_ENV_VAR").unwrap(),
            "LITERAL_VALUE_NOT_AN_ENV_VAR"
        );
        // A bare name is literal (the reference 1.6); `$PATH` reads the variable.
        assert_eq!(resolve_value("PATH").unwrap(), "PATH");
        assert_eq!(
            resolve_value("$PATH").unwrap(),
            std::env::var("PATH").unwrap()
        );
    }
}
