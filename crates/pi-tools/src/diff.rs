// Kept hand-written (not similar): the stored diff must be jsdiff's among equal-length diffs.
//! The diff the edit tool stores in `details.diff`: a line diff of the old and new text with
//! line numbers, changed lines marked `+`/`-`, and up to four unchanged lines of context
//! around each change (`...` where lines are skipped).
//!
//! The line diff is the same Myers search as upstream's `diff` package (`diffLines`), step
//! for step, so that where several shortest diffs exist the same one is chosen and the
//! stored text is identical. A search that would take very long (a file rewritten almost
//! entirely) stops and falls back to one block of removed and added lines between the
//! common beginning and end.

/// One run of the line diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    pub value: String,
    pub added: bool,
    pub removed: bool,
}

#[derive(Clone, Copy)]
struct Component {
    count: usize,
    added: bool,
    removed: bool,
    prev: Option<usize>,
}

#[derive(Clone, Copy)]
struct SearchPath {
    old_pos: isize,
    last: Option<usize>,
}

/// Work allowed before falling back (token comparisons plus diagonals visited).
const MAX_WORK: u64 = 50_000_000;

/// Line tokens: each line with its line break.
fn tokenize(s: &str) -> Vec<&str> {
    s.split_inclusive('\n').collect()
}

/// Upstream's `diffLines(old, new)`.
pub(crate) fn diff_lines(old: &str, new: &str) -> Vec<Part> {
    let o = tokenize(old);
    let n = tokenize(new);
    match myers(&o, &n) {
        Some(comps) => build(&comps, &o, &n),
        None => fallback(&o, &n),
    }
}

fn push(arena: &mut Vec<Component>, c: Component) -> usize {
    arena.push(c);
    arena.len() - 1
}

fn add_to_path(
    arena: &mut Vec<Component>,
    path: SearchPath,
    added: bool,
    removed: bool,
    inc: isize,
) -> SearchPath {
    let last = path.last.map(|i| arena[i]);
    let comp = match last {
        Some(l) if l.added == added && l.removed == removed => Component {
            count: l.count + 1,
            added,
            removed,
            prev: l.prev,
        },
        _ => Component {
            count: 1,
            added,
            removed,
            prev: path.last,
        },
    };
    SearchPath {
        old_pos: path.old_pos + inc,
        last: Some(push(arena, comp)),
    }
}

fn extract_common(
    arena: &mut Vec<Component>,
    path: &mut SearchPath,
    new: &[&str],
    old: &[&str],
    diagonal: isize,
    work: &mut u64,
) -> isize {
    let (new_len, old_len) = (new.len() as isize, old.len() as isize);
    let mut old_pos = path.old_pos;
    let mut new_pos = old_pos - diagonal;
    let mut common = 0;
    while new_pos + 1 < new_len
        && old_pos + 1 < old_len
        && old[(old_pos + 1) as usize] == new[(new_pos + 1) as usize]
    {
        new_pos += 1;
        old_pos += 1;
        common += 1;
        *work += 1;
    }
    if common > 0 {
        let c = Component {
            count: common,
            added: false,
            removed: false,
            prev: path.last,
        };
        path.last = Some(push(arena, c));
    }
    path.old_pos = old_pos;
    new_pos
}

