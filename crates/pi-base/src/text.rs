//! Cutting text for one-line views: at most so many characters, the cut marked with `…`.

/// Cuts `s` to at most `max` characters, marking the cut with `…`.
pub fn truncate(s: &str, max: usize) -> String {
    match cut_at(s, max) {
        None => s.to_owned(),
        Some(cut) => {
            let mut out = String::with_capacity(cut + 3);
            out.push_str(&s[..cut]);
            out.push('…');
            out
        }
    }
}

/// [`truncate`] in the string's own allocation.
pub fn truncate_owned(mut s: String, max: usize) -> String {
    if let Some(cut) = cut_at(&s, max) {
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// Where [`truncate`] cuts `s` (before the `…`), or `None` when it has at most `max`
/// characters.
fn cut_at(s: &str, max: usize) -> Option<usize> {
    if s.len() <= max {
        return None; // no more characters than bytes
    }
    if max > 0 && s.as_bytes().get(..=max).is_some_and(<[u8]>::is_ascii) {
        return Some(max - 1); // characters `max - 1` and `max` are bytes
    }
    // The starts of characters `max - 1` and `max` (0-based), counted on the bytes: a
    // character starts at every byte that does not continue one.
    let mut starts = s
        .bytes()
        .enumerate()
        .filter(|&(_, b)| b & 0xc0 != 0x80)
        .map(|(i, _)| i)
        .skip(max.saturating_sub(1));
    let cut = starts.next().unwrap_or(s.len());
    let more = if max == 0 {
        cut < s.len()
    } else {
        starts.next().is_some()
    };
    more.then_some(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_keeps_max_characters_with_the_mark() {
        // As counted one character at a time.
        let by_chars = |s: &str, max: usize| {
            if s.chars().count() <= max {
                return s.to_owned();
            }
            let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
            out.push('…');
            out
        };
        for s in ["", "a", "abc", "éé→x", "ab\u{3000}cd", &"x".repeat(300)] {
            for max in [0, 1, 2, 3, 4, 5, 200, 201] {
                assert_eq!(truncate(s, max), by_chars(s, max), "{s:?} {max}");
                assert_eq!(
                    truncate_owned(s.to_owned(), max),
                    by_chars(s, max),
                    "{s:?} {max}"
                );
            }
        }
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
