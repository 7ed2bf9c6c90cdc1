//! `bash {command, timeout?}`: runs `<shell> -c <command>` in the working directory, in a
//! process group of its own, with stdin closed and stdout and stderr merged in arrival order.
//!
//! Output is kept in bounded memory: a decoded tail of about 100KB (enough for the last
//! 2000 lines / 50KB shown to the model) plus running counts of all lines and bytes. Once the
//! output passes either limit, everything (raw bytes, including what came before) goes to
//! `<temp dir>/pi-bash-<16 hex>.log` (0600), named in the truncation notice; when the run
//! ends, [`remove_unreferenced_logs`] deletes those its session does not mention. The shell
//! gets the environment of [`ToolContext::env_policy`]. Progress snapshots go to
//! the update callback at most every 100 ms. After the shell exits, output still arriving is
//! read for up to 100 ms (background jobs holding the pipes open do not delay the result).
//! A timeout or cancellation kills the whole process group.

use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use super::path::io_code;
use super::text::Utf8Decoder;
use super::truncate::{
    DEFAULT_MAX_BYTES, Limits, TruncatedBy, Truncation, format_size, truncate_tail,
};
use super::{CancelToken, Content, ToolContext, ToolError, ToolOutput};
use pi_base::js;

#[derive(Debug, Clone, Deserialize)]
pub struct BashArgs {
    pub command: String,
    #[serde(default)]
    pub timeout: Option<f64>,
}

const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
const EXIT_GRACE: Duration = Duration::from_millis(100);

// ---------------------------------------------------------------------------------------
// Process groups

fn running() -> &'static Mutex<HashSet<i32>> {
    static RUNNING: OnceLock<Mutex<HashSet<i32>>> = OnceLock::new();
    RUNNING.get_or_init(|| Mutex::new(HashSet::new()))
}

