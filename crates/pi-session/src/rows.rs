//! Rows of a whole-session view rendered ahead of the writer, from the entries' lines read
//! again: the views stream in bounded memory instead of keeping a preview of every entry.
//! Batches of rows are rendered on worker threads that keep their buffers and run ahead of
//! the writer (a few batches each), so reading, rendering and writing overlap.

use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;

use super::store::Session;

/// Rows per batch: small enough to start writing early, large enough to read lines in
/// long runs.
const BATCH: usize = 2048;
/// Batches a worker renders ahead of the writer.
const AHEAD: usize = 2;
/// Lines further apart than this are read separately.
const GAP: u64 = 16 << 10;

/// A rendered batch: the rows one after another and where each ends.
#[derive(Default)]
struct Batch {
    out: Vec<u8>,
    ends: Vec<usize>,
}

/// The renderings of entries in a fixed order, handed out one at a time (see [`stream`]).
pub struct Rows<'a> {
    order: &'a [u32],
    workers: Vec<(mpsc::Receiver<io::Result<Batch>>, mpsc::Sender<Batch>)>,
    /// Batch being handed out, and its number.
    cur: Batch,
    cur_no: Option<usize>,
    next: usize,
}

impl Rows<'_> {
    /// The rendering of the next row, which must be entry `i`.
    pub fn next(&mut self, i: u32) -> io::Result<&[u8]> {
        if self.order.get(self.next) != Some(&i) {
            return Err(io::Error::other("rows asked for out of order"));
        }
        let no = self.next / BATCH;
        if self.cur_no != Some(no) {
            let (rx, _) = &self.workers[no % self.workers.len()];
            let batch = rx
                .recv()
                .map_err(|_| io::Error::other("render thread failed"))??;
            let used = std::mem::replace(&mut self.cur, batch);
            if self.cur_no.is_some() {
                // The previous batch's buffers go back to the worker that filled them.
                let prev = self.workers.len() + no - 1;
                let _ = self.workers[prev % self.workers.len()].1.send(used);
            }
            self.cur_no = Some(no);
        }
        let k = self.next - no * BATCH;
        self.next += 1;
        let from = if k == 0 { 0 } else { self.cur.ends[k - 1] };
        Ok(&self.cur.out[from..self.cur.ends[k]])
    }
}

/// Runs `write` with the rows of the entries of `order`, in that order: `render(i, line,
/// out)` appends the rendering of entry `i` to `out`, on worker threads, a batch ahead of
/// `write`. `line` is the entry's line as the file holds it when `needs_line(i)`, else
/// empty (its row is made from what was kept of it).
pub fn stream<F, N, R>(
    s: &Session,
    order: &[u32],
    needs_line: N,
    render: F,
    write: impl FnOnce(&mut Rows<'_>) -> io::Result<R>,
) -> io::Result<R>
where
    F: Fn(u32, &[u8], &mut Vec<u8>) + Sync,
    N: Fn(u32) -> bool + Sync,
{
    let batches = order.len().div_ceil(BATCH);
    let threads = pi_base::par::threads_at_most(8).clamp(1, batches.max(1));
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        for w in 0..threads {
            let (tx, rx) = mpsc::sync_channel::<io::Result<Batch>>(AHEAD);
            let (back_tx, back_rx) = mpsc::channel::<Batch>();
            let (render, needs_line) = (&render, &needs_line);
            scope.spawn(move || {
                let mut buf = Vec::new();
                let mut spans = Vec::new();
                let mut by_offset = Vec::new();
                for no in (w..batches).step_by(threads) {
                    let part = &order[no * BATCH..((no + 1) * BATCH).min(order.len())];
                    let mut batch = back_rx.try_recv().unwrap_or_default();
                    batch.out.clear();
                    batch.ends.clear();
                    let done =
                        read_lines(s, part, needs_line, &mut buf, &mut spans, &mut by_offset).map(
                            |()| {
                                for (k, &(at, len)) in spans.iter().enumerate() {
                                    render(part[k], &buf[at..at + len], &mut batch.out);
                                    batch.ends.push(batch.out.len());
                                }
                                batch
                            },
                        );
                    let failed = done.is_err();
                    if tx.send(done).is_err() || failed {
                        break;
                    }
                }
            });
            workers.push((rx, back_tx));
        }
        let mut rows = Rows {
            order,
            workers,
            cur: Batch::default(),
            cur_no: None,
            next: 0,
        };
        write(&mut rows)
        // `rows` is dropped here: a worker still sending finds its channel closed.
    })
}

