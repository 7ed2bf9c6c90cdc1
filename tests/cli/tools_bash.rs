//! The bash tool beyond the recorded cases: progress updates, the 100 ms return after the
//! shell exits, process-group killing on timeout, cancellation and abandonment, the full
//! output file, bounded memory and the environment. Every test that starts a background
//! process checks it is gone (or kills it) before returning.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use pi_tools::{self as tools, CancelToken, ToolName};

use crate::tools_support::{Tree, call, call_with_updates, runtime, text};

/// Whether a process exists (signal 0).
fn alive(pid: i32) -> bool {
    // A zombie has died: only its parent (this test process, whose runtime is idle) has not
    // collected it yet.
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'))
    });
    // SAFETY: kill with signal 0 only checks for the process.
    !zombie && unsafe { libc::kill(pid, 0) == 0 }
}

fn read_pid(t: &Tree) -> i32 {
    let s = std::fs::read_to_string(t.proj().join("pid")).unwrap();
    s.trim().parse().unwrap()
}

/// Waits up to two seconds for a killed process to disappear (it may be a zombie of the
/// shell for a moment).
fn gone(pid: i32) -> bool {
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn progress_updates_start_empty_and_stream_the_tail() {
    let t = Tree::new();
    let (r, updates) = call_with_updates(
        t.ctx(),
        "bash",
        &json!({"command": "echo one; sleep 0.3; echo two; sleep 0.3; echo three"}),
        CancelToken::new(),
    );
    assert_eq!(text(&r), "one\ntwo\nthree\n");
    assert!(updates[0].content.is_empty() && updates[0].details.is_none());
    let texts: Vec<String> = updates[1..]
        .iter()
        .map(|u| match &u.content[..] {
            [pi_tools::Content::Text { text }] => text.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(texts.len() >= 3, "{texts:?}");
    assert_eq!(texts[0], "one\n");
    assert_eq!(texts.last().unwrap(), "one\ntwo\nthree\n");
    // Each snapshot extends the previous one.
    for w in texts.windows(2) {
        assert!(w[1].starts_with(&w[0]), "{w:?}");
    }
    // Without truncation the details carry neither key (upstream's all-undefined object).
    assert_eq!(updates[1].details, Some(json!({})));
}

#[test]
fn progress_updates_are_throttled() {
    let t = Tree::new();
    let start = Instant::now();
    let (r, updates) = call_with_updates(
        t.ctx(),
        "bash",
        &json!({"command": "for i in $(seq 1 40); do echo $i; sleep 0.02; done"}),
        CancelToken::new(),
    );
    let elapsed = start.elapsed().as_millis() as usize;
    assert!(text(&r).ends_with("39\n40\n"));
    // At most one update per 100 ms (plus the first empty one and the final flush).
    assert!(
        updates.len() <= elapsed / 100 + 3,
        "{} updates in {elapsed} ms",
        updates.len()
    );
}

#[test]
fn returns_soon_after_exit_while_background_jobs_hold_the_output() {
    let t = Tree::new();
    let start = Instant::now();
    let r = t.call(
        "bash",
        json!({"command": "sleep 5 & echo $! > pid; echo hi"}),
    );
    let took = start.elapsed();
    assert_eq!(text(&r), "hi\n");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    let pid = read_pid(&t);
    // Upstream leaves background jobs running after a normal exit; so do we.
    assert!(alive(pid));
    // SAFETY: the pid is our own background sleep.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert!(gone(pid));
}

#[test]
fn timeout_kills_the_process_group() {
    let t = Tree::new();
    let r = t.call(
        "bash",
        json!({"command": "sleep 30 & echo $! > pid; echo waiting; sleep 30", "timeout": 0.5}),
    );
    assert!(r.is_error);
    assert_eq!(text(&r), "waiting\n\n\nCommand timed out after 0.5 seconds");
    assert!(gone(read_pid(&t)), "background job survived the timeout");
}

#[test]
fn cancellation_kills_the_process_group() {
    let t = Tree::new();
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        c2.cancel();
    });
    let start = Instant::now();
    let (r, _) = call_with_updates(
        t.ctx(),
        "bash",
        &json!({"command": "sleep 30 & echo $! > pid; echo started; sleep 30"}),
        cancel,
    );
    killer.join().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(r.is_error);
    assert_eq!(text(&r), "started\n\n\nCommand aborted");
    assert!(gone(read_pid(&t)), "background job survived cancellation");
}

#[test]
fn cancelled_before_start_runs_nothing() {
    let t = Tree::new();
    let cancel = CancelToken::new();
    cancel.cancel();
    let (r, _) = call_with_updates(t.ctx(), "bash", &json!({"command": "touch ran"}), cancel);
    assert_eq!(text(&r), "Command aborted");
    assert!(!t.proj().join("ran").exists());
}

#[test]
fn abandoning_the_call_kills_the_process_group() {
    let t = Tree::new();
    let ctx = Arc::new(t.ctx());
    let args = json!({"command": "echo $$ > pid; sleep 30"});
    let rt = runtime();
    let outcome = rt.block_on(async {
        let call = tools::execute(ctx, "bash", &args, CancelToken::new(), None);
        tokio::time::timeout(Duration::from_millis(500), call).await
    });
    assert!(
        outcome.is_err(),
        "the command should still have been running"
    );
    assert!(gone(read_pid(&t)), "shell survived its dropped call");
}

#[test]
fn full_output_goes_to_a_temp_file() {
    let t = Tree::new();
    let r = t.call("bash", json!({"command": "seq 1 3000"}));
    assert!(!r.is_error);
    let details = r.details.clone().unwrap();
    let path = details["fullOutputPath"].as_str().unwrap().to_owned();
    assert!(
        path.starts_with(t.root.join("tmp/pi-bash-").to_str().unwrap()),
        "{path}"
    );
    assert!(path.ends_with(".log"));
    let full = std::fs::read_to_string(&path).unwrap();
    let want: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(full, want);
    assert!(text(&r).ends_with(&format!(
        "[Showing lines 1002-3001 of 3001. Full output: {path}]"
    )));
    assert_eq!(details["truncation"]["totalLines"], json!(3001));
    assert_eq!(details["truncation"]["truncatedBy"], json!("lines"));
}

#[test]
fn temp_file_keeps_raw_bytes() {
    let t = Tree::new();
    // 60000 bytes that are not UTF-8, in lines.
    let r = t.call(
        "bash",
        json!({"command": "yes \"$(printf '\\377%.0s' $(seq 1 99))\" | head -n 600"}),
    );
    let path = r.details.clone().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_owned();
    let raw = std::fs::read(&path).unwrap();
    assert_eq!(raw.len(), 60000);
    assert!(
        raw.chunks(100)
            .all(|l| l[..99].iter().all(|b| *b == 0xFF) && l[99] == b'\n')
    );
    // The model sees replacement characters.
    assert!(text(&r).starts_with('\u{FFFD}'));
}

#[test]
fn huge_output_is_bounded() {
    let t = Tree::new();
    let r = t.call(
        "bash",
        json!({"command": "yes 0123456789 | head -c 20000000"}),
    );
    assert!(!r.is_error);
    let d = r.details.clone().unwrap();
    assert_eq!(d["truncation"]["totalBytes"], json!(20_000_000));
    assert!(d["truncation"]["outputBytes"].as_u64().unwrap() <= 51200);
    let path = d["fullOutputPath"].as_str().unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().len(), 20_000_000);
}

