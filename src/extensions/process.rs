//! Running one extension program: its input on stdin, its answer on stdout, its own process
//! group (killed with everything it started when it times out, when the run is cancelled,
//! or when the caller gives up on it), and a cap on what it may print.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::tools::CancelToken;

/// The most an extension may print on stdout (and on stderr, when captured).
pub const MAX_OUTPUT: u64 = 64 * 1024 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The program and its arguments.
    pub argv: Vec<OsString>,
    pub cwd: PathBuf,
    /// Set in the program's environment (over pi's own).
    pub env: Vec<(String, OsString)>,
    /// Written to its stdin, which is then closed.
    pub stdin: Vec<u8>,
    pub timeout: Option<Duration>,
    /// Keep stderr (else it goes to pi's stderr as it is written).
    pub capture_stderr: bool,
}

/// A program that ran to its end.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// Empty unless captured.
    pub stderr: Vec<u8>,
}

/// Why a program gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start it: {0}")]
    Spawn(std::io::Error),
    #[error("timed out after {} s", format_secs(*.0))]
    TimedOut(Duration),
    #[error("cancelled")]
    Cancelled,
    #[error("printed more than {} MiB", MAX_OUTPUT / 1024 / 1024)]
    TooLong,
    #[error("{0}")]
    Io(std::io::Error),
}

/// Seconds as a person writes them: `10`, `0.5`.
pub fn format_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{}", (s * 1000.0).round() / 1000.0)
    }
}

/// The process group of a running program: killed (SIGKILL) when dropped while armed.
struct Group {
    pid: Option<i32>,
}

impl Group {
    fn kill(&self) {
        if let Some(pid) = self.pid {
            // SAFETY: kill(2) takes plain integers; a stale id only makes it fail.
            unsafe {
                if libc::kill(-pid, libc::SIGKILL) != 0 {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn read_capped<R: tokio::io::AsyncRead + Unpin>(r: Option<R>) -> Result<Vec<u8>, RunError> {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let mut limited = r.take(MAX_OUTPUT + 1);
        limited.read_to_end(&mut buf).await.map_err(RunError::Io)?;
    }
    if buf.len() as u64 > MAX_OUTPUT {
        return Err(RunError::TooLong);
    }
    Ok(buf)
}

/// Runs the program to its end (or its timeout, or `cancel`).
pub async fn run(spec: &Spec, cancel: Option<&CancelToken>) -> Result<Finished, RunError> {
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(RunError::Spawn(std::io::Error::other("no program")));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if spec.capture_stderr {
            Stdio::piped()
        } else {
            Stdio::inherit()
        })
        .process_group(0)
        .kill_on_drop(true);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    let mut group = Group {
        pid: child.id().and_then(|p| i32::try_from(p).ok()),
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let input = spec.stdin.clone();
    let io = async {
        let write = async move {
            if let Some(mut w) = stdin {
                // A program that does not read its input closes the pipe: not an error.
                let _ = w.write_all(&input).await;
                let _ = w.shutdown().await;
            }
        };
        let (_, out, err) = tokio::join!(write, read_capped(stdout), read_capped(stderr));
        let (out, err) = (out?, err?);
        let status = child.wait().await.map_err(RunError::Io)?;
        Ok::<_, RunError>(Finished {
            status,
            stdout: out,
            stderr: err,
        })
    };
    let timed = async {
        match spec.timeout {
            Some(d) => match tokio::time::timeout(d, io).await {
                Ok(r) => r,
                Err(_) => Err(RunError::TimedOut(d)),
            },
            None => io.await,
        }
    };
    let never = std::future::pending::<()>();
    let result = tokio::select! {
        r = timed => r,
        () = async {
            match cancel {
                Some(c) => c.cancelled().await,
                None => never.await,
            }
        } => Err(RunError::Cancelled),
    };
    match &result {
        // The program ended: what it left running in the background is its business.
        Ok(_) => group.pid = None,
        Err(_) => group.kill(),
    }
    result
}

/// [`run`] from synchronous code (a runtime of its own).
pub fn run_blocking(spec: &Spec) -> Result<Finished, RunError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RunError::Io)?;
    rt.block_on(run(spec, None))
}

/// How a program's exit status reads: `exit status 3`, `killed by signal 9`.
pub fn describe_status(s: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "an unknown exit status".to_owned(),
    }
}
