//! Template arguments: splitting the text after `/name` into words, and substituting `$1`,
//! `${@:N}`, `${@:N:L}`, `$ARGUMENTS` and `$@` in a template.

/// Splits an argument string by POSIX shell-word rules: blanks separate words, `'…'` is
/// literal, `"…"` allows `\"`, `\\`, `\$` and `` \` `` escapes, and a backslash outside quotes
/// escapes the next character. Unlike a shell, `#` never starts a comment.
///
/// If the quotes are unbalanced (`it's here`), the string is split at whitespace instead and
/// the second value says so.
pub fn split_args(s: &str) -> (Vec<String>, Option<String>) {
    // shell-words treats `#` at the start of a word as a comment; hide it behind a character
    // the input does not contain, so `#123` and `#tag` stay arguments.
    let placeholder = ('\u{e000}'..='\u{f8ff}')
        .chain('\u{f0000}'..='\u{ffffd}')
        .find(|c| !s.contains(*c));
    let split = match placeholder {
        Some(p) => shell_words::split(&s.replace('#', &p.to_string())).map(|words| {
            words
                .into_iter()
                .map(|w| w.replace(p, "#"))
                .collect::<Vec<_>>()
        }),
        None => shell_words::split(s),
    };
    match split {
        Ok(words) => (words, None),
        Err(_) => (
            s.split([' ', '\t', '\n'])
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect(),
            Some(
                "unbalanced quote in the template arguments; splitting them at whitespace"
                    .to_owned(),
            ),
        ),
    }
}

fn parse_index(digits: &str) -> Option<usize> {
    digits.parse::<usize>().ok()
}

/// Substitutes placeholders in `content`, in four passes over the output of the previous one:
/// `$N` (the Nth argument, empty when missing; `$0` is empty), `${@:N}` / `${@:N:L}` (arguments
/// from the Nth on, at most L of them, joined with spaces), `$ARGUMENTS`, then `$@` (all
/// arguments joined with spaces). Text that is inserted is never interpreted by the pass that
/// inserted it, and `$$` or `$&` in arguments are plain text.
pub fn substitute_args(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let s = replace_positional(content, args);
    let s = replace_slices(&s, args);
    let s = s.replace("$ARGUMENTS", &all);
    s.replace("$@", &all)
}

/// The highest of `$1`..`$9` that `content` uses, as the first pass of [`substitute_args`]
/// reads it (`$10` is the tenth argument, not `$1`); 0 when it uses none. A template that
/// uses `$2` needs two arguments.
pub(crate) fn positional_needed(content: &str) -> usize {
    let b = content.as_bytes();
    let mut needed = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$'
            && let Some(end) = digits_end(b, i + 1)
        {
            if end == i + 2 {
                needed = needed.max(usize::from(b[i + 1] - b'0'));
            }
            i = end;
        } else {
            i += 1;
        }
    }
    needed
}

/// Pass 1: `$` followed by one or more ASCII digits.
fn replace_positional(s: &str, args: &[String]) -> String {
    replace_each(s, |b, i| {
        if b[i] != b'$' {
            return None;
        }
        let end = digits_end(b, i + 1)?;
        let arg = std::str::from_utf8(&b[i + 1..end])
            .ok()
            .and_then(parse_index)
            .filter(|&n| n >= 1)
            .and_then(|n| args.get(n - 1));
        Some((end, arg.map_or("", String::as_str).to_owned()))
    })
}

/// Pass 2: `${@:N}` and `${@:N:L}`.
fn replace_slices(s: &str, args: &[String]) -> String {
    replace_each(s, |b, i| {
        if !b[i..].starts_with(b"${@:") {
            return None;
        }
        let (end, start_n, len) = match_slice(b, i + 4)?;
        let start = start_n.map_or(usize::MAX, |n| n.saturating_sub(1));
        let from = start.min(args.len());
        let to = match len {
            None => args.len(),
            Some(l) => from.saturating_add(l.unwrap_or(usize::MAX)).min(args.len()),
        };
        Some((end, args[from..to].join(" ")))
    })
}

/// `s` with every placeholder replaced, left to right: `at(bytes, i)` gives the end of a
/// placeholder starting at `i` and its replacement, which is not scanned again.
fn replace_each(s: &str, mut at: impl FnMut(&[u8], usize) -> Option<(usize, String)>) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        match at(b, i) {
            Some((end, text)) => {
                out.push_str(&s[last..i]);
                out.push_str(&text);
                last = end;
                i = end;
            }
            None => i += 1,
        }
    }
    out.push_str(&s[last..]);
    out
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
    }

    #[test]
    fn positional_arguments_needed() {
        assert_eq!(positional_needed("Review PR $1. Focus on ${@:2}."), 1);
        assert_eq!(positional_needed("$2 then $1"), 2);
        assert_eq!(positional_needed("$ARGUMENTS $@ ${@:3} $0"), 0);
        assert_eq!(positional_needed("costs $10 or $100"), 0);
        assert_eq!(positional_needed("$1.5 and $9"), 9);
        assert_eq!(positional_needed("$$3"), 3);
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
    fn later_passes_see_earlier_output() {
        assert_eq!(sub("$1", &["${@:2}", "z"]), "z");
        assert_eq!(sub("$1 x", &["$@", "b"]), "$@ b x");
        assert_eq!(sub("${@:1}", &["${@:2}", "test"]), "${@:2} test");
    }

    #[test]
    fn no_javascript_replacement_patterns() {
        assert_eq!(sub("$ARGUMENTS", &["$$", "$&x"]), "$$ $&x");
        assert_eq!(sub("<$@>", &["$`", "$'"]), "<$` $'>");
    }

    #[test]
    fn posix_words() {
        assert_eq!(split("a  b\t c"), ["a", "b", "c"]);
        assert_eq!(split("\"first arg\" second"), ["first arg", "second"]);
        assert_eq!(split("'a \"b\"' c"), ["a \"b\"", "c"]);
        assert_eq!(split(r#""quoted \"text\"""#), ["quoted \"text\""]);
        assert_eq!(split("x\"y z\"w"), ["xy zw"]);
        assert_eq!(split("$100 @user #tag"), ["$100", "@user", "#tag"]);
        assert_eq!(
            split("fix #123 # not a comment"),
            ["fix", "#123", "#", "not", "a", "comment"]
        );
        assert_eq!(split("\"\" x"), ["", "x"]);
        assert_eq!(split("日本語 🎉 café"), ["日本語", "🎉", "café"]);
        assert!(split("").is_empty());
    }

    #[test]
    fn unbalanced_quotes_fall_back_to_whitespace() {
        let (w, warn) = split_args("it's here");
        assert_eq!(w, ["it's", "here"]);
        assert!(warn.is_some());
        assert_eq!(split_args("a b").1, None);
    }
}
