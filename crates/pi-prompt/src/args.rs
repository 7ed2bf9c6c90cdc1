//! Template arguments: splitting the text after `/name` into words, and substituting `$1`,
//! `${1:-default}`, `${@:N}`, `${@:N:L}`, `$@`, `$ARGUMENTS`, `${@:-default}` and
//! `${ARGUMENTS:-default}` in a template, by the rules of the reference 1.6.

use pi_base::js;

/// Splits an argument string into words by the reference 1.6's rules:
///
/// - every JavaScript whitespace character separates words (space, tab, newlines, NBSP, the
///   em space and the other Unicode spaces, U+FEFF), but not U+0085, U+180E or U+200B;
/// - `"` or `'` opens a quote only at the start of a word, so the apostrophe in `doesn't` is
///   text; inside a quote, a backslash before that quote character gives the character, and
///   every other backslash is kept as typed (also outside quotes);
/// - text right after a closing quote continues the word (`"a"b` is `ab`), and `""` or `''`
///   is an empty argument;
/// - a quote that is never closed is text: the words are read again from just after it.
///
/// The second value is a warning when a quote was left open.
pub fn split_args(s: &str) -> (Vec<String>, Option<String>) {
    let chars: Vec<char> = s.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    // A word has started (so an empty quoted word counts).
    let mut started = false;
    let mut quote: Option<(char, usize)> = None;
    let mut unclosed = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some((q, _)) = quote {
            if c == '\\' && chars.get(i + 1) == Some(&q) {
                word.push(q);
                i += 1;
            } else if c == q {
                quote = None;
            } else {
                word.push(c);
            }
        } else if (c == '"' || c == '\'') && !started {
            quote = Some((c, i));
            started = true;
        } else if js::is_space(c) {
            if started {
                words.push(std::mem::take(&mut word));
                started = false;
            }
        } else {
            word.push(c);
            started = true;
        }
        if let Some((q, at)) = quote
            && i + 1 == chars.len()
        {
            // Never closed: the quote is the word's first character, and what follows it is
            // read again (the word was empty when the quote opened it).
            quote = None;
            word = q.to_string();
            i = at;
            unclosed = true;
        }
        i += 1;
    }
    if started {
        words.push(word);
    }
    let warning = unclosed.then(|| {
        "a quote in the template arguments is never closed; it is kept as text".to_owned()
    });
    (words, warning)
}

/// One placeholder, as the reference's single regular expression reads it at a `$`.
#[derive(Debug, PartialEq)]
enum Placeholder<'a> {
    /// `${N:-default}` (`index` is N; `None` when too large for any argument).
    Default {
        index: Option<usize>,
        default: &'a str,
    },
    /// `${@:-default}` and `${ARGUMENTS:-default}`.
    AllDefault(&'a str),
    /// `${@:N}` (`len` is `None`) and `${@:N:L}` (`Some(None)`: L too large to matter).
    Slice {
        start: Option<usize>,
        len: Option<Option<usize>>,
    },
    /// `$@` and `$ARGUMENTS`.
    All,
    /// `$N`; `digits` is N as written.
    Positional { index: Option<usize>, digits: usize },
}

