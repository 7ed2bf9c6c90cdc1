//! Running one extension program: its input on stdin, its answer on stdout, its own process
//! group (killed with everything it started when it times out, when the run is cancelled,
//! or when the caller gives up on it), and a cap on what it may print.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::env::Policy;
use crate::CancelToken;

/// The most an extension may print on stdout (and on stderr, when captured).
pub(crate) const MAX_OUTPUT: u64 = 64 * 1024 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The program and its arguments.
    pub argv: Vec<OsString>,
    pub cwd: PathBuf,
    /// The program's environment, made from pi's ([`Policy`]: secret-looking variables
    /// left out by default).
    pub policy: Arc<Policy>,
    /// Set in the program's environment after the policy's.
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
pub(crate) fn format_secs(d: Duration) -> String {
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

/// What a reader collected.
#[derive(Default)]
struct Collected {
    bytes: Vec<u8>,
    too_long: bool,
}

/// Reads `r` into `into` until its end (more than [`MAX_OUTPUT`] bytes: marked too long).
fn collect<R: tokio::io::AsyncRead + Unpin + Send + 'static>(
    r: Option<R>,
    into: Arc<Mutex<Collected>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let Some(mut r) = r else {
            return;
        };
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match r.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let Ok(mut c) = into.lock() else {
                        return;
                    };
                    // Past the limit the rest is read and dropped, so the program is
                    // not stuck on a full pipe.
                    if c.too_long || c.bytes.len() + n > MAX_OUTPUT as usize {
                        c.too_long = true;
                        c.bytes = Vec::new();
                    } else {
                        c.bytes.extend_from_slice(&buf[..n]);
                    }
                }
            }
        }
    })
}

/// How long output is still read after the program exited (a background process it left
/// may keep its stdout open; what it writes later is not waited for).
const AFTER_EXIT: Duration = Duration::from_millis(100);

fn take(c: &Arc<Mutex<Collected>>) -> Result<Vec<u8>, RunError> {
    let mut c = match c.lock() {
        Ok(c) => c,
        Err(p) => p.into_inner(),
    };
    if c.too_long {
        return Err(RunError::TooLong);
    }
    Ok(std::mem::take(&mut c.bytes))
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
    spec.policy.apply(&mut cmd);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    let mut group = Group {
        pid: child.id().and_then(|p| i32::try_from(p).ok()),
    };
    let stdin = child.stdin.take();
    let out = Arc::new(Mutex::new(Collected::default()));
    let err = Arc::new(Mutex::new(Collected::default()));
    let readers = [
        collect(child.stdout.take(), out.clone()),
        collect(child.stderr.take(), err.clone()),
    ];
    let input = spec.stdin.clone();
    let io = async {
        let write = async move {
            if let Some(mut w) = stdin {
                // A program that does not read its input closes the pipe: not an error.
                let _ = w.write_all(&input).await;
                let _ = w.shutdown().await;
            }
        };
        let (_, status) = tokio::join!(write, child.wait());
        let status = status.map_err(RunError::Io)?;
        for r in readers {
            let _ = tokio::time::timeout(AFTER_EXIT, r).await;
        }
        Ok::<_, RunError>(Finished {
            status,
            stdout: take(&out)?,
            stderr: take(&err)?,
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
pub(crate) fn run_blocking(spec: &Spec) -> Result<Finished, RunError> {
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
