//! The async side of commands that call a model or run hooks: a single-threaded tokio
//! runtime and HTTP client made on first use (commands that need neither start without
//! them), Ctrl-C turned into "interrupted", and the signals that end a run.
//!
//! `pi compact`, `pi session branch` and `pi run` all go through here, so they react to
//! Ctrl-C the same way: a call in flight is dropped (nothing is written after it).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use pi_ai::Client;
use pi_tools::CancelToken;

/// Why the runtime or the client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Client(#[from] pi_ai::client::ClientError),
    #[error("the async runtime is unavailable")]
    Unavailable,
}

/// A runtime and a client, made when first asked for.
#[derive(Default)]
pub struct Lazy {
    runtime: Option<tokio::runtime::Runtime>,
    client: Option<Client>,
}

impl Lazy {
    pub fn new() -> Lazy {
        Lazy::default()
    }

    /// The runtime (made now if needed).
    pub fn runtime(&mut self) -> Result<&tokio::runtime::Runtime, SetupError> {
        if self.runtime.is_none() {
            self.runtime = Some(build()?);
        }
        self.runtime.as_ref().ok_or(SetupError::Unavailable)
    }

    /// The runtime and the HTTP client (both made now if needed).
    pub(crate) fn with_client(
        &mut self,
    ) -> Result<(&tokio::runtime::Runtime, &Client), SetupError> {
        self.runtime()?;
        if self.client.is_none() {
            self.client = Some(Client::new()?);
        }
        match (&self.runtime, &self.client) {
            (Some(r), Some(c)) => Ok((r, c)),
            _ => Err(SetupError::Unavailable),
        }
    }

    /// Runs `fut` to its end, or until Ctrl-C (`None`; the future is dropped).
    pub(crate) fn interruptible<T>(
        &mut self,
        fut: impl Future<Output = T>,
    ) -> Result<Option<T>, SetupError> {
        Ok(interruptible(self.runtime()?, fut))
    }
}

/// A single-threaded runtime with I/O and timers.
pub fn build() -> Result<tokio::runtime::Runtime, SetupError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SetupError::Runtime)
}

/// Runs `fut` on `rt`; `None` when Ctrl-C came first (the future is dropped).
pub(crate) fn interruptible<T>(
    rt: &tokio::runtime::Runtime,
    fut: impl Future<Output = T>,
) -> Option<T> {
    rt.block_on(async {
        tokio::select! {
            r = fut => Some(r),
            _ = tokio::signal::ctrl_c() => None,
        }
    })
}

/// The first signal a run got, if any, shared with the signal watcher.
#[derive(Debug, Clone, Default)]
pub struct Signalled(Arc<AtomicU8>);

/// How a run ended by a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
    HangUp,
}

impl Signal {
    /// The exit status of a process ended by this signal, as shells report it (128 plus the
    /// signal's number).
    pub fn exit_code(self) -> u8 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
            Signal::HangUp => 129,
        }
    }
}

impl Signalled {
    pub fn get(&self) -> Option<Signal> {
        match self.0.load(Ordering::SeqCst) {
            1 => Some(Signal::Interrupt),
            2 => Some(Signal::Terminate),
            3 => Some(Signal::HangUp),
            _ => None,
        }
    }

    /// Records `signal` unless one was recorded before.
    pub fn set_first(&self, signal: Signal) {
        let n = match signal {
            Signal::Interrupt => 1,
            Signal::Terminate => 2,
            Signal::HangUp => 3,
        };
        let _ = self
            .0
            .compare_exchange(0, n, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// Listens for signals while a run goes on: the first cancels the run (and is recorded in
/// `signalled`); SIGTERM and SIGHUP also kill the running `bash` commands; a second Ctrl-C
/// kills them and ends the process at once, as interrupted. Call inside the runtime; abort
/// the handle when the run ends.
pub fn watch_signals(
    cancel: CancelToken,
    signalled: Signalled,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    on_signals(move |got| {
        if cancel.is_cancelled() && got == Signal::Interrupt {
            pi_tools::bash::kill_all_running();
            std::process::exit(i32::from(got.exit_code()));
        }
        signalled.set_first(got);
        if got != Signal::Interrupt {
            pi_tools::bash::kill_all_running();
        }
        cancel.cancel();
    })
}

/// Calls `f` with every SIGINT, SIGTERM and SIGHUP the process gets, on a task of the
/// runtime, until the handle is aborted. Call inside the runtime.
pub fn on_signals(
    mut f: impl FnMut(Signal) + Send + 'static,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    Ok(tokio::spawn(async move {
        loop {
            let got = tokio::select! {
                _ = int.recv() => Signal::Interrupt,
                _ = term.recv() => Signal::Terminate,
                _ = hup.recv() => Signal::HangUp,
            };
            f(got);
        }
    }))
}
