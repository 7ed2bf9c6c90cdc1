//! Errors as the user sees them: `pi: error: …`, the chain of causes, an optional hint, and
//! the exit status (docs/decisions.md §4). This is the one place that turns the domain's typed
//! errors into exit statuses and hints; the domain modules neither print nor know exit codes.

use std::fmt;
use std::io::Write;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0.
    Success,
    /// 1: the operation failed (I/O, a provider error, something not found that had to be).
    Failure,
    /// 2: usage error or invalid input; nothing was written.
    Usage,
    /// 3: nothing to do, where a flag asks to be told (`pi compact --if-needed --exit-code`).
    NothingToDo,
    /// 130: interrupted (SIGINT, Ctrl-C).
    Interrupted,
    /// 143: terminated (SIGTERM).
    Terminated,
    /// 129: hung up (SIGHUP).
    HungUp,
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::NothingToDo => 3,
            ExitStatus::Interrupted => 130,
            ExitStatus::Terminated => 143,
            ExitStatus::HungUp => 129,
        }
    }

    /// The status of a run ended by `signal`.
    pub fn of_signal(signal: pi_agent::runtime::Signal) -> ExitStatus {
        match signal {
            pi_agent::runtime::Signal::Interrupt => ExitStatus::Interrupted,
            pi_agent::runtime::Signal::Terminate => ExitStatus::Terminated,
            pi_agent::runtime::Signal::HangUp => ExitStatus::HungUp,
        }
    }
}

/// An error with an explicit exit status and an optional hint.
#[derive(Debug)]
pub struct Exit {
    pub status: ExitStatus,
    pub hint: Option<String>,
    pub error: anyhow::Error,
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.error)
    }
}

