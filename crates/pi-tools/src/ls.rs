//! `ls {path?, limit?}`: the entries of one directory, dot-files included, directories with a
//! trailing `/`, in the order upstream shows them (lower-cased names compared the way a
//! Unicode collation does: punctuation before digits before letters, accents and width
//! differences only breaking ties).

use std::cmp::Ordering;

use serde::Deserialize;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::path::{self, io_message};
use super::{ToolContext, ToolError, ToolOutput};

pub(crate) const DEFAULT_LIMIT: usize = 500;

#[derive(Debug, Clone, Deserialize)]
pub struct LsArgs {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub limit: Option<f64>,
}

pub(crate) fn run(ctx: &ToolContext, args: &LsArgs) -> Result<ToolOutput, ToolError> {
    let dir = path::search_root(args.path.as_deref(), &ctx.cwd);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT as f64);
    if !path::metadata(&dir)?.is_dir() {
        return Err(ToolError(format!("Not a directory: {}", dir.display())));
    }
    let reader = std::fs::read_dir(&dir).map_err(|e| {
        ToolError(format!(
            "Cannot read directory: {}",
            io_message(&e, "scandir", &dir)
        ))
    })?;
    let mut names: Vec<String> = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|e| {
            ToolError(format!(
                "Cannot read directory: {}",
                io_message(&e, "scandir", &dir)
            ))
        })?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    let mut keyed: Vec<(String, String)> =
        names.into_iter().map(|n| (n.to_lowercase(), n)).collect();
    keyed.sort_by(|a, b| collate(&a.0, &b.0));

    let mut results: Vec<String> = Vec::new();
    let mut limit_reached = false;
    for (_, name) in keyed {
        if results.len() as f64 >= limit {
            limit_reached = true;
            break;
        }
        // Entries that cannot be stat-ed (broken links) are left out.
        let Ok(m) = std::fs::metadata(dir.join(&name)) else {
            continue;
        };
        results.push(if m.is_dir() { format!("{name}/") } else { name });
    }
    if results.is_empty() {
        return Ok(ToolOutput::text("(empty directory)"));
    }
    Ok(super::truncate::listing_output(
        &results,
        limit_reached.then_some(("entries", "", "entryLimitReached", limit)),
        Vec::new(),
    ))
}

/// Primary order of the ASCII characters in the root collation (lower case).
const ASCII_ORDER: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz";

/// One collation element: primary weight, accents on it, whether it came from a
/// compatibility form.
#[derive(Debug, PartialEq, Eq)]
struct Element {
    primary: u32,
    accents: Vec<char>,
    compat: bool,
}

fn primary(c: char) -> Option<u32> {
    if (c as u32) < 0x20 || c == '\u{7F}' {
        return None; // control characters are ignored
    }
    if c.is_ascii() {
        return ASCII_ORDER.find(c).map(|i| i as u32);
    }
    Some(0x1000 + c as u32)
}

fn elements(s: &str) -> Vec<Element> {
    let mut out: Vec<Element> = Vec::new();
    for c in s.chars() {
        let canonical: String = c.nfd().collect();
        let compat_form: String = c.nfkd().collect();
        let compat = canonical != compat_form;
        let expanded = if c == 'ß' {
            "ss".to_owned()
        } else {
            compat_form
        };
        for d in expanded.chars() {
            if is_combining_mark(d) {
                if let Some(last) = out.last_mut() {
                    last.accents.push(d);
                }
                continue;
            }
            if let Some(p) = primary(d) {
                out.push(Element {
                    primary: p,
                    accents: Vec::new(),
                    compat: compat || c == 'ß',
                });
            }
        }
    }
    out
}

/// Compares lower-cased names: primary letters first, then accents, then width/compatibility
/// forms, then code points.
pub(crate) fn collate(a: &str, b: &str) -> Ordering {
    let (ea, eb) = (elements(a), elements(b));
    let prim = |e: &[Element]| e.iter().map(|x| x.primary).collect::<Vec<_>>();
    prim(&ea)
        .cmp(&prim(&eb))
        .then_with(|| {
            let acc = |e: &[Element]| e.iter().map(|x| x.accents.clone()).collect::<Vec<_>>();
            acc(&ea).cmp(&acc(&eb))
        })
        .then_with(|| {
            let comp = |e: &[Element]| e.iter().map(|x| x.compat).collect::<Vec<_>>();
            comp(&ea).cmp(&comp(&eb))
        })
        .then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collation_matches_node_on_samples() {
        // Node 20: names.map(toLowerCase).sort(localeCompare)
        let mut names: Vec<String> = [
            "b", "a-b", "ab", "a_b", "a.b", "a b", "a1", "a10", "a2", "é", "e", "f", "ä", "z",
            "ａ", "_x", ".hidden", "-x", "~x", "a", "á",
        ]
        .iter()
        .map(|s| s.to_lowercase())
        .collect();
        names.sort_by(|a, b| collate(a, b));
        assert_eq!(
            names,
            vec![
                "_x", "-x", ".hidden", "~x", "a", "ａ", "á", "ä", "a b", "a_b", "a-b", "a.b", "a1",
                "a10", "a2", "ab", "b", "e", "é", "f", "z"
            ]
        );
    }
}
