//! The link between `pi chat`'s front end (a thread reading the user's input) and the
//! server it drives in process: the front end sends command lines through the [`Gate`] and
//! waits until the server has taken all of them and waits for more (idle), so a message is
//! sent only when the previous one is done, and lines typed while a run goes on reach it as
//! follow-ups.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc;

use pi_agent::runtime::{Signal, Signalled};
use pi_tools::CancelToken;

#[derive(Debug, Default)]
struct State {
    sent: u64,
    received: u64,
    /// The server waits for input (set by it, cleared by every send).
    idle: bool,
    /// The server has stopped.
    closed: bool,
}

/// See the module's documentation.
#[derive(Debug)]
pub struct Gate {
    state: Mutex<State>,
    changed: Condvar,
    tx: Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>,
}

impl Gate {
    /// A gate and the input the server reads.
    pub fn new() -> (Gate, mpsc::UnboundedReceiver<Vec<u8>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Gate {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                tx: Mutex::new(Some(tx)),
            },
            rx,
        )
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends a command line; `false` when the server no longer reads.
    pub fn send(&self, line: Vec<u8>) -> bool {
        let mut st = self.state();
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let Some(tx) = tx.as_ref() else {
            return false;
        };
        st.sent += 1;
        st.idle = false;
        if tx.send(line).is_err() {
            st.sent -= 1;
            return false;
        }
        true
    }

    /// Ends the input: the server finishes what runs, then stops.
    pub fn close_input(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    pub(super) fn received(&self) {
        self.state().received += 1;
    }

    pub(super) fn set_idle(&self) {
        let mut st = self.state();
        st.idle = true;
        self.changed.notify_all();
    }

    /// The server has stopped (wakes the front end).
    pub fn close(&self) {
        let mut st = self.state();
        st.closed = true;
        self.changed.notify_all();
    }

    fn settled(st: &State) -> bool {
        st.closed || (st.idle && st.received == st.sent)
    }

    /// Whether the server has taken every line and waits for more (or has stopped).
    pub fn is_idle(&self) -> bool {
        Gate::settled(&self.state())
    }

    /// Whether the server has stopped.
    pub fn is_closed(&self) -> bool {
        self.state().closed
    }

    /// Waits until the server is idle (or stopped).
    pub fn wait_idle(&self) {
        let mut st = self.state();
        while !Gate::settled(&st) {
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits at most `d` for the server to be idle; whether it is.
    pub fn wait_idle_for(&self, d: Duration) -> bool {
        let st = self.state();
        let (st, _) = self
            .changed
            .wait_timeout_while(st, d, |s| !Gate::settled(s))
            .unwrap_or_else(|e| e.into_inner());
        Gate::settled(&st)
    }
}

/// Listens for signals while `pi chat` runs: Ctrl-C while the server works aborts that work
/// (an `abort` command), and ends the chat (status 130) while it waits for input; SIGTERM
/// and SIGHUP end the running `bash` commands and the chat. Call inside the runtime.
pub fn watch_signals(
    gate: std::sync::Arc<Gate>,
    cancel: CancelToken,
    signalled: Signalled,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    pi_agent::runtime::on_signals(move |got| {
        if got == Signal::Interrupt && !gate.is_idle() {
            gate.send(br#"{"id":"interrupt","type":"abort"}"#.to_vec());
            return;
        }
        signalled.set_first(got);
        pi_tools::bash::kill_all_running();
        cancel.cancel();
    })
}
