// Kept hand-written (not globset): minimatch's quirks decide which files upstream loads.
//! Glob matching for two purposes: `.gitignore`-style ignore files met during discovery, and
//! the include/exclude patterns of the `prompts`/`skills` settings (minimatch semantics:
//! `*`, `?`, `[...]`, `{a,b}`, `**` as a whole segment, and no match of dot-names unless the
//! pattern spells the dot).

/// Matches one path segment against one pattern segment (`*`, `?`, `[...]`, `\x`).
pub(crate) fn segment_match(pat: &[char], s: &[char]) -> bool {
    // Iterative wildcard matching with backtracking to the last `*`.
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() {
            match pat[p] {
                '*' => {
                    star = Some((p, i));
                    p += 1;
                    continue;
                }
                '?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class_match(pat, p, s[i]) {
                        if matched {
                            p = next;
                            i += 1;
                            continue;
                        }
                    } else if s[i] == '[' {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
                '\\' if p + 1 < pat.len() => {
                    if pat[p + 1] == s[i] {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if c == s[i] {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp + 1;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    while p < pat.len() && pat[p] == '*' {
        p += 1;
    }
    p == pat.len()
}

/// A `[...]` class at `pat[p]`: whether `c` is in it and the index after `]`; `None` if the
/// class is not closed.
fn class_match(pat: &[char], p: usize, c: char) -> Option<(bool, usize)> {
    let mut i = p + 1;
    let negated = matches!(pat.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < pat.len() {
        let mut lo = pat[i];
        if lo == ']' && !first {
            return Some((matched != negated, i + 1));
        }
        first = false;
        if lo == '\\' && i + 1 < pat.len() {
            i += 1;
            lo = pat[i];
        }
        if pat.get(i + 1) == Some(&'-') && pat.get(i + 2).is_some_and(|&h| h != ']') {
            let hi = pat[i + 2];
            if lo <= c && c <= hi {
                matched = true;
            }
            i += 3;
        } else {
            if lo == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

/// Expands `{a,b}` alternatives (nested allowed; unbalanced braces are literal).
pub(crate) fn expand_braces(pat: &str) -> Vec<String> {
    let chars: Vec<char> = pat.chars().collect();
    let mut depth = 0;
    let mut open = None;
    let mut commas = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '{' => {
                if depth == 0 {
                    open = Some(i);
                    commas.clear();
                }
                depth += 1;
            }
            ',' if depth == 1 => commas.push(i),
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0
                    && let Some(o) = open
                {
                    if commas.is_empty() {
                        open = None;
                        continue;
                    }
                    let pre: String = chars[..o].iter().collect();
                    let post: String = chars[i + 1..].iter().collect();
                    let mut bounds = vec![o];
                    bounds.extend(&commas);
                    bounds.push(i);
                    let mut out = Vec::new();
                    for w in bounds.windows(2) {
                        let alt: String = chars[w[0] + 1..w[1]].iter().collect();
                        for e in expand_braces(&format!("{pre}{alt}{post}")) {
                            out.push(e);
                        }
                    }
                    return out;
                }
            }
            _ => {}
        }
    }
    vec![pat.to_owned()]
}

/// Matches path segments against pattern segments where `**` matches any number of segments.
/// With `dot == false`, wildcards do not match a segment that starts with `.`.
fn path_match(pat: &[Vec<char>], path: &[Vec<char>], dot: bool) -> bool {
    match pat.split_first() {
        None => path.is_empty(),
        Some((p, rest)) if p.len() == 2 && p[0] == '*' && p[1] == '*' => {
            for skip in 0..=path.len() {
                if skip > 0 && !dot && path[skip - 1].first() == Some(&'.') {
                    return false;
                }
                if path_match(rest, &path[skip..], dot) {
                    return true;
                }
            }
            false
        }
        Some((p, rest)) => match path.split_first() {
            None => false,
            Some((s, srest)) => {
                if !dot && s.first() == Some(&'.') && p.first() != Some(&'.') {
                    return false;
                }
                segment_match(p, s) && path_match(rest, srest, dot)
            }
        },
    }
}

fn segments(s: &str) -> Vec<Vec<char>> {
    s.split('/').map(|seg| seg.chars().collect()).collect()
}

/// minimatch(`path`, `pattern`) with its default options.
pub(crate) fn minimatch(path: &str, pattern: &str) -> bool {
    let path = segments(path);
    expand_braces(pattern)
        .iter()
        .any(|p| path_match(&segments(p), &path, false))
}

/// Matches a `.gitignore` glob (already without `!` and trailing `/`) against a relative
/// path: anchored at the root when the pattern contains a `/`, otherwise against the last
/// segment.
pub(crate) fn gitignore_match(pattern: &str, path: &str) -> bool {
    let path_segs = segments(path);
    if pattern.contains('/') {
        path_match(&segments(pattern), &path_segs, true)
    } else {
        let pat: Vec<char> = pattern.chars().collect();
        path_segs
            .last()
            .is_some_and(|last| segment_match(&pat, last))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn minimatch_basics() {
        assert!(minimatch("prompts/skip.md", "prompts/skip.md"));
        assert!(minimatch("prompts/skip.md", "prompts/*.md"));
        assert!(!minimatch("prompts/a/skip.md", "prompts/*.md"));
        assert!(minimatch("prompts/a/skip.md", "prompts/**/*.md"));
        assert!(minimatch("prompts/skip.md", "prompts/**/*.md"));
        assert!(minimatch("skip.md", "sk?p.md"));
        assert!(minimatch("a.md", "{a,b}.md"));
        assert!(minimatch("b.md", "[ab].md"));
        assert!(!minimatch("c.md", "[ab].md"));
        assert!(!minimatch(".hidden.md", "*.md"));
        assert!(minimatch(".hidden.md", ".*.md"));
        assert!(!minimatch("../x/y.md", "**/y.md"));
    }

    #[test]
    fn gitignore_basics() {
        assert!(gitignore_match("*.md", "a/b/c.md"));
        assert!(gitignore_match("drafts", "x/drafts"));
        assert!(gitignore_match("sub/x.md", "sub/x.md"));
        assert!(!gitignore_match("sub/x.md", "other/sub/x.md"));
        assert!(gitignore_match("**/x.md", "a/b/x.md"));
        assert!(gitignore_match("a/**", "a/b/c"));
        assert!(gitignore_match(".secret*", ".secret-1"));
    }

    #[test]
    fn odd_patterns_do_not_panic() {
        for p in [
            "[", "[]", "[!]", "\\", "{", "}", "{,}", "***", "[a-", "a[b-]c",
        ] {
            let _ = minimatch("a/b", p);
            let _ = gitignore_match(p, "a/b");
        }
    }
}
