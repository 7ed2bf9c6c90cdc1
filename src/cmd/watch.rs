//! What `pi compact` and `pi session branch --summarize` show while they work: warnings on
//! stderr, and while a model writes a summary, a spinner with the characters written so far
//! (on a terminal only).

use std::sync::Mutex;

use crate::compact::job::Watch;
use crate::llm::Event;
use crate::progress::Spinner;

#[derive(Default)]
pub struct Progress {
    spinner: Mutex<Option<Spinner>>,
}

impl Progress {
    fn with<T>(&self, f: impl FnOnce(&mut Option<Spinner>) -> T) -> Option<T> {
        self.spinner.lock().ok().map(|mut s| f(&mut s))
    }
}

impl Watch for Progress {
    fn warning(&self, message: &str) {
        crate::error::warn(message);
    }

    fn summarizing(&self, label: &str) {
        self.with(|s| *s = Some(Spinner::start(label).with_counter("characters")));
    }

    fn event(&self, e: &Event) {
        match e {
            Event::TextDelta { delta, .. } | Event::ThinkingDelta { delta, .. } => {
                self.with(|s| {
                    if let Some(s) = s {
                        s.inc(delta.chars().count() as u64);
                    }
                });
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
        self.with(|s| *s = None);
    }
}
