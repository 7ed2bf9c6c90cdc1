//! `pi completions`: the scripts are those committed in completions/, and bash, driven by
//! the committed script, completes session ids and entry ids through pi without pi writing
//! anything.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

#[test]
fn completions_prints_the_committed_scripts() {
    let w = World::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (shell, file) in [
        ("bash", "pi.bash"),
        ("zsh", "_pi"),
        ("fish", "pi.fish"),
        ("elvish", "pi.elv"),
        ("powershell", "pi.ps1"),
    ] {
        let script = w.ok(&["completions", shell]);
        assert!(script.contains("PI_COMPLETE"), "{shell}: {script}");
        assert_eq!(
            script,
            std::fs::read_to_string(root.join("completions").join(file)).unwrap(),
            "{shell}"
        );
    }
}

/// Every file under `dir`, with its size and modification time.
fn snapshot_of(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), m.len(), m.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Runs bash with the committed completion script and completes each command line (its
/// last word is the one completed); returns the candidates of each, one per line.
fn complete_in_bash(w: &World, lines: &[&[&str]]) -> Vec<Vec<String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("completions/pi.bash");
    let mut body = format!(
        "source {}\n\
         comp() {{\n  COMP_WORDS=(\"$@\"); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n  \
         COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; COMP_TYPE=9; COMPREPLY=()\n  \
         _clap_complete_pi pi \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n  \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"; echo '<end>'\n}}\n",
        shell_words::quote(&script.to_string_lossy())
    );
    for words in lines {
        body.push_str("comp ");
        body.push_str(&shell_words::join(*words));
        body.push('\n');
    }
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&body)
        .current_dir(w.proj())
        .env_clear()
        .envs(w.envs())
        .env("PATH", path)
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut results: Vec<Vec<String>> = text
        .split("<end>\n")
        .map(|block| {
            block
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect();
    results.pop();
    assert_eq!(results.len(), lines.len(), "{text}");
    // An empty word completes options too; those are clap's business, not this test's.
    for r in &mut results {
        r.retain(|c| !c.starts_with('-'));
    }
    results
}

#[test]
fn bash_completes_session_ids_and_entry_ids() {
    let w = World::new();
    let other = w.new_session();
    let path = w.new_session();
    let s = path.to_str().unwrap();
    w.ok_in(
        &["session", "append", s],
        &format!("{}\n{}\n", user("first question"), assistant("an answer")),
    );
    let session_id = |p: &Path| {
        let header = std::fs::read_to_string(p).unwrap();
        jsonl(header.lines().next().unwrap())[0]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (id, other_id) = (session_id(&path), session_id(&other));
    let entries: Vec<String> = w
        .ok(&["session", "log", s, "--filter", ".id", "-r"])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(entries.len(), 2);
    // Ids that tell the two sessions apart, and the first entry.
    let unique = |a: &str, b: &str| {
        let n = (1..=a.len()).find(|&n| !b.starts_with(&a[..n])).unwrap();
        a[..n].to_owned()
    };
    let id_prefix = unique(&id, &other_id);
    let entry_prefix = unique(&entries[0], &entries[1]);
    // Sessions complete to their short ids (the ends of their ids), as `pi session list`
    // shows them; a prefix of an id completes to the whole id.
    let short = jsonl(&w.ok(&["session", "list"]))
        .into_iter()
        .find(|r| r["id"] == id.as_str())
        .unwrap()["shortId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(short.len() < id.len() && id.ends_with(&short));
    let longer = &id[..id_prefix.len() + 1];
    let before = snapshot_of(w.root());
    let got = complete_in_bash(
        &w,
        &[
            &["pi", "session", "log", &id_prefix],
            &["pi", "session", "branch", &id_prefix, &entry_prefix],
            &["pi", "session", "label", &id, ""],
            &["pi", "session", "log", "--leaf", ""],
            &["pi", "session", "log", &id, "--leaf", ""],
            &["pi", "session", "log", "--type", "message,comp"],
            &["pi", "compact", "--hook", ""],
            &["pi", "sess"],
            &["pi", "session", "tree", "-s", &id_prefix],
            &["pi", "session", "name", longer],
            &["pi", "session", "label", "-s", &short, &entry_prefix],
            &["pi", "session", "label", &entries[0]],
            &["pi", "session", "log", &short[..5]],
        ],
    );
    let newest_first = |v: &[String]| v.iter().rev().cloned().collect::<Vec<_>>();
    // A prefix of the id completes to the whole id, the start of a short id to the short id.
    assert_eq!(got[0], [id.as_str()]);
    assert_eq!(got[1], [entries[0].as_str()]);
    assert_eq!(got[2], newest_first(&entries));
    // Without a session on the line: the most recent one of the directory.
    assert_eq!(got[3], newest_first(&entries));
    assert_eq!(got[4], newest_first(&entries));
    assert_eq!(got[5], ["message,compaction"]);
    assert_eq!(got[6], ["session_before_compact="]);
    assert_eq!(got[7], ["session"]);
    assert_eq!(got[8], [id.as_str()]);
    assert_eq!(got[9], [id.as_str()]);
    // With -s, the first positional is the entry.
    assert_eq!(got[10], [entries[0].as_str()]);
    // Without a session, the first word of `label` may be an entry of the most recent one.
    assert_eq!(got[11], [entries[0].as_str()]);
    assert_eq!(got[12], [short.as_str()]);
    // Completing wrote nothing: no recovery, no cache, no settings.
    assert_eq!(snapshot_of(w.root()), before);
}

/// `pi chat` is completed, and so are the sessions it takes (as `pi run`'s).
#[test]
fn bash_completes_chat_and_its_sessions() {
    let w = World::new();
    let path = w.new_session();
    let id = jsonl(
        std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = complete_in_bash(&w, &[&["pi", "cha"], &["pi", "chat", &id[..8]]]);
    assert_eq!(r[0], ["chat"]);
    assert_eq!(r[1].len(), 1, "{r:?}");
    assert!(id.starts_with(&r[1][0]) || id.ends_with(&r[1][0]), "{r:?}");
}