/// The components of the diff in order, or `None` when the work budget ran out.
fn myers(old: &[&str], new: &[&str]) -> Option<Vec<Component>> {
    let (new_len, old_len) = (new.len() as isize, old.len() as isize);
    let mut arena: Vec<Component> = Vec::new();
    let mut work = 0u64;
    let max_edit = new_len + old_len;
    // best[d + offset] for diagonals -max_edit..=max_edit.
    let offset = max_edit + 1;
    let mut best: Vec<Option<SearchPath>> = vec![None; (2 * offset + 1) as usize];
    let idx = |d: isize| (d + offset) as usize;

    let mut seed = SearchPath {
        old_pos: -1,
        last: None,
    };
    let new_pos = extract_common(&mut arena, &mut seed, new, old, 0, &mut work);
    if seed.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
        return Some(components(&arena, seed.last));
    }
    best[idx(0)] = Some(seed);
    let (mut min_diag, mut max_diag) = (isize::MIN, isize::MAX);
    let mut edit_len: isize = 1;
    while edit_len <= max_edit {
        let mut d = min_diag.max(-edit_len);
        let hi = max_diag.min(edit_len);
        while d <= hi {
            work += 1;
            if work > MAX_WORK {
                return None;
            }
            let remove = best[idx(d - 1)].take();
            let add = best[idx(d + 1)];
            let can_add = add.is_some_and(|a| {
                let p = a.old_pos - d;
                0 <= p && p < new_len
            });
            let can_remove = remove.is_some_and(|r| r.old_pos + 1 < old_len);
            if !can_add && !can_remove {
                best[idx(d)] = None;
                d += 2;
                continue;
            }
            let r_old = remove.map_or(isize::MIN, |r| r.old_pos);
            let a_old = add.map_or(isize::MIN, |a| a.old_pos);
            let use_add = !can_remove || (can_add && r_old < a_old);
            let mut base = match (use_add, add, remove) {
                (true, Some(a), _) => add_to_path(&mut arena, a, true, false, 0),
                (false, _, Some(r)) => add_to_path(&mut arena, r, false, true, 1),
                _ => {
                    // Unreachable: `use_add` implies an add path, otherwise a remove path.
                    d += 2;
                    continue;
                }
            };
            let new_pos = extract_common(&mut arena, &mut base, new, old, d, &mut work);
            if base.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
                return Some(components(&arena, base.last));
            }
            best[idx(d)] = Some(base);
            if base.old_pos + 1 >= old_len {
                max_diag = max_diag.min(d - 1);
            }
            if new_pos + 1 >= new_len {
                min_diag = min_diag.max(d + 1);
            }
            d += 2;
        }
        edit_len += 1;
    }
    None
}

fn components(arena: &[Component], last: Option<usize>) -> Vec<Component> {
    let mut out = Vec::new();
    let mut cur = last;
    while let Some(i) = cur {
        out.push(arena[i]);
        cur = arena[i].prev;
    }
    out.reverse();
    out
}

fn build(comps: &[Component], old: &[&str], new: &[&str]) -> Vec<Part> {
    let (mut o, mut n) = (0usize, 0usize);
    let mut parts = Vec::with_capacity(comps.len());
    for c in comps {
        let value = if c.removed {
            let v = old[o..o + c.count].concat();
            o += c.count;
            v
        } else {
            let v = new[n..n + c.count].concat();
            n += c.count;
            if !c.added {
                o += c.count;
            }
            v
        };
        parts.push(Part {
            value,
            added: c.added,
            removed: c.removed,
        });
    }
    parts
}

/// Common first and last lines, and everything between them replaced.
fn fallback(old: &[&str], new: &[&str]) -> Vec<Part> {
    let mut pre = 0;
    while pre < old.len() && pre < new.len() && old[pre] == new[pre] {
        pre += 1;
    }
    let mut suf = 0;
    while suf < old.len() - pre
        && suf < new.len() - pre
        && old[old.len() - 1 - suf] == new[new.len() - 1 - suf]
    {
        suf += 1;
    }
    let mut parts = Vec::new();
    let mut add = |v: String, added: bool, removed: bool| {
        if !v.is_empty() {
            parts.push(Part {
                value: v,
                added,
                removed,
            });
        }
    };
    add(old[..pre].concat(), false, false);
    add(old[pre..old.len() - suf].concat(), false, true);
    add(new[pre..new.len() - suf].concat(), true, false);
    add(old[old.len() - suf..].concat(), false, false);
    parts
}

