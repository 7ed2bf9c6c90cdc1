//! Errors as the user sees them: `pi: error: …`, the chain of causes, an optional hint, and
//! the exit status (DECISIONS §4).

use std::fmt;
use std::io::Write;

/// Exit statuses.
pub const OK: u8 = 0;
pub const FAILURE: u8 = 1;
pub const USAGE: u8 = 2;

/// An error with an explicit exit status and an optional hint.
#[derive(Debug)]
pub struct Exit {
    pub code: u8,
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
    pub fn new(code: u8, error: impl Into<anyhow::Error>) -> Exit {
        Exit {
            code,
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
    Exit::new(USAGE, anyhow::anyhow!("{msg}")).into()
}

/// The operation failed (exit status 1).
pub fn failed(msg: impl fmt::Display) -> anyhow::Error {
    Exit::new(FAILURE, anyhow::anyhow!("{msg}")).into()
}

/// Whether the error comes from writing to a closed pipe (`pi … | head`).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Exit status for an error: explicit, or by the kind of the underlying error.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    use crate::session::{
        append::AppendError, entry::InputError, find::FindError, store::EntryLookupError,
        store::OpenError,
    };
    for e in err.chain() {
        if let Some(x) = e.downcast_ref::<Exit>() {
            return x.code;
        }
        if e.downcast_ref::<InputError>().is_some()
            || e.downcast_ref::<EntryLookupError>().is_some()
            || matches!(
                e.downcast_ref::<OpenError>(),
                Some(OpenError::NotASession { .. })
            )
            || matches!(
                e.downcast_ref::<AppendError>(),
                Some(AppendError::NotASession { .. })
            )
        {
            return USAGE;
        }
        if let Some(f) = e.downcast_ref::<FindError>() {
            return f.exit_code();
        }
    }
    FAILURE
}

fn hint_of(err: &anyhow::Error) -> Option<String> {
    use crate::session::{append::AppendError, find::FindError};
    for e in err.chain() {
        if let Some(x) = e.downcast_ref::<Exit>()
            && x.hint.is_some()
        {
            return x.hint.clone();
        }
        if let Some(AppendError::OldVersion { path, .. }) = e.downcast_ref::<AppendError>() {
            return Some(format!(
                "run `pi session migrate {}` (the original is kept as a backup)",
                path.display()
            ));
        }
        if let Some(f) = e.downcast_ref::<FindError>() {
            return f.hint();
        }
    }
    None
}

/// Prints the error to stderr and returns the exit status. Broken pipes are silent successes.
pub fn report(err: &anyhow::Error) -> u8 {
    if is_broken_pipe(err) {
        return OK;
    }
    let mut stderr = std::io::stderr().lock();
    let mut chain = err.chain();
    if let Some(first) = chain.next() {
        let _ = writeln!(stderr, "pi: error: {first}");
    }
    for cause in chain {
        let _ = writeln!(stderr, "  caused by: {cause}");
    }
    if let Some(h) = hint_of(err) {
        let _ = writeln!(stderr, "  hint: {h}");
    }
    exit_code(err)
}

/// A warning on stderr.
pub fn warn(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "pi: warning: {msg}");
}

/// A note on stderr.
pub fn note(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "pi: {msg}");
}
