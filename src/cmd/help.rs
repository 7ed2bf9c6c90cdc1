//! What pi says around its command tree: the nearest commands to a mistyped one ("did you
//! mean"), the names a command group offers, the extensions on PATH, and `pi help NAME`
//! for them. The `help`
//! command itself is clap's (`pi help session log`, `pi session help log`); its page is
//! commands/pi-help.md.

use std::path::PathBuf;

/// The optimal string alignment distance between `a` and `b`: insertions, deletions,
/// substitutions and swaps of two neighbours each cost 1.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two back (for swaps), one back, and the current one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidates close enough to `typed` to be what was meant, nearest first (several
/// when they are equally near): a candidate that starts with what was typed (two characters
/// or more), or one a typo or two away (one for words of up to three characters, two up
/// to six, three beyond).
pub fn similar<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let exact = typed;
    let typed = typed.to_lowercase();
    let len = typed.chars().count();
    let limit = match len {
        0..=3 => 1,
        4..=6 => 2,
        _ => 3,
    };
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|c| !c.is_empty())
        .filter_map(|c| {
            if c == exact {
                return None;
            }
            let lower = c.to_lowercase();
            if len >= 2 && lower.starts_with(&typed) {
                return Some((0, c));
            }
            let d = distance(&typed, &lower);
            (d <= limit).then_some((d, c))
        })
        .collect();
    let Some(best) = scored.iter().map(|(d, _)| *d).min() else {
        return Vec::new();
    };
    scored.retain(|(d, _)| *d == best);
    scored.sort_by(|a, b| a.1.cmp(b.1));
    scored.dedup();
    scored.into_iter().map(|(_, c)| c).collect()
}

/// "did you mean `log`?", or "did you mean one of `compact`, `context`?".
pub fn did_you_mean(names: &[&str]) -> Option<String> {
    match names {
        [] => None,
        [one] => Some(format!("did you mean `{one}`?")),
        many => Some(format!(
            "did you mean one of {}?",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The names of the visible commands of `cmd`, in the order its help lists them.
pub fn command_names(cmd: &clap::Command) -> Vec<String> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_owned())
        .collect()
}

/// For `pi help NAME …` where NAME is no built-in command but an extension on PATH: the
/// extension's name. Global options before `help` are skipped.
pub fn extension_help(args: &[std::ffi::OsString], top: &clap::Command) -> Option<String> {
    let mut words = args.iter().skip(1);
    let mut positional = Vec::new();
    while let Some(w) = words.next() {
        let w = w.to_str()?;
        if w == "--" {
            break;
        }
        if let Some(long) = w.strip_prefix("--") {
            let takes_value = top
                .get_arguments()
                .find(|a| a.get_long() == Some(long))
                .is_some_and(|a| a.get_action().takes_values());
            if takes_value {
                words.next();
            }
            continue;
        }
        if w.starts_with('-') {
            continue;
        }
        positional.push(w);
        if positional.len() == 2 {
            break;
        }
    }
    match positional.as_slice() {
        ["help", name] if top.find_subcommand(name).is_none() => {
            find_in_path(&format!("pi-{name}")).map(|_| (*name).to_owned())
        }
        _ => None,
    }
}

/// The executable `name` in a directory of PATH.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The names of the extensions on PATH (`pi-foo` → `foo`).
pub fn extensions_on_path() -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = std::env::var_os("PATH") else {
        return Vec::new();
    };
    let mut names: Vec<String> = std::env::split_paths(&path)
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.filter_map(Result::ok))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_prefix("pi-")?.to_owned();
            let m = e.path().metadata().ok()?;
            (m.is_file() && m.permissions().mode() & 0o111 != 0).then_some(name)
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("sesion", "session"), 1);
        assert_eq!(distance("lgo", "log"), 1);
        assert_eq!(distance("comapct", "compact"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions() {
        let top = [
            "session", "prompt", "context", "compact", "models", "run", "trust", "help",
        ];
        assert_eq!(similar("sesion", top), ["session"]);
        assert_eq!(similar("SESSION", top), ["session"]);
        assert_eq!(similar("rn", top), ["run"]);
        assert_eq!(similar("co", top), ["compact", "context"]);
        assert_eq!(similar("modles", top), ["models"]);
        assert!(similar("xyzzy", top).is_empty());
        assert!(similar("session", top).is_empty());
        let session = [
            "new", "list", "log", "append", "branch", "tree", "label", "name",
        ];
        assert_eq!(similar("lgo", session), ["log"]);
        assert_eq!(similar("tre", session), ["tree"]);
        assert_eq!(did_you_mean(&["log"]).unwrap(), "did you mean `log`?");
        assert_eq!(
            did_you_mean(&["a", "b"]).unwrap(),
            "did you mean one of `a`, `b`?"
        );
    }
}
