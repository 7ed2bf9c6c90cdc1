//! `pi … | head`: a reader that goes away ends every command quietly with status 0, whether it
//! was gone before the first write or leaves after a few bytes of a large output.

use std::io::Read;
use std::process::{Command, Output, Stdio};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;

/// How the reader of pi's stdout behaves.
#[derive(Clone, Copy, Debug)]
enum Reader {
    /// Closes its end before pi starts: the first write fails.
    GoneBefore,
    /// Reads a few bytes, then closes: a later write fails.
    LeavesEarly,
}

/// Runs `cmd` with stdout a pipe whose reader behaves as `reader`; returns the status and
/// stderr (stdout is the pipe's).
fn run_into(mut cmd: Command, stdin: Option<&[u8]>, reader: Reader) -> Output {
    let (mut r, wr) = std::io::pipe().unwrap();
    cmd.stdout(Stdio::from(wr)).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    if matches!(reader, Reader::GoneBefore) {
        drop(r);
        let mut child = cmd.spawn().unwrap();
        drop(cmd); // the parent's copy of the write end
        feed(&mut child, stdin);
        return child.wait_with_output().unwrap();
    }
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let feeder = stdin.map(|input| {
        let mut pipe = child.stdin.take().unwrap();
        let input = input.to_vec();
        std::thread::spawn(move || {
            // pi reads all of its input before writing; a failed write here is its business.
            let _ = std::io::Write::write_all(&mut pipe, &input);
        })
    });
    let mut some = [0u8; 16];
    let _ = r.read(&mut some).unwrap();
    drop(r);
    let out = child.wait_with_output().unwrap();
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    out
}

fn feed(child: &mut std::process::Child, stdin: Option<&[u8]>) {
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let _ = std::io::Write::write_all(&mut pipe, input);
    }
}

fn assert_quiet(args: &[&str], reader: Reader, o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "pi {args:?} ({reader:?}): {err}");
    assert!(
        !err.contains("error") && !err.contains("panicked") && !err.contains("Broken pipe"),
        "pi {args:?} ({reader:?}): {err}"
    );
}

/// Messages whose log, context and input are well over a pipe's buffer (64 KiB).
fn big_input(n: usize) -> String {
    (0..n)
        .flat_map(|k| {
            [
                user(&format!("question {k} {}", "q".repeat(400))),
                assistant(&format!("answer {k} {}", "a".repeat(400))),
            ]
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_command_with_output_ends_with_0_when_its_reader_goes_away() {
    let server = ModelServer::start();
    let w = crate::run_support::world(&server);
    let s = w.new_session();
    let sp = s.to_str().unwrap().to_owned();
    let input = big_input(200);
    w.ok_in(&["session", "append", &sp], &input);
    let mid = w
        .ok(&["session", "log", &sp, "-n", "100", "--filter", ".id", "-r"])
        .lines()
        .next()
        .unwrap()
        .to_owned();
    // Enough sessions for a long list, and prompts for a long prompt list and expansion.
    for k in 0..150 {
        w.ok(&[
            "session",
            "new",
            "--name",
            &format!("session {k} {}", "n".repeat(300)),
        ]);
    }
    for k in 0..150 {
        w.write(
            &format!("agent/prompts/p{k}.md"),
            format!(
                "---\ndescription: prompt {k} {}\n---\nBody $1",
                "d".repeat(300)
            ),
        );
    }
    w.write("agent/prompts/big.md", "word ".repeat(40_000));
    let input = input.into_bytes();
    let runs: Vec<(Vec<&str>, Option<&[u8]>)> = vec![
        (vec!["session", "new"], None),
        (vec!["session", "list", "--json"], None),
        (vec!["session", "list", "--format", "human"], None),
        (vec!["session", "log", &sp], None),
        (vec!["session", "log", &sp, "--filter", "."], None),
        (vec!["session", "tree", &sp, "--json"], None),
        (vec!["session", "tree", &sp, "--format", "human"], None),
        (vec!["session", "resume"], None),
        (vec!["session", "fork", &sp], None),
        (vec!["session", "check", &sp, "--json"], None),
        (vec!["session", "check", &sp, "--format", "human"], None),
        (vec!["session", "migrate", &sp], None),
        (vec!["session", "append", &sp], Some(&input)),
        (vec!["session", "append", &sp, "--dry-run"], Some(&input)),
        (vec!["session", "branch", &sp, &mid], None),
        (vec!["session", "label", &sp, &mid, "here"], None),
        (vec!["session", "name", &sp, "named"], None),
        (vec!["context", "build", &sp], None),
        (vec!["context", "build", &sp, "--format", "openai"], None),
        (
            vec![
                "context",
                "stats",
                &sp,
                "--json",
                "--context-window",
                "9000",
            ],
            None,
        ),
        (
            vec![
                "context",
                "stats",
                &sp,
                "--format",
                "human",
                "--context-window",
                "9000",
            ],
            None,
        ),
        (vec!["prompt", "list", "--json"], None),
        (vec!["prompt", "list", "--format", "human"], None),
        (vec!["prompt", "expand", "/big"], None),
        (vec!["prompt", "system"], None),
        (vec!["models", "--all"], None),
        (vec!["models", "--all", "--format", "human"], None),
        (
            vec!["compact", &sp, "--dry-run", "--context-window", "9000"],
            None,
        ),
        (
            vec!["compact", "--all", "--dry-run", "--context-window", "9000"],
            None,
        ),
        (vec!["--help"], None),
        (vec!["session", "log", "--help"], None),
        (vec!["--version"], None),
    ];
    for reader in [Reader::GoneBefore, Reader::LeavesEarly] {
        for (args, stdin) in &runs {
            let mut cmd = w.std_cmd();
            cmd.args(args);
            let o = run_into(cmd, *stdin, reader);
            assert_quiet(args, reader, &o);
        }
        // The agent's event stream and its text view, from a model that talks at length.
        for args in [
            ["run", "--json", "-p", "talk"],
            ["run", "-p", "talk", "--no-session"],
        ] {
            server.push(Reply::openai_text(&["x".repeat(100_000).as_str(), " done"]));
            let mut cmd = w.std_cmd();
            cmd.args(args);
            let o = run_into(cmd, None, reader);
            assert_quiet(&args, reader, &o);
        }
    }
    w.ok(&["session", "check", &sp]);
}
