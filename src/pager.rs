//! Long human views through a pager, as git does it: on a terminal, text longer than the
//! screen goes to `$PAGER` (`less -R` when unset; an empty `PAGER` or `cat` means none),
//! and text that fits is printed as it is. The first screenful is held back until it is
//! known whether it fits; after that the text streams into the pager.

use std::io::{self, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::output::Out;

enum State {
    /// Holding the text until it is more than a screen.
    Holding(Vec<u8>),
    /// Streaming into the pager.
    Paging(Child, ChildStdin),
    /// Straight to stdout (not a terminal, no pager, or it fits).
    Direct,
    /// The pager was quit: the rest is dropped.
    Closed(Child),
}

/// A writer for a human view that pages it when it is longer than the terminal.
pub struct Pager<'a> {
    out: &'a mut Out,
    state: State,
    rows: usize,
    lines: usize,
}

/// The pager command: `$PAGER`, or `less -R`; `None` for no pager.
fn command() -> Option<String> {
    match std::env::var("PAGER") {
        Ok(p) if p.trim().is_empty() || p.trim() == "cat" => None,
        Ok(p) => Some(p),
        Err(_) => Some("less -R".to_owned()),
    }
}

impl<'a> Pager<'a> {
    /// Pages when `out` is a terminal and `enabled` (no `--no-pager`).
    pub fn new(out: &'a mut Out, enabled: bool) -> Pager<'a> {
        let on = enabled && out.tty && command().is_some();
        Pager {
            out,
            state: if on {
                State::Holding(Vec::new())
            } else {
                State::Direct
            },
            rows: crate::output::term_height(),
            lines: 0,
        }
    }

    fn start(&mut self, held: Vec<u8>) -> io::Result<()> {
        self.out.flush()?;
        let spawned = command().and_then(|cmd| {
            let mut c = Command::new("sh");
            c.arg("-c").arg(&cmd).stdin(Stdio::piped());
            if std::env::var_os("LESS").is_none() {
                c.env("LESS", "FRX");
            }
            c.spawn().ok()
        });
        match spawned {
            Some(mut child) => match child.stdin.take() {
                Some(stdin) => {
                    self.state = State::Paging(child, stdin);
                    self.write_all(&held)
                }
                None => {
                    self.state = State::Closed(child);
                    Ok(())
                }
            },
            None => {
                self.state = State::Direct;
                self.out.write_all(&held)
            }
        }
    }

    /// Writes what is held and waits for the pager to be quit.
    pub fn finish(mut self) -> io::Result<()> {
        match std::mem::replace(&mut self.state, State::Direct) {
            State::Holding(buf) => {
                self.out.write_all(&buf)?;
                self.out.flush()
            }
            State::Paging(mut child, stdin) => {
                drop(stdin);
                child.wait()?;
                Ok(())
            }
            State::Closed(mut child) => {
                child.wait()?;
                Ok(())
            }
            State::Direct => self.out.flush(),
        }
    }
}

impl Write for Pager<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.state {
            State::Holding(held) => {
                held.extend_from_slice(buf);
                self.lines += memchr::memchr_iter(b'\n', buf).count();
                // The prompt line of the shell needs one row too.
                if self.lines >= self.rows {
                    let held = std::mem::take(held);
                    self.start(held)?;
                }
                Ok(buf.len())
            }
            State::Paging(_, stdin) => match stdin.write_all(buf) {
                Ok(()) => Ok(buf.len()),
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                    if let State::Paging(child, _) =
                        std::mem::replace(&mut self.state, State::Direct)
                    {
                        self.state = State::Closed(child);
                    }
                    Ok(buf.len())
                }
                Err(e) => Err(e),
            },
            State::Direct => self.out.write_all(buf).map(|()| buf.len()),
            State::Closed(_) => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.state {
            State::Paging(_, stdin) => match stdin.flush() {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e),
                _ => Ok(()),
            },
            State::Direct => self.out.flush(),
            _ => Ok(()),
        }
    }
}
