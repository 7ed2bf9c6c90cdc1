//! `edit {path, edits: [{oldText, newText}, …]}`: exact replacements in one file.
//!
//! Every `oldText` is looked up in the original text (line endings normalized to `\n`, a
//! byte-order mark set aside): exactly first, otherwise after a loose normalization (NFKC,
//! trailing spaces of lines dropped, typographic quotes, dashes and spaces made plain). When
//! any edit needs the loose form, all of them are applied to the loosely normalized text, as
//! upstream does. Each must occur once, none may overlap, and the result must differ from the
//! original; the file keeps its BOM and line endings.

use serde::Deserialize;
use serde_json::json;
use unicode_normalization::UnicodeNormalization;

use super::diff;
use super::path::{access, io_code, io_message, io_message_no_path, resolve_to_cwd};
use super::{ToolContext, ToolError, ToolOutput};
use pi_base::js;

#[derive(Debug, Clone, Deserialize)]
pub struct EditArgs {
    pub path: String,
    pub edits: Vec<Replacement>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Replacement {
    #[serde(rename = "oldText")]
    pub old_text: String,
    #[serde(rename = "newText")]
    pub new_text: String,
}

pub(crate) const EMPTY_EDITS: &str =
    "Edit tool input is invalid. edits must contain at least one replacement.";

/// Context lines around each change in the stored diff.
const DIFF_CONTEXT: usize = 4;

pub(crate) fn run(ctx: &ToolContext, args: &EditArgs) -> Result<ToolOutput, ToolError> {
    if args.edits.is_empty() {
        return Err(ToolError::new(EMPTY_EDITS));
    }
    let path = &args.path;
    let abs = resolve_to_cwd(path, &ctx.cwd);
    if let Err(e) = access(&abs, libc::R_OK | libc::W_OK) {
        let why = match io_code(&e) {
            Some(code) => format!("Error code: {code}"),
            None => e.to_string(),
        };
        return Err(ToolError(format!("Could not edit file: {path}. {why}.")));
    }
    if std::fs::metadata(&abs).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Err(ToolError(format!(
            "Could not edit file: {path}. It is not a regular file."
        )));
    }
    let bytes = std::fs::read(&abs).map_err(|e| ToolError(io_message_no_path(&e, "read")))?;
    let raw = String::from_utf8(bytes).map_err(|_| {
        ToolError(format!(
            "Could not edit file: {path}. It is not valid UTF-8 text, so it is left unchanged."
        ))
    })?;
    let (bom, content) = match raw.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", raw.as_str()),
    };
    let crlf = detect_crlf(content);
    let normalized = normalize_to_lf(content);
    let (base, new) = apply_edits(&normalized, &args.edits, path)?;
    let restored = if crlf {
        new.replace('\n', "\r\n")
    } else {
        new.clone()
    };
    std::fs::write(&abs, format!("{bom}{restored}"))
        .map_err(|e| ToolError(io_message(&e, "open", &abs)))?;
    let (diff, first) = diff::render(&base, &new, DIFF_CONTEXT);
    let mut details = json!({ "diff": diff });
    if let (Some(first), Some(m)) = (first, details.as_object_mut()) {
        m.insert("firstChangedLine".into(), json!(first));
    }
    Ok(ToolOutput {
        content: vec![super::Content::text(format!(
            "Successfully replaced {} block(s) in {path}.",
            args.edits.len()
        ))],
        details: Some(details),
    })
}

/// Whether the text's first line break is `\r\n`.
pub(crate) fn detect_crlf(content: &str) -> bool {
    match (content.find("\r\n"), content.find('\n')) {
        (Some(crlf), Some(lf)) => crlf < lf,
        _ => false,
    }
}

/// `\r\n` and lone `\r` become `\n`.
pub(crate) fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The loose form used when the exact text is not found.
pub(crate) fn normalize_for_fuzzy_match(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    let trimmed: Vec<&str> = nfkc
        .split('\n')
        .map(|l| l.trim_end_matches(js::is_space))
        .collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}'..='\u{201B}' => '\'',
            '\u{201C}'..='\u{201F}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            c => c,
        })
        .collect()
}

struct Found {
    index: usize,
    len: usize,
    fuzzy: bool,
}

fn fuzzy_find(content: &str, old: &str) -> Option<Found> {
    if let Some(index) = content.find(old) {
        return Some(Found {
            index,
            len: old.len(),
            fuzzy: false,
        });
    }
    let fc = normalize_for_fuzzy_match(content);
    let fo = normalize_for_fuzzy_match(old);
    fc.find(&fo).map(|index| Found {
        index,
        len: fo.len(),
        fuzzy: true,
    })
}