/// The placeholder starting at byte `i` of `s` (which holds `$`) and the byte after it. The
/// three forms are tried in the reference's order: `${X:-default}`, `${@:N[:L]}`, `$X`.
fn placeholder_at(s: &str, i: usize) -> Option<(Placeholder<'_>, usize)> {
    let b = s.as_bytes();
    if b.get(i) != Some(&b'$') {
        return None;
    }
    if b.get(i + 1) == Some(&b'{') {
        let t = i + 2;
        let target_end = if b[t..].starts_with(b"ARGUMENTS") {
            Some(t + 9)
        } else if b.get(t) == Some(&b'@') {
            Some(t + 1)
        } else {
            digits_end(b, t)
        };
        if let Some(te) = target_end
            && b[te..].starts_with(b":-")
            && let Some(close) = s[te + 2..].find('}')
        {
            let default = &s[te + 2..te + 2 + close];
            let end = te + 2 + close + 1;
            let p = if b[t].is_ascii_digit() {
                Placeholder::Default {
                    index: parse_index(&s[t..te]),
                    default,
                }
            } else {
                Placeholder::AllDefault(default)
            };
            return Some((p, end));
        }
        if b[t..].starts_with(b"@:")
            && let Some((end, start, len)) = match_slice(b, t + 2)
        {
            return Some((Placeholder::Slice { start, len }, end));
        }
        return None;
    }
    let t = i + 1;
    if b[t..].starts_with(b"ARGUMENTS") {
        return Some((Placeholder::All, t + 9));
    }
    if b.get(t) == Some(&b'@') {
        return Some((Placeholder::All, t + 1));
    }
    let end = digits_end(b, t)?;
    Some((
        Placeholder::Positional {
            index: parse_index(&s[t..end]),
            digits: end - t,
        },
        end,
    ))
}

fn parse_index(digits: &str) -> Option<usize> {
    digits.parse::<usize>().ok()
}

/// Substitutes the placeholders of `content` in one pass from left to right, as the reference
/// 1.6 does:
///
/// - `$N`: the Nth argument, empty when missing (`$0` is empty; `$10` is the tenth);
/// - `${N:-default}`: the Nth argument, or `default` when it is missing or empty;
/// - `$@`, `$ARGUMENTS`: all arguments joined with spaces;
/// - `${@:-default}`, `${ARGUMENTS:-default}`: the same, or `default` when that is empty;
/// - `${@:N}`, `${@:N:L}`: the arguments from the Nth on (`0` counts as 1), at most L of them.
///
/// The default is the text up to the first `}`. Inserted text (arguments and defaults) is
/// never read again, and `$$` or `$&` in it are plain text.
pub fn substitute_args(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let nth = |index: Option<usize>| -> &str {
        index
            .filter(|&n| n >= 1)
            .and_then(|n| args.get(n - 1))
            .map_or("", String::as_str)
    };
    let mut out = String::with_capacity(content.len());
    let mut last = 0;
    let mut i = 0;
    while let Some(off) = content[i..].find('$') {
        let at = i + off;
        let Some((p, end)) = placeholder_at(content, at) else {
            i = at + 1;
            continue;
        };
        out.push_str(&content[last..at]);
        match p {
            Placeholder::Default { index, default } => {
                let v = nth(index);
                out.push_str(if v.is_empty() { default } else { v });
            }
            Placeholder::AllDefault(default) => {
                out.push_str(if all.is_empty() { default } else { &all });
            }
            Placeholder::Slice { start, len } => {
                let from = start
                    .map_or(usize::MAX, |n| n.saturating_sub(1))
                    .min(args.len());
                let to = match len {
                    None => args.len(),
                    Some(l) => from.saturating_add(l.unwrap_or(usize::MAX)).min(args.len()),
                };
                out.push_str(&args[from..to].join(" "));
            }
            Placeholder::All => out.push_str(&all),
            Placeholder::Positional { index, .. } => out.push_str(nth(index)),
        }
        last = end;
        i = end;
    }
    out.push_str(&content[last..]);
    out
}

/// The highest of `$1`..`$9` that `content` uses, read as [`substitute_args`] reads it (`$10`
/// is the tenth argument, not `$1`, and `${1:-default}` has its default); 0 when it uses none.
/// A template that uses `$2` needs two arguments.
pub(crate) fn positional_needed(content: &str) -> usize {
    let mut needed = 0;
    let mut i = 0;
    while let Some(off) = content[i..].find('$') {
        let at = i + off;
        match placeholder_at(content, at) {
            Some((p, end)) => {
                if let Placeholder::Positional {
                    index: Some(n),
                    digits: 1,
                } = p
                {
                    needed = needed.max(n);
                }
                i = end;
            }
            None => i = at + 1,
        }
    }
    needed
}

