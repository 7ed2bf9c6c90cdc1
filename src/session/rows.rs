//! Rows of a whole-session view rendered ahead of the writer, a batch at a time on every
//! core, from the entries' lines read again: the views stream in bounded memory instead of
//! keeping a preview of every entry.

use std::io;

use super::store::Session;

/// Rows per batch: enough to keep every core busy, little enough to stay small.
const BATCH: usize = 8192;

/// The renderings of entries in a fixed order, handed out one at a time.
pub struct Rendered<'s, F> {
    s: &'s Session,
    order: Vec<u32>,
    render: F,
    /// Position in `order` of the batch's first row.
    start: usize,
    buf: Vec<u8>,
    ends: Vec<usize>,
    next: usize,
}

impl<'s, F> Rendered<'s, F>
where
    F: Fn(u32, &[u8], &mut Vec<u8>) + Sync,
{
    /// `render(i, line, out)` appends the rendering of entry `i` (its line as the file
    /// holds it) to `out`; `order` is the order the rows will be asked for.
    pub fn new(s: &'s Session, order: Vec<u32>, render: F) -> Self {
        Rendered {
            s,
            order,
            render,
            start: 0,
            buf: Vec::new(),
            ends: Vec::new(),
            next: 0,
        }
    }

    /// The rendering of the next row, which must be entry `i`.
    pub fn next(&mut self, i: u32) -> io::Result<&[u8]> {
        if self.order.get(self.next) != Some(&i) {
            return Err(io::Error::other("rows asked for out of order"));
        }
        if self.next >= self.start + self.ends.len() {
            self.fill()?;
        }
        let k = self.next - self.start;
        self.next += 1;
        let from = if k == 0 { 0 } else { self.ends[k - 1] };
        Ok(&self.buf[from..self.ends[k]])
    }

    fn fill(&mut self) -> io::Result<()> {
        self.start = self.next;
        let batch = &self.order[self.start..(self.start + BATCH).min(self.order.len())];
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8)
            .min(batch.len().div_ceil(256).max(1));
        let per = batch.len().div_ceil(threads).max(1);
        let (s, render) = (self.s, &self.render);
        let parts: Vec<io::Result<(Vec<u8>, Vec<usize>)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .chunks(per)
                .map(|part| {
                    scope.spawn(move || {
                        let mut out = Vec::with_capacity(part.len() * 256);
                        let mut ends = Vec::with_capacity(part.len());
                        s.raw_lines(part, |k, line| {
                            render(part[k], line, &mut out);
                            ends.push(out.len());
                        })?;
                        Ok((out, ends))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(io::Error::other("render thread failed")))
                })
                .collect()
        });
        self.buf.clear();
        self.ends.clear();
        for part in parts {
            let (out, ends) = part?;
            let base = self.buf.len();
            self.buf.extend_from_slice(&out);
            self.ends.extend(ends.into_iter().map(|e| e + base));
        }
        Ok(())
    }
}