/// Reads the lines of the entries `idxs` that `needs_line` into `buf`, lines near each
/// other in the file in one read; `spans[k]` is where the line of `idxs[k]` is in `buf`
/// (empty for a line not read).
fn read_lines(
    s: &Session,
    idxs: &[u32],
    needs_line: impl Fn(u32) -> bool,
    buf: &mut Vec<u8>,
    spans: &mut Vec<(usize, usize)>,
    by_offset: &mut Vec<u32>,
) -> io::Result<()> {
    const RUN: u64 = 8 << 20;
    let rec = |k: u32| &s.entries[idxs[k as usize] as usize];
    by_offset.clear();
    by_offset.extend((0..idxs.len() as u32).filter(|&k| needs_line(idxs[k as usize])));
    by_offset.sort_unstable_by_key(|&k| rec(k).offset);
    spans.clear();
    spans.resize(idxs.len(), (0, 0));
    // The runs to read: (file start, file end, first and last position in `by_offset`).
    let mut runs: Vec<(u64, u64, usize, usize)> = Vec::new();
    let mut k = 0;
    while k < by_offset.len() {
        let first = rec(by_offset[k]);
        let (start, mut end) = (first.offset, first.offset + u64::from(first.len));
        let mut m = k + 1;
        while m < by_offset.len() {
            let r = rec(by_offset[m]);
            if r.offset > end + GAP || r.offset + u64::from(r.len) - start > RUN {
                break;
            }
            end = end.max(r.offset + u64::from(r.len));
            m += 1;
        }
        runs.push((start, end, k, m));
        k = m;
    }
    let total: u64 = runs.iter().map(|&(a, b, _, _)| b - a).sum();
    let total = usize::try_from(total).map_err(io::Error::other)?;
    if buf.len() < total {
        buf.resize(total, 0);
    }
    let mut at = 0usize;
    for &(start, end, from, to) in &runs {
        let len = (end - start) as usize;
        s.file().read_exact_at(&mut buf[at..at + len], start)?;
        for &p in &by_offset[from..to] {
            let r = rec(p);
            spans[p as usize] = (at + (r.offset - start) as usize, r.len as usize);
        }
        at += len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows come in the order asked for, each made from its own line when it needs one and
    /// from nothing otherwise, across batches and lines far apart in the file.
    #[test]
    fn rows_get_their_own_lines_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut text = String::from(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"cwd\":\"/\"}\n",
        );
        let n = 3 * BATCH + 17;
        for i in 0..n {
            // Some lines long enough to put the next ones past the gap read in one go.
            let pad = if i % 97 == 0 {
                "x".repeat(GAP as usize + 1)
            } else {
                String::new()
            };
            text.push_str(&format!(
                "{{\"type\":\"custom\",\"id\":\"e{i}\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00Z\",\"pad\":\"{pad}\"}}\n"
            ));
        }
        std::fs::write(&path, &text).unwrap();
        let s = Session::open(&path).unwrap();
        assert_eq!(s.entries.len(), n);
        // Every entry, in an order unlike the file's: the odd ones backwards, then the even.
        let n = n as u32;
        let order: Vec<u32> = (1..n).step_by(2).rev().chain((0..n).step_by(2)).collect();
        let needs_line = |i: u32| !i.is_multiple_of(3);
        let render = |i: u32, line: &[u8], out: &mut Vec<u8>| {
            out.extend_from_slice(format!("{i}:").as_bytes());
            out.extend_from_slice(line);
        };
        let lines: Vec<&str> = text.lines().skip(1).collect();
        let mut seen = 0;
        stream(&s, &order, needs_line, render, |rows| {
            for &i in &order {
                let row = rows.next(i)?.to_vec();
                let want = if needs_line(i) { lines[i as usize] } else { "" };
                seen += 1;
                assert_eq!(String::from_utf8(row).unwrap(), format!("{i}:{want}"));
            }
            // Out of order is an error, not a wrong row.
            assert!(rows.next(order[0]).is_err());
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, n);
    }
}
