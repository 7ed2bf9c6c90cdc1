//! One writer per file at a time: `edit` and `write` calls on the same file (symlinks
//! resolved) run one after another in the order they were issued, calls on different files
//! run side by side. A [`Ticket`] is taken when the call is issued and waited on by the code
//! that changes the file; dropping it (done, or the call abandoned) lets the next one go.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

type Queues = HashMap<PathBuf, VecDeque<u64>>;

struct State {
    queues: Mutex<Queues>,
    turn: Condvar,
    next: AtomicU64,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| State {
        queues: Mutex::new(HashMap::new()),
        turn: Condvar::new(),
        next: AtomicU64::new(0),
    })
}

fn lock(s: &State) -> MutexGuard<'_, Queues> {
    s.queues.lock().unwrap_or_else(|e| e.into_inner())
}

/// A place in the queue of one file.
#[derive(Debug)]
pub(crate) struct Ticket {
    key: PathBuf,
    id: u64,
}

/// Joins the queue of `path` (an absolute path).
pub(crate) fn enter(path: &Path) -> Ticket {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let s = state();
    let id = s.next.fetch_add(1, Ordering::Relaxed);
    lock(s).entry(key.clone()).or_default().push_back(id);
    Ticket { key, id }
}

impl Ticket {
    /// Blocks until every earlier ticket of the same file is dropped.
    pub(crate) fn wait(&self) {
        let s = state();
        let mut q = lock(s);
        while q.get(&self.key).and_then(VecDeque::front) != Some(&self.id)
            && q.get(&self.key).is_some_and(|d| d.contains(&self.id))
        {
            q = s.turn.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let s = state();
        let mut q = lock(s);
        if let Some(d) = q.get_mut(&self.key) {
            d.retain(|id| *id != self.id);
            if d.is_empty() {
                q.remove(&self.key);
            }
        }
        drop(q);
        s.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn same_file_in_order() {
        let dir = std::env::temp_dir().join(format!("pi-queue-test-{}", std::process::id()));
        let a = enter(&dir.join("f"));
        let b = enter(&dir.join("f"));
        let other = enter(&dir.join("g"));
        other.wait(); // another file does not wait
        let log = Arc::new(Mutex::new(Vec::new()));
        let l2 = Arc::clone(&log);
        let t = std::thread::spawn(move || {
            b.wait();
            l2.lock().unwrap().push("b");
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        log.lock().unwrap().push("a");
        a.wait();
        drop(a);
        t.join().unwrap();
        assert_eq!(*log.lock().unwrap(), vec!["a", "b"]);
    }
}