fn kill_group(pid: i32) {
    // SAFETY: kill(2) takes plain integers; a stale or invalid id only makes it fail.
    unsafe {
        if libc::kill(-pid, libc::SIGKILL) != 0 {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Kills the process groups of all commands still running (for the agent's SIGTERM /
/// SIGHUP handling: upstream kills its detached children on those signals).
pub fn kill_all_running() {
    let pids: Vec<i32> = running()
        .lock()
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default();
    for pid in pids {
        kill_group(pid);
    }
}

/// A running command's process group: killed if the run is abandoned (its future dropped)
/// before the command finished.
struct Group {
    pid: i32,
    armed: bool,
}

impl Group {
    fn new(pid: i32) -> Group {
        if let Ok(mut s) = running().lock() {
            s.insert(pid);
        }
        Group { pid, armed: true }
    }

    fn kill(&self) {
        kill_group(self.pid);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.armed {
            kill_group(self.pid);
        }
        if let Ok(mut s) = running().lock() {
            s.remove(&self.pid);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Full-output files

/// The full-output files this process made.
fn logs() -> &'static Mutex<Vec<PathBuf>> {
    static LOGS: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    LOGS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Whether the file at `path` contains one of `needles` (read in blocks: any size).
fn file_mentions(path: &Path, needles: &[Vec<u8>]) -> std::io::Result<bool> {
    use std::io::Read;
    let longest = needles.iter().map(Vec::len).max().unwrap_or(0);
    if longest == 0 {
        return Ok(false);
    }
    let mut f = File::open(path)?;
    let mut buf: Vec<u8> = Vec::new();
    let mut block = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut block)?;
        if n == 0 {
            return Ok(false);
        }
        buf.extend_from_slice(&block[..n]);
        if needles
            .iter()
            .any(|nd| memchr::memmem::find(&buf, nd).is_some())
        {
            return Ok(true);
        }
        // Keep what a needle cut at the block's end could start with.
        let keep = buf.len().min(longest - 1);
        buf.drain(..buf.len() - keep);
    }
}

/// Removes the full-output files of this process's commands that `session` does not
/// mention (all of them without a session): called when a run ends. The session names a
/// file in a tool result (`fullOutputPath`, the notice) once it was recorded.
pub fn remove_unreferenced_logs(session: Option<&Path>) {
    let made: Vec<PathBuf> = match logs().lock() {
        Ok(mut l) => std::mem::take(&mut *l),
        Err(_) => return,
    };
    for log in made {
        let text = log.to_string_lossy().into_owned();
        let mut needles = vec![text.as_bytes().to_vec()];
        if let Ok(quoted) = serde_json::to_string(&text) {
            needles.push(quoted.trim_matches('"').as_bytes().to_vec());
        }
        let keep = session.is_some_and(|s| file_mentions(s, &needles).unwrap_or(true));
        if !keep {
            let _ = std::fs::remove_file(&log);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Output

/// Streamed output with bounded memory (upstream's output accumulator).
pub(crate) struct Accumulator {
    limits: Limits,
    max_rolling: usize,
    decoder: Utf8Decoder,
    raw_chunks: Vec<Vec<u8>>,
    tail: String,
    tail_at_line_start: bool,
    total_raw: usize,
    total_bytes: usize,
    total_lines: usize,
    last_line_bytes: usize,
    temp_dir: PathBuf,
    temp: Option<Result<(PathBuf, Option<File>), String>>,
}

/// The output as it stands: the tail shown to the model and its truncation record.
pub struct Snapshot {
    pub content: String,
    pub truncation: Truncation,
    /// The temp file with the full output, or why it could not be made.
    pub full_output: Option<Result<PathBuf, String>>,
}

impl Accumulator {
    pub(crate) fn new(temp_dir: &Path) -> Accumulator {
        let limits = Limits::default();
        Accumulator {
            limits,
            max_rolling: (limits.max_bytes * 2).max(1),
            decoder: Utf8Decoder::new(),
            raw_chunks: Vec::new(),
            tail: String::new(),
            tail_at_line_start: true,
            total_raw: 0,
            total_bytes: 0,
            total_lines: 1,
            last_line_bytes: 0,
            temp_dir: temp_dir.to_path_buf(),
            temp: None,
        }
    }

    pub(crate) fn append(&mut self, data: &[u8]) {
        self.total_raw += data.len();
        let mut text = String::new();
        self.decoder.decode(data, &mut text);
        self.append_text(&text);
        if self.temp.is_some() || self.needs_temp() {
            self.ensure_temp();
            self.write_temp(data);
        } else if !data.is_empty() {
            self.raw_chunks.push(data.to_vec());
        }
    }

    pub(crate) fn finish(&mut self) {
        let mut text = String::new();
        self.decoder.finish(&mut text);
        self.append_text(&text);
        if self.needs_temp() {
            self.ensure_temp();
        }
        if let Some(Ok((_, Some(f)))) = &mut self.temp {
            let _ = f.flush();
        }
    }

    /// Bytes of the last line of the whole output (after the last newline).
    pub(crate) fn last_line_bytes(&self) -> usize {
        self.last_line_bytes
    }

    fn append_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.total_bytes += text.len();
        self.tail.push_str(text);
        if self.tail.len() > self.max_rolling * 2 {
            self.trim_tail();
        }
        let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        match text.rfind('\n') {
            None => self.last_line_bytes += text.len(),
            Some(i) => {
                self.total_lines += newlines;
                self.last_line_bytes = text.len() - i - 1;
            }
        }
    }

    fn trim_tail(&mut self) {
        if self.tail.len() <= self.max_rolling {
            return;
        }
        let mut start = self.tail.len() - self.max_rolling;
        while !self.tail.is_char_boundary(start) {
            start += 1;
        }
        if start > 0 {
            self.tail_at_line_start = self.tail.as_bytes()[start - 1] == b'\n';
        }
        self.tail = self.tail[start..].to_owned();
    }

    fn snapshot_text(&self) -> &str {
        if self.tail_at_line_start {
            return &self.tail;
        }
        match self.tail.find('\n') {
            Some(i) => &self.tail[i + 1..],
            None => &self.tail,
        }
    }

    fn needs_temp(&self) -> bool {
        self.total_raw > self.limits.max_bytes
            || self.total_bytes > self.limits.max_bytes
            || self.total_lines > self.limits.max_lines
    }

    fn ensure_temp(&mut self) {
        if self.temp.is_some() {
            return;
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let path = self.temp_dir.join(format!("pi-bash-{}.log", &id[..16]));
        let opened = pi_base::fs::create_new(&path);
        self.temp = Some(match opened {
            Ok(mut f) => {
                if let Ok(mut logs) = logs().lock() {
                    logs.push(path.clone());
                }
                let mut ok = true;
                for chunk in self.raw_chunks.drain(..) {
                    ok &= f.write_all(&chunk).is_ok();
                }
                Ok((path, ok.then_some(f)))
            }
            Err(e) => {
                self.raw_chunks.clear();
                Err(format!("{}: {e}", path.display()))
            }
        });
    }

    fn write_temp(&mut self, data: &[u8]) {
        if let Some(Ok((_, slot))) = &mut self.temp
            && let Some(f) = slot
            && f.write_all(data).is_err()
        {
            *slot = None;
        }
    }

    /// The tail cut to the limits, with counts for the whole output. With `persist`, a
    /// truncated output gets its temp file now.
    pub(crate) fn snapshot(&mut self, persist: bool) -> Snapshot {
        let t = truncate_tail(self.snapshot_text(), self.limits);
        let truncated =
            self.total_lines > self.limits.max_lines || self.total_bytes > self.limits.max_bytes;
        let by = if truncated {
            Some(
                t.truncated_by
                    .unwrap_or(if self.total_bytes > self.limits.max_bytes {
                        TruncatedBy::Bytes
                    } else {
                        TruncatedBy::Lines
                    }),
            )
        } else {
            None
        };
        let truncation = Truncation {
            truncated,
            truncated_by: by,
            total_lines: self.total_lines,
            total_bytes: self.total_bytes,
            max_lines: self.limits.max_lines,
            max_bytes: self.limits.max_bytes,
            ..t
        };
        if persist && truncated {
            self.ensure_temp();
        }
        let full_output = self.temp.as_ref().map(|t| match t {
            Ok((p, _)) => Ok(p.clone()),
            Err(e) => Err(e.clone()),
        });
        Snapshot {
            content: truncation.content.clone(),
            truncation,
            full_output,
        }
    }
}

fn details_of(s: &Snapshot, always: bool) -> Option<Value> {
    if !s.truncation.truncated && !always {
        return None;
    }
    let mut m = Map::new();
    if s.truncation.truncated {
        m.insert("truncation".into(), s.truncation.to_json());
    }
    if let Some(Ok(p)) = &s.full_output {
        m.insert("fullOutputPath".into(), json!(p.to_string_lossy()));
    }
    Some(Value::Object(m))
}

/// The text shown for a snapshot: the tail (or `empty`) and, when cut, the notice.
fn format_output(s: &Snapshot, last_line_bytes: usize, empty: &str) -> String {
    let t = &s.truncation;
    let mut text = if s.content.is_empty() {
        empty.to_owned()
    } else {
        s.content.clone()
    };
    if t.truncated {
        let full = match &s.full_output {
            Some(Ok(p)) => format!("Full output: {}", p.display()),
            Some(Err(e)) => format!("Full output could not be saved ({e})"),
            None => "Full output could not be saved".to_owned(),
        };
        let start = t.total_lines + 1 - t.output_lines.min(t.total_lines);
        let end = t.total_lines;
        if t.last_line_partial {
            text.push_str(&format!(
                "\n\n[Showing last {} of line {end} (line is {}). {full}]",
                format_size(t.output_bytes),
                format_size(last_line_bytes)
            ));
        } else if t.truncated_by == Some(TruncatedBy::Lines) {
            text.push_str(&format!(
                "\n\n[Showing lines {start}-{end} of {}. {full}]",
                t.total_lines
            ));
        } else {
            text.push_str(&format!(
                "\n\n[Showing lines {start}-{end} of {} ({} limit). {full}]",
                t.total_lines,
                format_size(DEFAULT_MAX_BYTES)
            ));
        }
    }
    text
}

// ---------------------------------------------------------------------------------------
// Shell

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The shell: settings `shellPath` (must exist), else `/bin/bash`, `bash` on PATH, `sh`.
fn shell(ctx: &ToolContext) -> Result<PathBuf, ToolError> {
    if let Some(custom) = ctx.shell_path.as_deref().filter(|s| !s.is_empty()) {
        if Path::new(custom).exists() {
            return Ok(PathBuf::from(custom));
        }
        return Err(ToolError(format!("Custom shell path not found: {custom}")));
    }
    if Path::new("/bin/bash").exists() {
        return Ok(PathBuf::from("/bin/bash"));
    }
    Ok(find_on_path("bash").unwrap_or_else(|| PathBuf::from("sh")))
}

/// `PATH` of the child's environment with the agent's bin directory first (unless it is
/// already on it). `None` when the environment has no `PATH` (the shell's default applies).
fn path_env(
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    bin_dir: Option<&Path>,
) -> Option<std::ffi::OsString> {
    let current = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v)?;
    let bin = bin_dir?;
    if std::env::split_paths(current).any(|p| p == bin) {
        return None;
    }
    let mut parts = vec![bin.to_path_buf()];
    parts.extend(std::env::split_paths(current).filter(|p| !p.as_os_str().is_empty()));
    std::env::join_paths(parts).ok()
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}

fn with_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_owned()
    } else {
        format!("{text}\n\n{status}")
    }
}

/// What a finished (or stopped) command left.
struct Collected {
    snapshot: Snapshot,
    last_line: usize,
    status: Option<std::io::Result<ExitStatus>>,
    timed_out: bool,
    aborted: bool,
}

/// The shell, once the command can start: the working directory exists and the call was
/// not cancelled yet.
fn ready(ctx: &ToolContext, cancel: &CancelToken) -> Result<PathBuf, ToolError> {
    let shell = shell(ctx)?;
    if !ctx.cwd.exists() {
        return Err(ToolError(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            ctx.cwd.display()
        )));
    }
    if cancel.is_cancelled() {
        return Err(ToolError::new("Command aborted"));
    }
    Ok(shell)
}

/// A started command: the shell process, its process group, and the read end of the pipe
/// its stdout and stderr share.
struct Started {
    child: tokio::process::Child,
    group: Group,
    output: tokio::net::unix::pipe::Receiver,
}

/// Starts `shell -c command` in the working directory, in a process group of its own, with
/// the tool's environment and stdin closed.
fn spawn(ctx: &ToolContext, shell: &Path, command: &str) -> Result<Started, ToolError> {
    // One pipe for both stdout and stderr keeps their output in the order it was written.
    let spawn_error = |e: std::io::Error| {
        ToolError(match io_code(&e) {
            Some(code) => format!("spawn {} {code}", shell.display()),
            None => format!("spawn {}: {e}", shell.display()),
        })
    };
    let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
    let writer2 = writer.try_clone().map_err(spawn_error)?;
    let mut cmd = tokio::process::Command::new(shell);
    cmd.arg("-c")
        .arg(command)
        .current_dir(&ctx.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer2))
        .process_group(0);
    let env = ctx.env_policy.environment();
    let path = path_env(&env, ctx.bin_dir.as_deref());
    cmd.env_clear().envs(env);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let spawned = cmd.spawn();
    // The command holds our copies of the pipe's write end: close them.
    drop(cmd);
    let child = spawned.map_err(spawn_error)?;
    let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) else {
        return Err(ToolError::new("spawn failed: no process id"));
    };
    let group = Group::new(pid);
    let output = match tokio::net::unix::pipe::Receiver::from_file(File::from(
        std::os::fd::OwnedFd::from(reader),
    )) {
        Ok(r) => r,
        Err(e) => {
            group.kill();
            return Err(spawn_error(e));
        }
    };
    Ok(Started {
        child,
        group,
        output,
    })
}

/// The output as it arrives: kept in the accumulator, handed on decoded, and shown in
/// snapshots at most every [`UPDATE_INTERVAL`].
struct Progress<'u, 'c> {
    acc: Accumulator,
    on_update: &'u mut (dyn FnMut(ToolOutput) + Send),
    on_chunk: Option<&'c mut (dyn FnMut(&str) + Send)>,
    chunks: Utf8Decoder,
    /// Output arrived since the last snapshot.
    dirty: bool,
    last_update: Option<Instant>,
    /// When the next (throttled) snapshot is due.
    update_at: Option<Instant>,
}

impl<'u, 'c> Progress<'u, 'c> {
    fn new(
        temp_dir: &Path,
        on_update: &'u mut (dyn FnMut(ToolOutput) + Send),
        on_chunk: Option<&'c mut (dyn FnMut(&str) + Send)>,
    ) -> Progress<'u, 'c> {
        Progress {
            acc: Accumulator::new(temp_dir),
            on_update,
            on_chunk,
            chunks: Utf8Decoder::new(),
            dirty: false,
            last_update: None,
            update_at: None,
        }
    }

    /// Takes in bytes read from the pipe.
    fn take(&mut self, bytes: &[u8]) {
        self.acc.append(bytes);
        if let Some(f) = self.on_chunk.as_mut() {
            let mut text = String::new();
            self.chunks.decode(bytes, &mut text);
            if !text.is_empty() {
                f(&text);
            }
        }
        self.dirty = true;
    }

    /// Sends a snapshot when output arrived since the last one.
    fn emit(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.last_update = Some(Instant::now());
        let s = self.acc.snapshot(true);
        (self.on_update)(ToolOutput {
            content: vec![Content::text(s.content.clone())],
            details: details_of(&s, true),
        });
    }

    /// Emits now if the last update is [`UPDATE_INTERVAL`] old, else schedules it for when
    /// the interval is up.
    fn throttle(&mut self) {
        if self.dirty && self.update_at.is_none() {
            match self.last_update {
                Some(t) if t.elapsed() < UPDATE_INTERVAL => {
                    self.update_at = Some(t + UPDATE_INTERVAL);
                }
                _ => self.emit(),
            }
        }
    }

    /// Ends the output: a last snapshot, the final one with the last line's length, and
    /// the rest of the decoded text handed on.
    fn finish(mut self) -> (Snapshot, usize) {
        self.acc.finish();
        self.emit();
        let snapshot = self.acc.snapshot(true);
        let last_line = self.acc.last_line_bytes();
        let Progress {
            acc,
            mut on_chunk,
            mut chunks,
            ..
        } = self;
        drop(acc);
        if let Some(f) = on_chunk.as_mut() {
            let mut text = String::new();
            chunks.finish(&mut text);
            if !text.is_empty() {
                f(&text);
            }
        }
        (snapshot, last_line)
    }
}

/// How the wait for a command ended.
struct Ending {
    status: Option<std::io::Result<ExitStatus>>,
    timed_out: bool,
    aborted: bool,
}

/// Reads the command's output until the command has exited and the pipe is closed (or
/// [`EXIT_GRACE`] after it exited); a timeout or a cancel kills its process group.
async fn pump(
    started: &mut Started,
    timeout_at: Option<Instant>,
    cancel: &CancelToken,
    progress: &mut Progress<'_, '_>,
) -> Ending {
    let Started {
        child,
        group,
        output,
    } = started;
    let mut end = Ending {
        status: None,
        timed_out: false,
        aborted: false,
    };
    let mut open = true;
    let mut grace_until: Option<Instant> = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if end.status.is_some() && !open {
            break;
        }
        tokio::select! {
            r = output.read(&mut buf), if open => match r {
                Ok(0) | Err(_) => open = false,
                Ok(n) => progress.take(&buf[..n]),
            },
            s = child.wait(), if end.status.is_none() => {
                end.status = Some(s);
                grace_until = Some(Instant::now() + EXIT_GRACE);
            },
            () = tokio::time::sleep_until(timeout_at.unwrap_or_else(far_future)),
                if timeout_at.is_some() && !end.timed_out && end.status.is_none() => {
                end.timed_out = true;
                group.kill();
            },
            () = cancel.cancelled(), if !end.aborted && end.status.is_none() => {
                end.aborted = true;
                group.kill();
            },
            () = tokio::time::sleep_until(progress.update_at.unwrap_or_else(far_future)),
                if progress.update_at.is_some() => {
                progress.update_at = None;
                progress.emit();
            },
            () = tokio::time::sleep_until(grace_until.unwrap_or_else(far_future)), if grace_until.is_some() => {
                break;
            },
        }
        progress.throttle();
    }
    end
}

/// Runs `command` (the prefix already on it) and collects its output; `on_chunk` sees the
/// output as it arrives (decoded).
async fn collect(
    ctx: &ToolContext,
    command: &str,
    timeout: Option<f64>,
    cancel: &CancelToken,
    on_update: &mut (dyn FnMut(ToolOutput) + Send),
    on_chunk: Option<&mut (dyn FnMut(&str) + Send)>,
) -> Result<Collected, ToolError> {
    let shell = ready(ctx, cancel)?;
    let mut started = spawn(ctx, &shell, command)?;
    let mut progress = Progress::new(&ctx.temp_dir, on_update, on_chunk);
    let timeout_at = timeout
        .filter(|t| *t > 0.0)
        .and_then(|t| Duration::try_from_secs_f64(t).ok())
        .map(|d| Instant::now() + d);
    let end = pump(&mut started, timeout_at, cancel, &mut progress).await;
    let Started {
        child,
        mut group,
        output,
    } = started;
    drop(output);
    group.armed = false;
    drop(group);
    let (snapshot, last_line) = progress.finish();
    drop(child);
    Ok(Collected {
        snapshot,
        last_line,
        status: end.status,
        timed_out: end.timed_out,
        aborted: end.aborted,
    })
}

/// Runs the command. Progress goes to `on_update`: first an empty update, then tail
/// snapshots at most every 100 ms.
pub async fn run(
    ctx: &ToolContext,
    args: &BashArgs,
    cancel: &CancelToken,
    on_update: &mut (dyn FnMut(ToolOutput) + Send),
) -> Result<ToolOutput, ToolError> {
    let command = match ctx
        .shell_command_prefix
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        Some(prefix) => format!("{prefix}\n{}", args.command),
        None => args.command.clone(),
    };
    on_update(ToolOutput::default());
    let Collected {
        snapshot,
        last_line,
        status,
        timed_out,
        aborted,
    } = collect(ctx, &command, args.timeout, cancel, on_update, None).await?;
    if aborted || cancel.is_cancelled() {
        let text = format_output(&snapshot, last_line, "");
        return Err(ToolError(with_status(&text, "Command aborted")));
    }
    if timed_out {
        let text = format_output(&snapshot, last_line, "");
        let secs = js::number(args.timeout.unwrap_or(0.0));
        return Err(ToolError(with_status(
            &text,
            &format!("Command timed out after {secs} seconds"),
        )));
    }
    let status = match status {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Err(ToolError(e.to_string())),
        None => return Err(ToolError::new("Command ended without a status")),
    };
    let text = format_output(&snapshot, last_line, "(no output)");
    match status.code() {
        Some(0) | None => Ok(ToolOutput {
            content: vec![Content::text(text)],
            details: details_of(&snapshot, false),
        }),
        Some(code) => Err(ToolError(with_status(
            &text,
            &format!("Command exited with code {code}"),
        ))),
    }
}

