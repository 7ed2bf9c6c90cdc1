//! `pi help`, `pi GROUP help`, what `pi` alone does, suggestions for mistyped commands,
//! clap's errors in pi's form, and `--color`.

use crate::common::*;
use crate::terminal::{on_terminal, uncolored};

fn stdout_of(w: &World, args: &[&str]) -> String {
    let out = w.pi().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn help_command_prints_the_long_help() {
    let w = World::new();
    let long = stdout_of(&w, &["session", "log", "--help"]);
    assert!(long.contains("Exit status:"), "{long}");
    assert_eq!(stdout_of(&w, &["help", "session", "log"]), long);
    assert_eq!(stdout_of(&w, &["session", "help", "log"]), long);
    assert_eq!(
        stdout_of(&w, &["--session-dir", "x", "help", "session", "log"]),
        long
    );
    assert_eq!(stdout_of(&w, &["help"]), stdout_of(&w, &["--help"]));
    assert_eq!(
        stdout_of(&w, &["prompt", "help", "expand"]),
        stdout_of(&w, &["prompt", "expand", "--help"])
    );
    // The help lists `help` and the new commands.
    let top = stdout_of(&w, &["--help"]);
    for needle in ["  help ", "  completions ", "  man ", "--color <WHEN>"] {
        assert!(top.contains(needle), "{needle}: {top}");
    }
}

#[test]
fn help_of_an_extension_runs_it_with_help() {
    let w = World::new();
    let bin = w.path("bin");
    w.write("bin/pi-greet", "#!/bin/sh\necho \"greet got: $*\"\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("pi-greet"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = w
        .pi()
        .env("PATH", &path)
        .args(["help", "greet"])
        .output()
        .unwrap();
    insta::assert_snapshot!(w.shown(&out), @"
    status: 0
    ----- stdout -----
    greet got: --help
    ----- stderr -----
    ");
    // An extension is a candidate for "did you mean" too.
    let out = w.pi().env("PATH", &path).args(["gret"]).output().unwrap();
    insta::assert_snapshot!(w.shown(&out), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown command 'gret'
      hint: did you mean `greet`?
    ");
}

#[test]
fn mistyped_commands_get_suggestions() {
    let w = World::new();
    insta::assert_snapshot!(w.snaps(&[
        &["sesion", "list"],
        &["co"],
        &["help", "sesion"],
        &["session", "lgo"],
        &["help", "session", "tre"],
        &["prompt", "exapnd", "/x"],
        &["xyzzy"],
    ]), @"
    $ pi sesion list
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown command 'sesion'
      hint: did you mean `session`?

    $ pi co
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown command 'co'
      hint: did you mean one of `compact`, `completions`, `context`?

    $ pi help sesion
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown command 'sesion'
      usage: pi [OPTIONS] <COMMAND>
      hint: did you mean `session`?
      hint: for more information, try '--help'

    $ pi session lgo
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown command 'lgo'
      usage: pi session [OPTIONS] <COMMAND>
      hint: did you mean `log`?
      hint: for more information, try '--help'

    $ pi help session tre
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown command 'tre'
      usage: pi session [OPTIONS] <COMMAND>
      hint: did you mean `tree`?
      hint: for more information, try '--help'

    $ pi prompt exapnd /x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown command 'exapnd'
      usage: pi prompt [OPTIONS] <COMMAND>
      hint: did you mean `expand`?
      hint: for more information, try '--help'

    $ pi xyzzy
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown command 'xyzzy'
      hint: the commands are session, prompt, context, compact, usage, models, run, chat, trust, completions, man, help; `pi-xyzzy` was not found on PATH either
    ");
}

#[test]
fn no_command_is_help_on_a_terminal_and_an_error_in_a_pipe() {
    let w = World::new();
    insta::assert_snapshot!(w.snaps(&[&[], &["session"], &["context", "--session-dir", "x"]]), @"
    $ pi 
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: 'pi' requires a command
      usage: pi [OPTIONS] <COMMAND>
      hint: the commands are session, prompt, context, compact, usage, models, run, chat, trust, completions, man, help; `pi help` describes them

    $ pi session
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: 'pi session' requires a command
      usage: pi session [OPTIONS] <COMMAND>
      hint: the commands are new, list, log, append, branch, tree, show, export, search, resume, use, label, edit, name, fork, check, migrate, import, gc, help; `pi help session` describes them

    $ pi context --session-dir x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: 'pi context' requires a command
      usage: pi context [OPTIONS] <COMMAND>
      hint: the commands are build, stats, help; `pi help context` describes them
    ");
    // On a terminal: the short help, status 0, as cargo does.
    let mut cmd = w.std_cmd();
    cmd.env("COLUMNS", COLUMNS);
    let (status, text) = on_terminal(cmd);
    assert_eq!(status, 0, "{text}");
    let text = uncolored(&text);
    assert!(
        text.starts_with("Scriptable memory for coding agents\n"),
        "{text}"
    );
    assert!(text.contains("Usage: pi [OPTIONS] <COMMAND>"), "{text}");
    assert!(!text.contains("error"), "{text}");
    let mut cmd = w.std_cmd();
    cmd.arg("session");
    let (status, text) = on_terminal(cmd);
    assert_eq!(status, 0, "{text}");
    assert!(
        uncolored(&text).contains("Usage: pi session [OPTIONS] <COMMAND>"),
        "{text}"
    );
}

/// Every kind of error clap reports comes out as `pi: error: …` with indented usage and
/// hints; help and version still go to stdout with status 0.
#[test]
fn clap_errors_in_pis_form() {
    let w = World::new();
    insta::assert_snapshot!(w.snaps(&[
        &["session", "log", "--no-such-flag"],
        &["session", "log", "--leaf"],
        &["session", "name"],
        &["session", "log", "-n", "many"],
        &["session", "tree", "--format", "xml"],
        &["session", "branch", "s", "e", "--summary", "x", "--summarize"],
        &["session", "log", "a", "b"],
        &["session", "log", "--lef", "x"],
        &["session", "list", "--color", "sometimes"],
    ]), @"
    $ pi session log --no-such-flag
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unexpected argument '--no-such-flag' found
      usage: pi session log [OPTIONS] [SESSION]
      hint: to pass '--no-such-flag' as a value, use '-- --no-such-flag'
      hint: for more information, try '--help'

    $ pi session log --leaf
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: a value is required for '--leaf <ID>' but none was supplied
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

    $ pi session branch s e --summary x --summarize
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the argument '--summary <TEXT>' cannot be used with '--summarize'
      usage: pi session branch --summary <TEXT> <SESSION> <ENTRY>
      hint: for more information, try '--help'

    $ pi session log a b
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unexpected argument 'b' found
      usage: pi session log [OPTIONS] [SESSION]
      hint: for more information, try '--help'

    $ pi session log --lef x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unexpected argument '--lef' found
      usage: pi session log --leaf <ID> [SESSION]
      hint: a similar argument exists: '--leaf'
      hint: for more information, try '--help'

    $ pi session list --color sometimes
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid value 'sometimes' for '--color <WHEN>'
      hint: possible values: auto, always, never
      hint: for more information, try '--help'
    ");
    let out = w.pi().args(["session", "--version"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("pi-session {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert!(out.stderr.is_empty());
}

#[test]
fn color_flag_decides_over_the_terminal_and_no_color() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap();
    w.ok_in(&["session", "append", s], &format!("{}\n", user("hello")));
    let esc = |t: &str| t.contains('\u{1b}') || t.contains('␛');
    let tree = |color: Option<&str>, no_color: bool, terminal: bool| -> String {
        let mut cmd = w.std_cmd();
        cmd.args(["session", "tree", s, "--format", "human"]);
        if let Some(c) = color {
            cmd.args(["--color", c]);
        }
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        if terminal {
            on_terminal(cmd).1
        } else {
            String::from_utf8(cmd.output().unwrap().stdout).unwrap()
        }
    };
    // auto: a terminal gets colors, a pipe none, NO_COLOR none.
    assert!(esc(&tree(None, false, true)));
    assert!(!esc(&tree(None, false, false)));
    assert!(!esc(&tree(None, true, true)));
    assert!(!esc(&tree(Some("auto"), true, true)));
    // always: also a pipe, whatever NO_COLOR says.
    assert!(esc(&tree(Some("always"), false, false)));
    assert!(esc(&tree(Some("always"), true, false)));
    // never: not even a terminal.
    assert!(!esc(&tree(Some("never"), false, true)));
    // The flag goes anywhere, as a global option; the last one wins.
    let out = w
        .pi()
        .args([
            "--color=never",
            "session",
            "list",
            "--format",
            "human",
            "--color",
            "always",
        ])
        .output()
        .unwrap();
    assert!(esc(&String::from_utf8(out.stdout).unwrap()));
    // Colored and plain views have the same text.
    assert_eq!(
        uncolored(&tree(Some("always"), false, false).replace('\u{1b}', "␛")),
        tree(Some("never"), false, false)
    );
}

/// Every command's help ends with examples from its page (at least two, at most three), the
/// global options come under their own heading after the command's own, and every manual
/// page of a command carries its examples.
#[test]
fn every_help_ends_with_examples() {
    let w = World::new();
    let top = w.ok(&["--help"]);
    let mut commands: Vec<Vec<String>> = vec![vec![]];
    let groups = ["session", "prompt", "context"];
    for line in top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
    {
        let Some(name) = line.split_whitespace().next() else {
            break;
        };
        if !line.starts_with("  ") || line.starts_with("   ") || name == "help" {
            if line.is_empty() {
                break;
            }
            continue;
        }
        commands.push(vec![name.to_owned()]);
        if groups.contains(&name) {
            let sub = w.ok(&[name, "--help"]);
            for l in sub
                .lines()
                .skip_while(|l| !l.starts_with("Commands:"))
                .skip(1)
            {
                let Some(s) = l.split_whitespace().next() else {
                    break;
                };
                // A description's continuation is indented further.
                if s != "help" && !l.starts_with("   ") {
                    commands.push(vec![name.to_owned(), s.to_owned()]);
                }
            }
        }
    }
    assert!(commands.len() > 30, "{commands:?}");
    commands.push(vec!["help".to_owned()]);
    for c in &commands {
        let args: Vec<&str> = c.iter().map(String::as_str).chain(["--help"]).collect();
        let help = w.ok(&args);
        let ex = help
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{c:?}: no examples\n{help}"));
        let n = ex.lines().filter(|l| l.starts_with("  $ ")).count();
        assert!((2..=3).contains(&n), "{c:?}: {n} examples\n{ex}");
        let short = w.ok(&c
            .iter()
            .map(String::as_str)
            .chain(["-h"])
            .collect::<Vec<_>>());
        assert!(short.contains("\nExamples:\n  $ "), "{c:?}: -h\n{short}");
        if !c.is_empty() {
            let own = help.find("\nOptions:\n");
            let global = help.find("\nGlobal options:\n");
            assert!(global.is_some(), "{c:?}\n{help}");
            assert!(own.is_none() || own < global, "{c:?}\n{help}");
        }
        let page = format!(
            "pi{}",
            c.iter().map(|s| format!("-{s}")).collect::<String>()
        );
        let man = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("man/man1/{page}.1")),
        )
        .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(man.contains(".SH EXAMPLES"), "{page}");
    }
}
