//! What `pi compact` and `pi session branch --summarize` show while they work: warnings on
//! stderr, and while a model writes a summary, a spinner with the characters written so far
//! (on a terminal only); with `pi compact --all`, a bar of the sessions done and lines that
//! name the session they are about (by its short id).

use std::sync::Mutex;

use crate::output::escape;
use crate::progress::{Bar, Spinner};
use pi_agent::compact::job::Watch;
use pi_ai::Event;

/// Shows a job's progress on stderr: for one session a spinner while the model writes; for
/// one session of many (`pi compact --all`) the characters written on the bar's line, and
/// every line printed names the session.
#[derive(Default)]
pub struct Progress<'a> {
    spinner: Mutex<Option<Spinner>>,
    /// In a run over many sessions: the bar, and the session at hand.
    many: Option<Many<'a>>,
}

struct Many<'a> {
    bar: &'a Bar,
    /// The session's short id, then its name once known.
    label: Mutex<String>,
    /// Characters the model has written.
    written: Mutex<Option<(String, u64)>>,
}

impl<'a> Progress<'a> {
    /// The progress of one session (`short_id`) of a run over many, drawn on `bar`.
    pub fn of_one(bar: &'a Bar, short_id: &str) -> Progress<'a> {
        bar.set_message(short_id.to_owned());
        Progress {
            spinner: Mutex::default(),
            many: Some(Many {
                bar,
                label: Mutex::new(short_id.to_owned()),
                written: Mutex::default(),
            }),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Option<Spinner>) -> T) -> Option<T> {
        self.spinner.lock().ok().map(|mut s| f(&mut s))
    }

    /// The session at hand ("" for a single session).
    pub fn label(&self) -> String {
        self.many
            .as_ref()
            .and_then(|m| m.label.lock().ok().map(|l| l.clone()))
            .unwrap_or_default()
    }

    /// Prints on stderr above the bar, if there is one.
    pub fn print(&self, f: impl FnOnce()) {
        match &self.many {
            Some(m) => m.bar.suspend(f),
            None => f(),
        }
    }
}

impl Many<'_> {
    /// Puts the session and what the model is doing on the bar's line.
    fn show(&self) {
        let label = self.label.lock().map(|l| l.clone()).unwrap_or_default();
        let text = match self.written.lock().ok().and_then(|w| w.clone()) {
            Some((what, 0)) => format!("{label} · {what}"),
            Some((what, n)) => format!("{label} · {what} ({n} characters)"),
            None => label,
        };
        self.bar.set_message(text);
    }
}

impl Watch for Progress<'_> {
    fn warning(&self, message: &str) {
        match &self.many {
            Some(m) => {
                let label = self.label();
                m.bar
                    .suspend(|| crate::error::warn(&format!("session {label}: {message}")));
            }
            None => crate::error::warn(message),
        }
    }

    fn opened(&self, name: Option<&str>) {
        if let (Some(m), Some(name)) = (&self.many, name.filter(|n| !n.is_empty())) {
            if let Ok(mut l) = m.label.lock() {
                let short: String = name.chars().take(40).collect();
                l.push_str(&format!(" \u{201c}{}\u{201d}", escape(&short)));
            }
            m.show();
        }
    }

    fn summarizing(&self, label: &str) {
        match &self.many {
            Some(m) => {
                if let Ok(mut w) = m.written.lock() {
                    *w = Some((label.to_owned(), 0));
                }
                m.show();
            }
            None => {
                self.with(|s| *s = Some(Spinner::start(label).with_counter("characters")));
            }
        }
    }

    fn event(&self, e: &Event) {
        match e {
            Event::TextDelta { delta, .. } | Event::ThinkingDelta { delta, .. } => {
                let n = delta.chars().count() as u64;
                match &self.many {
                    Some(m) => {
                        if let Ok(mut w) = m.written.lock()
                            && let Some((_, count)) = w.as_mut()
                        {
                            *count += n;
                        }
                        m.show();
                    }
                    None => {
                        self.with(|s| {
                            if let Some(s) = s {
                                s.inc(n);
                            }
                        });
                    }
                }
            }
            Event::Retry {
                attempt,
                max_retries,
                delay_ms,
                error,
            } => {
                let text = format!(
                    "retrying ({attempt}/{max_retries}) in {:.1} s after: {error}",
                    *delay_ms as f64 / 1000.0
                );
                if let Some(m) = &self.many {
                    // Many sessions: a line that names the session, above the bar.
                    let label = self.label();
                    m.bar
                        .suspend(|| crate::error::note(&format!("session {label}: {text}")));
                    return;
                }
                let shown = self.with(|s| match s {
                    Some(s) if s.is_active() => {
                        s.set_message(text.clone());
                        true
                    }
                    _ => false,
                });
                if shown != Some(true) {
                    crate::error::note(&text);
                }
            }
            _ => {}
        }
    }

    fn summarized(&self) {
        match &self.many {
            Some(m) => {
                if let Ok(mut w) = m.written.lock() {
                    *w = None;
                }
                m.show();
            }
            None => {
                self.with(|s| *s = None);
            }
        }
    }
}
