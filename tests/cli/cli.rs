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
    for args in [
        vec!["session"],
        vec!["session", "log", "--no-such-flag"],
        vec!["session", "branch"],
        vec!["session", "log", "-n", "many"],
        vec!["session", "tree", "--format", "xml"],
    ] {
        let out = w.pi().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
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
    let out = w
        .pi()
        .env("PATH", &path)
        .args(["greet", "a b", "--flag"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "the program's exit status is pi's"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "greet: 2 args: a b --flag\n"
    );
    let out = w
        .pi()
        .env("PATH", &path)
        .args(["nothing-here"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown command 'nothing-here'") && err.contains("pi-nothing-here"),
        "{err}"
    );
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
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        "pi: error: no session file at /nonexistent/dir/file.jsonl\n"
    );
    let d = w.path("dir.jsonl");
    std::fs::create_dir_all(&d).unwrap();
    let out = w
        .pi()
        .args(["session", "log", d.to_str().unwrap()])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("pi: error: "), "{err}");
    assert!(
        !err.contains("backtrace") && !err.contains("panicked"),
        "{err}"
    );
}
