//! Work spread over threads with results delivered in input order: the many-files commands
//! (`pi session search`, `pi usage`) read files in parallel and still print a stable order,
//! listings summarize files, `pi session append` parses a large input in parts, `fork`
//! copies, and exports render, all through these two functions.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Runs `work(i)` for `i` in `0..n` on up to `threads` threads and hands each result to
/// `sink` in index order, as soon as all earlier ones have been handed over. When `sink`
/// breaks, no new work starts and the remaining results are dropped. `work` gets a flag it
/// may poll to stop early.
pub fn ordered<R: Send>(
    n: usize,
    threads: usize,
    work: impl Fn(usize, &AtomicBool) -> R + Sync,
    mut sink: impl FnMut(usize, R) -> ControlFlow<()>,
) {
    let threads = threads.clamp(1, n.max(1));
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<(usize, R)>(threads * 4);
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, stop, work) = (&next, &stop, &work);
            scope.spawn(move || {
                loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let r = work(i, stop);
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut pending = BTreeMap::new();
        let mut want = 0;
        for (i, r) in rx.iter() {
            if stop.load(Ordering::Relaxed) {
                continue; // drain so that the workers finish
            }
            pending.insert(i, r);
            while let Some(r) = pending.remove(&want) {
                if sink(want, r).is_break() {
                    stop.store(true, Ordering::Relaxed);
                    pending.clear();
                    break;
                }
                want += 1;
            }
        }
    });
}

/// Runs `f` over `items` on up to `threads` threads, `items` cut into one run per thread,
/// and returns the results in the order of `items`. For work of about equal cost per item;
/// [`ordered`] hands out items one by one instead.
pub fn map<T: Send, R: Send>(items: Vec<T>, threads: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.into_iter().map(f).collect();
    }
    let runs = split(items, threads);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .into_iter()
            .map(|run| scope.spawn(move || run.into_iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out = Vec::new();
        for h in handles {
            match h.join() {
                Ok(part) => out.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

/// `items` cut, in order, into at most `n` (at least 1) runs of the same length (the last
/// one shorter, and empty when `items` is).
pub fn split<T>(mut items: Vec<T>, n: usize) -> Vec<Vec<T>> {
    let per = items.len().div_ceil(n.max(1)).max(1);
    let mut runs = Vec::new();
    while items.len() > per {
        let rest = items.split_off(per);
        runs.push(items);
        items = rest;
    }
    runs.push(items);
    runs
}

/// The number of threads for reading many files.
pub fn threads() -> usize {
    threads_at_most(16)
}

/// The machine's threads, at most `max`.
pub fn threads_at_most(max: usize) -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_keeps_the_order_of_items() {
        for threads in [1, 2, 3, 8] {
            for n in [0, 1, 2, 7, 100] {
                let got = map((0..n).collect(), threads, |i: u32| i * 3);
                let want: Vec<u32> = (0..n).map(|i| i * 3).collect();
                assert_eq!(got, want, "{n} items on {threads} threads");
            }
        }
    }

    #[test]
    fn results_come_in_order_and_stop_on_break() {
        let mut seen = Vec::new();
        ordered(
            100,
            4,
            |i, _| i * 2,
            |i, r| {
                assert_eq!(r, i * 2);
                seen.push(i);
                if i == 41 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        assert_eq!(seen, (0..42).collect::<Vec<_>>());
    }
}