/// The rendered diff and the first changed line (numbered in the new text).
pub(crate) fn render(old: &str, new: &str, context: usize) -> (String, Option<usize>) {
    let parts = diff_lines(old, new);
    let max_line = old.split('\n').count().max(new.split('\n').count());
    let width = max_line.to_string().len();
    let num = |n: usize| format!("{n:>width$}");
    let skipped = format!(" {} ...", " ".repeat(width));
    let mut out: Vec<String> = Vec::new();
    let (mut old_no, mut new_no) = (1usize, 1usize);
    let mut last_was_change = false;
    let mut first_changed = None;
    for (i, part) in parts.iter().enumerate() {
        let mut raw: Vec<&str> = part.value.split('\n').collect();
        if raw.last() == Some(&"") {
            raw.pop();
        }
        if part.added || part.removed {
            first_changed.get_or_insert(new_no);
            for line in raw {
                if part.added {
                    out.push(format!("+{} {line}", num(new_no)));
                    new_no += 1;
                } else {
                    out.push(format!("-{} {line}", num(old_no)));
                    old_no += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts.get(i + 1).is_some_and(|p| p.added || p.removed);
        if last_was_change && next_is_change {
            if raw.len() <= context * 2 {
                show(&raw, &mut out, &mut old_no, &mut new_no, width);
            } else {
                show(&raw[..context], &mut out, &mut old_no, &mut new_no, width);
                out.push(skipped.clone());
                let skip = raw.len() - 2 * context;
                old_no += skip;
                new_no += skip;
                show(
                    &raw[raw.len() - context..],
                    &mut out,
                    &mut old_no,
                    &mut new_no,
                    width,
                );
            }
        } else if last_was_change {
            let shown = raw.len().min(context);
            show(&raw[..shown], &mut out, &mut old_no, &mut new_no, width);
            let skip = raw.len() - shown;
            if skip > 0 {
                out.push(skipped.clone());
                old_no += skip;
                new_no += skip;
            }
        } else if next_is_change {
            let skip = raw.len().saturating_sub(context);
            if skip > 0 {
                out.push(skipped.clone());
                old_no += skip;
                new_no += skip;
            }
            show(&raw[skip..], &mut out, &mut old_no, &mut new_no, width);
        } else {
            old_no += raw.len();
            new_no += raw.len();
        }
        last_was_change = false;
    }
    (out.join("\n"), first_changed)
}

/// Unchanged lines, numbered in the old text.
fn show(
    lines: &[&str],
    out: &mut Vec<String>,
    old_no: &mut usize,
    new_no: &mut usize,
    width: usize,
) {
    for line in lines {
        out.push(format!(" {:>width$} {line}", *old_no));
        *old_no += 1;
        *new_no += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(old: &str, new: &str) -> Vec<(String, char)> {
        diff_lines(old, new)
            .into_iter()
            .map(|p| {
                let k = if p.added {
                    '+'
                } else if p.removed {
                    '-'
                } else {
                    ' '
                };
                (p.value, k)
            })
            .collect()
    }

    #[test]
    fn line_diff() {
        assert_eq!(
            parts("a\nb\nc\n", "a\nx\nc\n"),
            vec![
                ("a\n".into(), ' '),
                ("b\n".into(), '-'),
                ("x\n".into(), '+'),
                ("c\n".into(), ' ')
            ]
        );
        assert_eq!(parts("", ""), vec![]);
        assert_eq!(parts("", "a"), vec![("a".into(), '+')]);
        assert_eq!(
            parts("a\nb", "a\nb\nc"),
            vec![("a\n".into(), ' '), ("b".into(), '-'), ("b\nc".into(), '+')]
        );
    }

    #[test]
    fn rendering() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l10\n", "X\n");
        let (d, first) = render(&old, &new, 4);
        assert_eq!(first, Some(10));
        assert_eq!(
            d,
            "    ...\n  6 l6\n  7 l7\n  8 l8\n  9 l9\n-10 l10\n+10 X\n 11 l11\n 12 l12\n 13 l13\n 14 l14\n    ..."
        );
    }

    #[test]
    fn fallback_is_a_valid_diff() {
        let o = tokenize("a\nb\nc\n");
        let n = tokenize("a\nx\nc\n");
        let p = fallback(&o, &n);
        assert_eq!(p.len(), 4);
        assert_eq!(p[1].value, "b\n");
        assert!(p[1].removed);
    }
}