#[test]
fn stdin_is_closed_and_output_keeps_write_order() {
    let t = Tree::new();
    let r = t.call(
        "bash",
        json!({"command": "cat; echo a; echo b >&2; echo c; echo d >&2"}),
    );
    assert_eq!(text(&r), "a\nb\nc\nd\n");
}

#[test]
fn agent_bin_dir_comes_first_on_path() {
    let t = Tree::new();
    let bin = t.root.join("agent-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("pi-test-tool");
    std::fs::write(&tool, "#!/bin/sh\necho from-agent-bin\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut ctx = t.ctx();
    ctx.bin_dir = Some(bin.clone());
    let r = call(
        ctx,
        "bash",
        &json!({"command": "pi-test-tool; echo \"$PATH\""}),
    );
    let out = text(&r);
    assert!(out.starts_with("from-agent-bin\n"), "{out}");
    assert!(
        out.lines()
            .nth(1)
            .unwrap()
            .starts_with(bin.to_str().unwrap())
    );
}

#[test]
fn custom_shell_is_used() {
    let t = Tree::new();
    let mut ctx = t.ctx();
    ctx.shell_path = Some("/bin/sh".into());
    let r = call(ctx, "bash", &json!({"command": "echo $0"}));
    assert_eq!(text(&r), "/bin/sh\n");
}

#[test]
fn tool_is_declared_with_its_limits() {
    let d = ToolName::Bash.definition();
    assert_eq!(d.name, "bash");
    assert!(d.description.contains("2000 lines") && d.description.contains("50KB"));
}
