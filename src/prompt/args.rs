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

/// Pass 1: `$` followed by one or more ASCII digits.
fn replace_positional(s: &str, args: &[String]) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j > start {
                out.push_str(&s[last..i]);
                if let Some(n) = parse_index(&s[start..j]).filter(|&n| n >= 1)
                    && let Some(a) = args.get(n - 1)
                {
                    out.push_str(a);
                }
                last = j;
                i = j;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&s[last..]);
    out
}

/// Pass 2: `${@:N}` and `${@:N:L}`.
fn replace_slices(s: &str, args: &[String]) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"${@:")
            && let Some((end, start_n, len)) = match_slice(b, i + 4)
        {
            out.push_str(&s[last..i]);
            let start = start_n.map_or(usize::MAX, |n| n.saturating_sub(1));
            let from = start.min(args.len());
            let to = match len {
                None => args.len(),
                Some(l) => from.saturating_add(l.unwrap_or(usize::MAX)).min(args.len()),
            };
            out.push_str(&args[from..to].join(" "));
            last = end;
            i = end;
            continue;
        }
        i += 1;
    }
    out.push_str(&s[last..]);
    out
}

/// Matches `N}` or `N:L}` at `i`; returns the index after `}`, N, and L if present (numbers
/// too large for `usize` are `None`, which behaves as "beyond every argument").
#[allow(clippy::type_complexity)]
fn match_slice(b: &[u8], i: usize) -> Option<(usize, Option<usize>, Option<Option<usize>>)> {
    let digits = |from: usize| {
        let mut j = from;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        (j > from).then_some(j)
    };
    let text =
        |from: usize, to: usize| std::str::from_utf8(&b[from..to]).ok().and_then(parse_index);
    let n_end = digits(i)?;
    let n = text(i, n_end);
    match b.get(n_end) {
        Some(b'}') => Some((n_end + 1, n, None)),
        Some(b':') => {
            let l_end = digits(n_end + 1)?;
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