/// Occurrences of the loose form of `old` in the loose form of `content` (JavaScript's
/// `split(...).length - 1`).
fn count_occurrences(content: &str, old: &str) -> i64 {
    let fc = normalize_for_fuzzy_match(content);
    let fo = normalize_for_fuzzy_match(old);
    if fo.is_empty() {
        return js::utf16_len(&fc) as i64 - 1;
    }
    fc.matches(fo.as_str()).count() as i64
}

fn not_found(path: &str, i: usize, total: usize) -> ToolError {
    ToolError(if total == 1 {
        format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        )
    } else {
        format!(
            "Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines."
        )
    })
}

fn duplicate(path: &str, i: usize, total: usize, n: i64) -> ToolError {
    ToolError(if total == 1 {
        format!(
            "Found {n} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        )
    } else {
        format!(
            "Found {n} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
        )
    })
}

/// Applies the edits to LF-normalized `content`: `(base, new)` where `base` is the text the
/// edits were matched in (the loose form when any edit needed it).
pub(crate) fn apply_edits(
    content: &str,
    edits: &[Replacement],
    path: &str,
) -> Result<(String, String), ToolError> {
    let total = edits.len();
    let edits: Vec<(String, String)> = edits
        .iter()
        .map(|e| (normalize_to_lf(&e.old_text), normalize_to_lf(&e.new_text)))
        .collect();
    for (i, (old, _)) in edits.iter().enumerate() {
        if old.is_empty() {
            return Err(ToolError(if total == 1 {
                format!("oldText must not be empty in {path}.")
            } else {
                format!("edits[{i}].oldText must not be empty in {path}.")
            }));
        }
    }
    let any_fuzzy = edits
        .iter()
        .any(|(old, _)| fuzzy_find(content, old).is_some_and(|f| f.fuzzy));
    let base = if any_fuzzy {
        normalize_for_fuzzy_match(content)
    } else {
        content.to_owned()
    };
    let mut matched: Vec<(usize, usize, usize, &str)> = Vec::new(); // (edit, index, len, new)
    for (i, (old, new)) in edits.iter().enumerate() {
        let Some(found) = fuzzy_find(&base, old) else {
            return Err(not_found(path, i, total));
        };
        let n = count_occurrences(&base, old);
        if n > 1 {
            return Err(duplicate(path, i, total, n));
        }
        matched.push((i, found.index, found.len, new.as_str()));
    }
    matched.sort_by_key(|m| m.1);
    for w in matched.windows(2) {
        let (prev, cur) = (w[0], w[1]);
        if prev.1 + prev.2 > cur.1 {
            return Err(ToolError(format!(
                "edits[{}] and edits[{}] overlap in {path}. Merge them into one edit or target disjoint regions.",
                prev.0, cur.0
            )));
        }
    }
    let mut new = base.clone();
    for &(_, index, len, text) in matched.iter().rev() {
        new.replace_range(index..index + len, text);
    }
    if new == base {
        return Err(ToolError(if total == 1 {
            format!(
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            )
        } else {
            format!("No changes made to {path}. The replacements produced identical content.")
        }));
    }
    Ok((base, new))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(old: &str, new: &str) -> Replacement {
        Replacement {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn multi_edit_back_to_front() {
        let (_, new) = apply_edits("a b c", &[r("c", "C"), r("a", "AA")], "f").unwrap();
        assert_eq!(new, "AA b C");
    }

    #[test]
    fn overlap_names_edits_in_position_order() {
        let e = apply_edits("abcdef", &[r("cde", "x"), r("bc", "y")], "f").unwrap_err();
        assert_eq!(
            e.0,
            "edits[1] and edits[0] overlap in f. Merge them into one edit or target disjoint regions."
        );
    }

    #[test]
    fn fuzzy_forms() {
        assert_eq!(normalize_for_fuzzy_match("a  \n‘b’—\u{00A0}"), "a\n'b'-");
        assert_eq!(normalize_for_fuzzy_match("ＡＢＣ"), "ABC");
        assert!(detect_crlf("a\r\nb\n"));
        assert!(!detect_crlf("a\nb\r\n"));
        assert!(!detect_crlf("a"));
    }

    #[test]
    fn whitespace_only_old_text_counts_like_upstream() {
        // The loose form of "  " is empty: upstream counts every character boundary.
        let e = apply_edits("x  y", &[r("  ", "_")], "f").unwrap_err();
        assert!(e.0.starts_with("Found 3 occurrences"), "{}", e.0);
    }
}
