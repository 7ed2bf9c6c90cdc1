//! The tool's progress indicators, in one style: a spinner line on stderr (indicatif), and
//! for work on a known number of items a bar with `N/M` after the spinner. Both are drawn
//! only when stderr is a terminal, so stdout (JSONL or text) and redirected stderr never see
//! them.
//!
//! ```text
//! let spinner = progress::Spinner::start("summarizing").with_counter("characters");
//! spinner.inc(120); // ⠹ summarizing (120 characters)
//! spinner.set_message("retrying in 2.0 s");
//! spinner.println("a line above the spinner");
//! drop(spinner); // the line is cleared
//!
//! let bar = progress::Bar::new(10);
//! bar.set_message("019b7ca9 Quick start");
//! bar.inc(1); // ⠹  1/10 ██░░░░░░░░░░░░░░░░░░ 019b7ca9 Quick start
//! bar.suspend(|| eprintln!("a line above the bar"));
//! drop(bar); // the line is cleared
//! ```

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Spinner frames; the last one is the finished state, which is never left on screen.
const FRAMES: [&str; 11] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏", " "];
const TICK: Duration = Duration::from_millis(100);
const REDRAWS_PER_SECOND: u8 = 20;

/// A status line on stderr: a spinner, a message and an optional counter. On anything but a
/// terminal it draws nothing. Cleared when dropped.
pub struct Spinner {
    /// `None` when stderr is not a terminal.
    live: Option<Live>,
}

struct Live {
    style: ProgressStyle,
    /// The unit of the counter (` (N unit)` after the message once N > 0).
    unit: Option<&'static str>,
    count: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The message; `None` while cleared.
    message: Option<String>,
    /// The bar on screen, while there is a message.
    bar: Option<ProgressBar>,
}

impl Spinner {
    /// A spinner with nothing on screen until [`Spinner::set_message`].
    pub fn new() -> Spinner {
        if !std::io::stderr().is_terminal() {
            return Spinner::hidden();
        }
        let style = style("{spinner} {wide_msg}");
        Spinner {
            live: Some(Live {
                style,
                unit: None,
                count: AtomicU64::new(0),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// A spinner showing `message`.
    pub fn start(message: impl Into<String>) -> Spinner {
        let s = Spinner::new();
        s.set_message(message);
        s
    }

    /// A spinner that never draws (its [`Spinner::println`] still prints).
    pub fn hidden() -> Spinner {
        Spinner { live: None }
    }

    /// Adds a live counter, shown as ` (N unit)` after the message once it is above 0.
    pub fn with_counter(mut self, unit: &'static str) -> Spinner {
        if let Some(live) = &mut self.live {
            live.unit = Some(unit);
        }
        self.refresh();
        self
    }

    /// Whether the spinner draws (stderr is a terminal).
    pub fn is_active(&self) -> bool {
        self.live.is_some()
    }

    /// Shows `message` (replacing the previous one), drawing the spinner again if cleared.
    pub fn set_message(&self, message: impl Into<String>) {
        if let Some(live) = &self.live {
            let mut st = live.lock();
            st.message = Some(message.into());
            live.draw(&mut st);
        }
    }

    /// Takes the line off the screen until the next [`Spinner::set_message`].
    pub fn clear(&self) {
        if let Some(live) = &self.live {
            let mut st = live.lock();
            st.message = None;
            if let Some(bar) = st.bar.take() {
                bar.finish_and_clear();
            }
        }
    }

    /// Adds `n` to the counter.
    pub fn inc(&self, n: u64) {
        if let Some(live) = &self.live {
            live.count.fetch_add(n, Ordering::Relaxed);
            self.refresh();
        }
    }

    /// Prints `line` on stderr, above the spinner when it is on screen.
    pub fn println(&self, line: &str) {
        if let Some(live) = &self.live {
            let st = live.lock();
            if let Some(bar) = &st.bar {
                bar.println(line);
                return;
            }
        }
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    fn refresh(&self) {
        if let Some(live) = &self.live {
            live.draw(&mut live.lock());
        }
    }
}

impl Default for Spinner {
    fn default() -> Spinner {
        Spinner::new()
    }
}

/// The tool's style with `template`: the spinner's frames in the tool's color (colored here
/// rather than in the template, so that the rule is the tool's, `output::color`, not the
/// terminal library's) and the bar's characters.
fn style(template: &str) -> ProgressStyle {
    let colors = crate::output::Style {
        on: crate::output::color(true),
    };
    let frames: Vec<String> = FRAMES.iter().map(|f| colors.cyan(f)).collect();
    let frames: Vec<&str> = frames.iter().map(String::as_str).collect();
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .tick_strings(&frames)
        .progress_chars("█▌░")
}

/// A terminal target of our own: indicatif's stderr target also hides itself when TERM is
/// unset or `dumb`, and the indicators always draw on a terminal.
fn terminal() -> ProgressDrawTarget {
    ProgressDrawTarget::term_like_with_hz(
        Box::new(console::Term::buffered_stderr()),
        REDRAWS_PER_SECOND,
    )
}

/// Progress through a known number of items on stderr: the spinner, `N/M`, a bar and a
/// message (the item at hand). On anything but a terminal it draws nothing. Cleared when
/// dropped.
pub struct Bar {
    /// `None` when stderr is not a terminal.
    live: Option<ProgressBar>,
}

impl Bar {
    /// A bar at 0 of `len`.
    pub fn new(len: u64) -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len), terminal());
        bar.set_style(style("{spinner} {pos:>3}/{len} {bar:20} {wide_msg}"));
        bar.enable_steady_tick(TICK);
        Bar { live: Some(bar) }
    }

    /// A bar that never draws.
    pub fn hidden() -> Bar {
        Bar { live: None }
    }

    /// Shows `message` after the bar.
    pub fn set_message(&self, message: impl Into<String>) {
        if let Some(bar) = &self.live {
            bar.set_message(message.into());
        }
    }

    /// Counts `n` more items done.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.live {
            bar.inc(n);
        }
    }

