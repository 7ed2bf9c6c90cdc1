//! The command line as a whole: help, version, usage errors, extensions on PATH.

use crate::common::*;

#[test]
fn version_and_help() {
    let w = World::new();
    let v = w.ok(&["--version"]);
    assert_eq!(v, format!("pi {}\n", env!("CARGO_PKG_VERSION")));
    let help = w.ok(&["--help"]);
    for needle in ["session", "Exit status:", "pi-foo"] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
    let help = w.ok(&["session", "log", "--help"]);
    assert!(
        help.contains("--filter <JQ>") && help.contains("Exit status:"),
        "{help}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let w = World::new();
    let shown = w.snaps(&[
        &["session"],
        &["session", "log", "--no-such-flag"],
        &["session", "name"],
        &["session", "log", "-n", "many"],
        &["session", "tree", "--format", "xml"],
    ]);
    insta::assert_snapshot!(shown, @"
    $ pi session
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: 'pi session' requires a command
      usage: pi session [OPTIONS] <COMMAND>
      hint: the commands are new, list, log, append, branch, tree, show, export, search, resume, use, label, edit, name, fork, check, migrate, import, gc, help; `pi help session` describes them

    $ pi session log --no-such-flag
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unexpected argument '--no-such-flag' found
      usage: pi session log [OPTIONS] [SESSION]
      hint: to pass '--no-such-flag' as a value, use '-- --no-such-flag'
      hint: for more information, try '--help'

    $ pi session name
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the following required arguments were not provided: <NAME>
      usage: pi session name [SESSION] <NAME>
      hint: for more information, try '--help'

    $ pi session log -n many
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid value 'many' for '--max-count <N>': invalid digit found in string
      hint: for more information, try '--help'

    $ pi session tree --format xml
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid value 'xml' for '--format <FORMAT>'
      hint: possible values: auto, json, human
      hint: for more information, try '--help'
    ");
}

#[test]
fn unknown_commands_run_pi_programs_from_path() {
    let w = World::new();
    let bin = w.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("pi-greet");
    std::fs::write(&script, "#!/bin/sh\necho \"greet: $# args: $*\"\nexit 7\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    // The program gets the arguments as given, and its exit status is pi's.
    let out = w
        .pi()
        .env("PATH", &path)
        .args(["greet", "a b", "--flag"])
        .output()
        .unwrap();
    insta::assert_snapshot!(w.shown(&out), @"
    status: 7
    ----- stdout -----
    greet: 2 args: a b --flag
    ----- stderr -----
    ");
    let out = w
        .pi()
        .env("PATH", &path)
        .args(["nothing-here"])
        .output()
        .unwrap();
    insta::assert_snapshot!(w.shown(&out), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown command 'nothing-here'
      hint: the commands are session, prompt, context, compact, usage, models, run, chat, trust, completions, man, help; `pi-nothing-here` was not found on PATH either
    ");
}

#[test]
fn errors_have_causes_and_no_backtraces() {
    let w = World::new();
    let out = w
        .pi()
        .env("RUST_BACKTRACE", "1")
        .args(["session", "log", "/nonexistent/dir/file.jsonl"])
        .output()
        .unwrap();
    insta::assert_snapshot!(w.shown(&out), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: no session file at /nonexistent/dir/file.jsonl
    ");
    // A directory is not a session file either.
    let d = w.path("dir.jsonl");
    std::fs::create_dir_all(&d).unwrap();
    let out = w
        .pi()
        .env("RUST_BACKTRACE", "1")
        .args(["session", "log", d.to_str().unwrap()])
        .output()
        .unwrap();
    insta::assert_snapshot!(w.shown(&out), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: [ROOT]/dir.jsonl is a directory, not a session file
      hint: name a session file in it; `pi session list --session-dir [ROOT]/dir.jsonl` lists the sessions it holds
    ");
}