/// A user's shell command as it ended (upstream's `BashResult`): the output's tail cut like
/// the tool's (without the notice), the exit code (none when cancelled or killed), and the
/// file with the full output when it was cut.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    pub output: String,
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<PathBuf>,
}

/// Runs a user's shell command (`!command`, RPC `bash`) as the tool runs commands, without
/// a timeout; `on_chunk` sees the output as it arrives. Cancelling kills it (`cancelled`).
pub async fn execute(
    ctx: &ToolContext,
    command: &str,
    cancel: &CancelToken,
    on_chunk: &mut (dyn FnMut(&str) + Send),
) -> Result<Execution, ToolError> {
    let command = match ctx
        .shell_command_prefix
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        Some(prefix) => format!("{prefix}\n{command}"),
        None => command.to_owned(),
    };
    let c = collect(ctx, &command, None, cancel, &mut |_| {}, Some(on_chunk)).await?;
    let cancelled = c.aborted || cancel.is_cancelled();
    let exit_code = match (&c.status, cancelled) {
        (Some(Ok(s)), false) => s.code(),
        _ => None,
    };
    Ok(Execution {
        output: c.snapshot.content,
        exit_code,
        cancelled,
        truncated: c.snapshot.truncation.truncated,
        full_output_path: c.snapshot.full_output.and_then(Result::ok),
    })
}