    /// Runs `f` (which prints on stderr) with the bar off the screen, then draws it again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.live {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(bar) = self.live.take() {
            bar.finish_and_clear();
        }
    }
}

impl Live {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts the message and counter on screen (nothing while cleared).
    fn draw(&self, st: &mut State) {
        let Some(message) = &st.message else {
            return;
        };
        let n = self.count.load(Ordering::Relaxed);
        let text = match self.unit {
            Some(unit) if n > 0 => format!("{message} ({n} {unit})"),
            _ => message.clone(),
        };
        match &st.bar {
            Some(bar) => bar.set_message(text),
            None => {
                let bar = ProgressBar::with_draw_target(None, terminal());
                bar.set_style(self.style.clone());
                bar.set_message(text);
                bar.enable_steady_tick(TICK);
                st.bar = Some(bar);
            }
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The use the module documentation shows runs as written (off a terminal, nothing is
    /// drawn).
    #[test]
    fn the_documented_use_runs() {
        let spinner = Spinner::start("summarizing").with_counter("characters");
        spinner.inc(120);
        spinner.set_message("retrying in 2.0 s");
        spinner.println("a line above the spinner");
        drop(spinner);
        let bar = Bar::new(10);
        bar.set_message("019b7ca9 Quick start");
        bar.inc(1);
        bar.suspend(|| eprintln!("a line above the bar"));
        drop(bar);
    }

    /// Without a terminal nothing draws, and every call is safe.
    #[test]
    fn hidden_spinner_is_inert() {
        let s = Spinner::hidden().with_counter("characters");
        assert!(!s.is_active());
        s.set_message("working");
        s.inc(5);
        s.clear();
        s.set_message("again");
        let b = Bar::hidden();
        assert!(b.live.is_none());
        b.set_message("item");
        b.inc(1);
        assert_eq!(b.suspend(|| 7), 7);
    }
}