impl std::error::Error for Exit {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl Exit {
    pub fn new(status: ExitStatus, error: impl Into<anyhow::Error>) -> Exit {
        Exit {
            status,
            hint: None,
            error: error.into(),
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Exit {
        self.hint = Some(hint.into());
        self
    }
}

/// Invalid input or usage (exit status 2).
pub fn usage(msg: impl fmt::Display) -> anyhow::Error {
    Exit::new(ExitStatus::Usage, anyhow::anyhow!("{msg}")).into()
}

/// The operation failed (exit status 1).
pub fn failed(msg: impl fmt::Display) -> anyhow::Error {
    Exit::new(ExitStatus::Failure, anyhow::anyhow!("{msg}")).into()
}

/// Whether the error comes from writing to a closed pipe (`pi … | head`): an I/O error of
/// that kind anywhere in the chain, also one wrapped in another I/O error or in a JSON
/// serializer's error.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(pipe_closed)
}

fn pipe_closed(e: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return io.kind() == BrokenPipe
            || io
                .get_ref()
                .is_some_and(|inner| pipe_closed(inner as &(dyn std::error::Error + 'static)));
    }
    e.downcast_ref::<serde_json::Error>()
        .is_some_and(|j| j.io_error_kind() == Some(BrokenPipe))
}

/// The status and hint of one error of a chain, when its type says them.
fn classify(e: &(dyn std::error::Error + 'static)) -> Option<(ExitStatus, Option<String>)> {
    use pi_agent::compact::job::JobError;
    use pi_ai::config::ModelError;
    use pi_session::{
        append::AppendError, entry::InputError, find::ClaimError, find::FindError,
        store::EntryLookupError, store::NotASession, store::OpenError,
    };
    if let Some(x) = e.downcast_ref::<Exit>() {
        return Some((x.status, x.hint.clone()));
    }
    if e.downcast_ref::<InputError>().is_some() || e.downcast_ref::<EntryLookupError>().is_some() {
        return Some((ExitStatus::Usage, None));
    }
    if e.downcast_ref::<NotASession>().is_some() {
        return Some((ExitStatus::Usage, None));
    }
    if let Some(OpenError::NotASession(_)) = e.downcast_ref::<OpenError>() {
        return Some((ExitStatus::Usage, None));
    }
    if let Some(pi_session::migrate::MigrateError::Open(o)) =
        e.downcast_ref::<pi_session::migrate::MigrateError>()
    {
        return classify(o);
    }
    if let Some(a) = e.downcast_ref::<AppendError>() {
        return match a {
            AppendError::NotASession(_) => Some((ExitStatus::Usage, None)),
            AppendError::OldVersion { path, .. } => Some((
                ExitStatus::Failure,
                Some(format!(
                    "run `pi session migrate {}` (the original is kept as a backup)",
                    path.display()
                )),
            )),
            _ => None,
        };
    }
    if let Some(f) = e.downcast_ref::<FindError>() {
        return Some(find_status(f));
    }
    if let Some(c) = e.downcast_ref::<ClaimError>() {
        return Some(match c {
            ClaimError::Taken { .. } => (
                ExitStatus::Failure,
                Some("choose another --id, or leave it out for a new one".into()),
            ),
            ClaimError::Lock { .. } => (ExitStatus::Failure, None),
        });
    }
    if let Some(m) = e.downcast_ref::<ModelError>() {
        return Some(model_status(m));
    }
    if let Some(o) = e.downcast_ref::<pi_agent::agent::store::OpenError>() {
        return match o {
            pi_agent::agent::store::OpenError::Busy(_) => Some((
                ExitStatus::Failure,
                Some(
                    "wait for the other run to end, or continue another branch with `pi session fork`"
                        .into(),
                ),
            )),
            pi_agent::agent::store::OpenError::Append(a) => classify(a),
        };
    }
    if let Some(j) = e.downcast_ref::<JobError>() {
        return Some(job_status(j));
    }
    None
}

/// The status and hint of a session that cannot be found.
fn find_status(f: &pi_session::find::FindError) -> (ExitStatus, Option<String>) {
    use pi_session::find::FindError;
    match f {
        FindError::NoSessions { .. } => (
            ExitStatus::Failure,
            Some("create one with `pi session new`, or name a session file or id".into()),
        ),
        FindError::NotFound { .. } => (
            ExitStatus::Usage,
            Some("`pi session list --all` shows every session".into()),
        ),
        FindError::Ambiguous { .. } => (
            ExitStatus::Usage,
            Some(
                "give more characters of the id, or one of the short ids above or of `pi session list`"
                    .into(),
            ),
        ),
        FindError::NoSuchFile { .. } => (ExitStatus::Usage, None),
        FindError::Directory { path } => (
            ExitStatus::Usage,
            Some(format!(
                "name a session file in it; `pi session list --session-dir {}` lists the sessions it holds",
                path.display()
            )),
        ),
        FindError::Stale { from, .. } => (
            ExitStatus::Failure,
            Some(match from {
                pi_session::find::Chosen::Env => {
                    "unset PI_SESSION, or set it to a session that `pi session list` shows".into()
                }
                _ => "`pi session use --clear` removes the pin; `pi session use SESSION` pins another".into(),
            }),
        ),
        FindError::Stdin => (
            ExitStatus::Usage,
            Some(
                "save the session to a file and name that file"
                    .into(),
            ),
        ),
        FindError::Empty => (
            ExitStatus::Usage,
            Some(
                "name a session file, id or id prefix, or leave the argument out for the most recent session of this directory"
                    .into(),
            ),
        ),
    }
}

/// The hint for a provider without a key: its variable, models.json, another model.
fn key_hint(provider: &str, env: Option<&str>, models_json: &std::path::Path) -> String {
    let file = models_json.display();
    let rest = format!(
        "give provider \"{provider}\" an \"apiKey\" in {file}, or pick another model with --model PROVIDER/ID"
    );
    match env {
        Some(v) => format!("set {v} in the environment, {rest}"),
        None => rest,
    }
}

/// The hint for a model that cannot be chosen.
fn select_hint(s: &pi_ai::config::SelectError) -> String {
    use pi_ai::config::SelectError;
    const KNOWN: &str = "`pi models --all` lists the models pi knows";
    match s {
        SelectError::Unknown { models_json, .. } => {
            format!("{KNOWN}; define others in {}", models_json.display())
        }
        SelectError::Unsupported { .. } => "pick another model with --model, or define the model in models.json with \"api\": \"openai-completions\"".to_owned(),
        SelectError::None => "pass --model PROVIDER/ID, or set defaultProvider and defaultModel in settings.json".to_owned(),
        SelectError::SessionNoKey {
            provider,
            env,
            models_json,
            ..
        } => key_hint(provider, *env, models_json),
        SelectError::SessionUnknown { models_json, .. } => format!(
            "define the model in {}, or pass --model PROVIDER/ID ({KNOWN})",
            models_json.display()
        ),
    }
}

/// The status and hint of a model that cannot be used.
fn model_status(m: &pi_ai::config::ModelError) -> (ExitStatus, Option<String>) {
    use pi_ai::config::{ModelError, SelectError};
    match m {
        // A missing key is the same failure whichever way the model was chosen.
        ModelError::Select(s @ SelectError::SessionNoKey { .. }) => {
            (ExitStatus::Failure, Some(select_hint(s)))
        }
        ModelError::Select(s) => (ExitStatus::Usage, Some(select_hint(s))),
        ModelError::Auth(_) => (ExitStatus::Failure, None),
        ModelError::NoKey {
            provider,
            env,
            models_json,
            ..
        } => (
            ExitStatus::Failure,
            Some(key_hint(provider, *env, models_json)),
        ),
    }
}

/// The status and hint of a failed compaction or branch summary.
fn job_status(j: &pi_agent::compact::job::JobError) -> (ExitStatus, Option<String>) {
    use pi_agent::compact::NoPlan;
    use pi_agent::compact::job::JobError;
    use pi_agent::compact::record::RecordError;
    let from_inner =
        |e: &(dyn std::error::Error + 'static)| classify(e).unwrap_or((ExitStatus::Failure, None));
    match j {
        JobError::NoPlan(p) => (
            ExitStatus::Failure,
            Some(
                match p {
                    NoPlan::AlreadyCompacted => {
                        "the leaf is a compaction entry; continue the session first"
                    }
                    NoPlan::TooSmall => "there is nothing before the recent messages to summarize",
                }
                .into(),
            ),
        ),
        JobError::Record(RecordError::LeafMoved { .. }) => {
            (ExitStatus::Failure, Some("run the command again".into()))
        }
        JobError::Record(RecordError::Append(a)) => from_inner(a),
        JobError::Summary { error, model } => {
            let hint = if error.is_overflow() {
                Some(format!(
                    "the summary request is larger than {model} accepts; use --model with a larger context window"
                ))
            } else if error.is_auth() {
                let provider = model.split('/').next().unwrap_or(model);
                Some(format!("check the API key of provider \"{provider}\""))
            } else {
                None
            };
            (ExitStatus::Failure, hint)
        }
        JobError::Model(m) => from_inner(m),
        JobError::Append(a) => from_inner(a),
        JobError::Open(o) => from_inner(o),
        JobError::Entry(e) => from_inner(e),
        JobError::Read { .. } | JobError::Setup(_) => (ExitStatus::Failure, None),
    }
}

/// Exit status for an error: the first error of the chain whose type says, else failure.
pub fn exit_status(err: &anyhow::Error) -> ExitStatus {
    err.chain()
        .find_map(classify)
        .map_or(ExitStatus::Failure, |(s, _)| s)
}

fn hint_of(err: &anyhow::Error) -> Option<String> {
    err.chain().find_map(|e| classify(e).and_then(|(_, h)| h))
}

/// The message of an error with its causes, on one line (for records).
/// Control characters quoted from a session or a model are escaped, as in [`report`].
pub fn one_line(e: &anyhow::Error) -> String {
    let line = e
        .chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ");
    pi_base::text::escape(&line).into_owned()
}

/// A message for stderr: messages quote session files, settings and models, whose text
/// may hold escape sequences (a clipboard write, a title change, a screen clear). Every
/// control character but newline and tab is written as a visible escape, as the human
/// views do; the places that quote such text escape newlines too.
fn safe(msg: &str) -> std::borrow::Cow<'_, str> {
    pi_base::text::escape_text(msg)
}

/// Prints the error to stderr and returns the exit status. Broken pipes are silent successes.
pub fn report(err: &anyhow::Error) -> ExitStatus {
    if is_broken_pipe(err) {
        return ExitStatus::Success;
    }
    let mut stderr = std::io::stderr().lock();
    let mut chain = err.chain();
    if let Some(first) = chain.next() {
        let _ = writeln!(stderr, "pi: error: {}", safe(&first.to_string()));
    }
    for cause in chain {
        let _ = writeln!(stderr, "  caused by: {}", safe(&cause.to_string()));
    }
    if let Some(h) = hint_of(err) {
        let _ = writeln!(stderr, "  hint: {}", safe(&h));
    }
    exit_status(err)
}

/// A warning on stderr (control characters escaped, as in [`report`]).
pub fn warn(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "pi: warning: {}", safe(msg));
}

/// A note on stderr (control characters escaped, as in [`report`]).
pub fn note(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "pi: {}", safe(msg));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    /// A writer whose reader has gone.
    struct Closed;
    impl io::Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn broken_pipes_are_recognised_however_wrapped() {
        let plain = || io::Error::from(io::ErrorKind::BrokenPipe);
        let serde = || serde_json::to_writer(Closed, &[1, 2]).unwrap_err();
        let cases: Vec<anyhow::Error> = vec![
            plain().into(),
            anyhow::Error::new(plain()).context("writing stdout"),
            serde().into(),
            io::Error::other(serde()).into(),
            anyhow::Error::new(io::Error::other(plain())).context("output"),
        ];
        for e in &cases {
            assert!(is_broken_pipe(e), "{e:?}");
            assert_eq!(report(e), ExitStatus::Success);
        }
        for e in [
            anyhow::Error::new(io::Error::from(io::ErrorKind::NotFound)),
            anyhow::anyhow!("broken pipe"),
        ] {
            assert!(!is_broken_pipe(&e), "{e:?}");
        }
    }
}
