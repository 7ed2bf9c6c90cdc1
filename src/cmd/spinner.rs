//! A progress line on stderr while a model writes a summary (only on a terminal).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::compact::job::Watch;
use crate::llm::Event;

/// A progress line on stderr while a model writes (only on a terminal).
pub struct Spinner {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    status: Arc<Mutex<String>>,
}

impl Spinner {
    pub fn start(label: String, chars: Arc<AtomicUsize>) -> Option<Spinner> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let status = Arc::new(Mutex::new(label));
        let (s2, st2) = (stop.clone(), status.clone());
        let handle = std::thread::spawn(move || {
            let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut k = 0usize;
            while !s2.load(Ordering::Relaxed) {
                let text = st2.lock().map(|s| s.clone()).unwrap_or_default();
                let n = chars.load(Ordering::Relaxed);
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K{} {text}{}",
                    frames[k % frames.len()],
                    if n > 0 {
                        format!(" ({n} characters)")
                    } else {
                        String::new()
                    }
                );
                let _ = err.flush();
                drop(err);
                k += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        });
        Some(Spinner {
            stop,
            handle: Some(handle),
            status,
        })
    }

    pub fn set(&self, text: String) {
        if let Ok(mut s) = self.status.lock() {
            *s = text;
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// What `pi compact` and `pi session branch --summarize` show while they work: warnings,
/// and a spinner with the characters written so far while a model writes.
#[derive(Default)]
pub struct Progress {
    spinner: Mutex<Option<Spinner>>,
    chars: Arc<AtomicUsize>,
}

impl Watch for Progress {
    fn warning(&self, message: &str) {
        crate::error::warn(message);
    }

    fn summarizing(&self, label: &str) {
        self.chars.store(0, Ordering::Relaxed);
        if let Ok(mut s) = self.spinner.lock() {
            *s = Spinner::start(label.to_owned(), self.chars.clone());
        }
    }

    fn event(&self, e: &Event) {
        match e {
            Event::TextDelta { delta, .. } | Event::ThinkingDelta { delta, .. } => {
                self.chars
                    .fetch_add(delta.chars().count(), Ordering::Relaxed);
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
                match self.spinner.lock().ok().as_deref().and_then(Option::as_ref) {
                    Some(s) => s.set(text),
                    None => crate::error::note(&text),
                }
            }
            _ => {}
        }
    }

    fn summarized(&self) {
        if let Ok(mut s) = self.spinner.lock() {
            *s = None;
        }
    }
}