/// The end of the ASCII digits that start at `from`; `None` if there are none.
fn digits_end(b: &[u8], from: usize) -> Option<usize> {
    let end = from
        + b[from.min(b.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
    (end > from).then_some(end)
}

/// Matches `N}` or `N:L}` at `i`; returns the index after `}`, N, and L if present (numbers
/// too large for `usize` are `None`, which behaves as "beyond every argument").
#[allow(clippy::type_complexity)]
fn match_slice(b: &[u8], i: usize) -> Option<(usize, Option<usize>, Option<Option<usize>>)> {
    let text =
        |from: usize, to: usize| std::str::from_utf8(&b[from..to]).ok().and_then(parse_index);
    let n_end = digits_end(b, i)?;
    let n = text(i, n_end);
    match b.get(n_end) {
        Some(b'}') => Some((n_end + 1, n, None)),
        Some(b':') => {
            let l_end = digits_end(b, n_end + 1)?;
            if b.get(l_end) == Some(&b'}') {
                Some((l_end + 1, n, Some(text(n_end + 1, l_end))))
            } else {
                None
            }
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn sub(t: &str, args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        substitute_args(t, &args)
    }

    fn split(s: &str) -> Vec<String> {
        split_args(s).0
    }

    #[test]
    fn positional_and_all() {
        assert_eq!(sub("Test: $ARGUMENTS", &["a", "b", "c"]), "Test: a b c");
        assert_eq!(sub("Test: $@", &["a", "b", "c"]), "Test: a b c");
        assert_eq!(sub("$ARGUMENTS", &["$1", "$ARGUMENTS"]), "$1 $ARGUMENTS");
        assert_eq!(sub("$1 $2 $3 $4 $5", &["a", "b"]), "a b   ");
        assert_eq!(sub("$0", &["a", "b"]), "");
        assert_eq!(sub("$1.5", &["a"]), "a.5");
        assert_eq!(sub("Price: \\$100", &[]), "Price: \\");
        assert_eq!(sub("$A $$ $ $ARGS", &["a"]), "$A $$ $ $ARGS");
        assert_eq!(sub("$99999999999999999999999 x", &["a"]), " x");
        assert_eq!(sub("$$1 ${$1}", &["a"]), "$a ${a}");
    }

    #[test]
    fn defaults() {
        assert_eq!(sub("${1:-correctness}", &[]), "correctness");
        assert_eq!(sub("${1:-correctness}", &[""]), "correctness");
        assert_eq!(sub("${1:-correctness}", &["speed"]), "speed");
        assert_eq!(sub("${1:-a}b}", &[]), "ab}");
        assert_eq!(sub("${1:-$2 and $@}", &["", "x"]), "$2 and $@");
        assert_eq!(sub("${0:-zero} ${01:-x}", &["a"]), "zero a");
        assert_eq!(sub("${@:-all}|${ARGUMENTS:-none}", &[]), "all|none");
        assert_eq!(sub("${@:-all}", &["", ""]), " ");
        assert_eq!(sub("${@:-${1:-x}}", &[]), "${1:-x}");
        assert_eq!(
            sub("${1-x} ${1:x} ${1:+x}", &["a"]),
            "${1-x} ${1:x} ${1:+x}"
        );
        assert_eq!(sub("${@:2:-x} ${@:-2}", &["a", "b"]), "${@:2:-x} a b");
        assert_eq!(sub("${1:-unclosed", &[]), "${1:-unclosed");
    }

    #[test]
    fn positional_arguments_needed() {
        assert_eq!(positional_needed("Review PR $1. Focus on ${@:2}."), 1);
        assert_eq!(positional_needed("$2 then $1"), 2);
        assert_eq!(positional_needed("$ARGUMENTS $@ ${@:3} $0"), 0);
        assert_eq!(positional_needed("costs $10 or $100"), 0);
        assert_eq!(positional_needed("$1.5 and $9"), 9);
        assert_eq!(positional_needed("$$3"), 3);
        assert_eq!(positional_needed("${1:-all} ${2:-} ${@:-x}"), 0);
        assert_eq!(positional_needed("${1:-x} $2"), 2);
        assert_eq!(positional_needed("${1:-$3}"), 0);
        assert_eq!(positional_needed(""), 0);
    }

    #[test]
    fn slices() {
        assert_eq!(sub("${@:2}", &["a", "b", "c", "d"]), "b c d");
        assert_eq!(sub("${@:2:2}", &["a", "b", "c", "d"]), "b c");
        assert_eq!(sub("${@:0}", &["a", "b", "c"]), "a b c");
        assert_eq!(sub("${@:2:0}", &["a", "b", "c"]), "");
        assert_eq!(sub("${@:99}", &["a", "b"]), "");
        assert_eq!(sub("${@:2:99}", &["a", "b", "c"]), "b c");
        assert_eq!(sub("${@:2", &["a"]), "${@:2");
        assert_eq!(sub("${@}", &["a"]), "${@}");
        assert_eq!(sub("${@:1:99999999999999999999999}", &["a", "b"]), "a b");
        assert_eq!(sub("${@:99999999999999999999999}", &["a", "b"]), "");
    }

    #[test]
    fn inserted_text_is_not_read_again() {
        assert_eq!(sub("$1", &["${@:2}", "z"]), "${@:2}");
        assert_eq!(sub("$1 x", &["$@", "b"]), "$@ x");
        assert_eq!(sub("${@:1}", &["${@:2}", "test"]), "${@:2} test");
        assert_eq!(sub("$ARGUMENTS", &["$$", "$&x"]), "$$ $&x");
        assert_eq!(sub("<$@>", &["$`", "$'"]), "<$` $'>");
    }

    #[test]
    fn words() {
        assert_eq!(split("a  b\t c"), ["a", "b", "c"]);
        assert_eq!(split("\"first arg\" second"), ["first arg", "second"]);
        assert_eq!(split("'a \"b\"' c"), ["a \"b\"", "c"]);
        assert_eq!(split(r#""quoted \"text\"""#), ["quoted \"text\""]);
        assert_eq!(split("x\"y z\"w"), ["x\"y", "z\"w"]);
        assert_eq!(split("\"a\"b c"), ["ab", "c"]);
        assert_eq!(split("fix #123 # x"), ["fix", "#123", "#", "x"]);
        assert_eq!(split("\"\" '' x"), ["", "", "x"]);
        assert_eq!(
            split("doesn't 'quote me' it's"),
            ["doesn't", "quote me", "it's"]
        );
        assert_eq!(split("C:\\Users\\me a\\ b"), ["C:\\Users\\me", "a\\", "b"]);
        assert_eq!(split("a\u{a0}b\u{2003}c\u{feff}d"), ["a", "b", "c", "d"]);
        assert_eq!(split("a\u{200b}b\u{85}c"), ["a\u{200b}b\u{85}c"]);
        assert_eq!(split("日本語 🎉 café"), ["日本語", "🎉", "café"]);
        assert!(split("").is_empty());
    }

    #[test]
    fn unclosed_quotes_are_text() {
        let (w, warn) = split_args("\"unclosed rest \"x y\"");
        assert_eq!(w, ["unclosed rest x", "y\""]);
        assert!(warn.is_none());
        let (w, warn) = split_args("'unclosed \"x y\" z");
        assert_eq!(w, ["'unclosed", "x y", "z"]);
        assert!(warn.is_some());
        assert_eq!(split("x \""), ["x", "\""]);
        assert_eq!(split("\"C:\\path\\\" next"), ["\"C:\\path\\\"", "next"]);
        assert_eq!(split_args("a b").1, None);
    }
}
