//! The line editor of `pi chat` on a terminal (rustyline): history in
//! `<agent dir>/chat-history`, Tab completion of slash commands, templates, `/skill:`
//! names and paths after `@`, Alt-Enter or Ctrl-J for a new line, bracketed paste kept as
//! one message.

use std::path::{Path, PathBuf};

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::Validator;
use rustyline::{Cmd, Config, Context, KeyCode, KeyEvent, Modifiers};

use super::{Entry, Names};
use crate::output::Style;

/// Completes what the user types.
struct Helper {
    names: Vec<String>,
    files: FilenameCompleter,
    cwd: PathBuf,
}

impl Completer for Helper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        if let Some(word) = before.strip_prefix('/')
            && !word.contains(char::is_whitespace)
        {
            let pairs = self
                .names
                .iter()
                .filter(|n| n.starts_with(word))
                .map(|n| Pair {
                    display: format!("/{n}"),
                    replacement: n.clone(),
                })
                .collect();
            return Ok((1, pairs));
        }
        let start = before.rfind(char::is_whitespace).map_or(0, |k| {
            k + before[k..].chars().next().map_or(1, char::len_utf8)
        });
        let Some(path) = before[start..].strip_prefix('@') else {
            return Ok((pos, Vec::new()));
        };
        // Relative paths are the session's directory's.
        let full = if path.starts_with('/') || path.starts_with('~') {
            path.to_owned()
        } else {
            format!("{}/{path}", self.cwd.display())
        };
        let prefix_len = full.len() - path.len();
        let (s, pairs) = self.files.complete_path(&full, full.len())?;
        let s = s.saturating_sub(prefix_len);
        let pairs = pairs
            .into_iter()
            .map(|p| Pair {
                display: p.display,
                replacement: p
                    .replacement
                    .strip_prefix(&full[..prefix_len])
                    .map(str::to_owned)
                    .unwrap_or(p.replacement),
            })
            .collect();
        Ok((start + 1 + s, pairs))
    }
}

impl Hinter for Helper {
    type Hint = String;
}
impl Highlighter for Helper {}
impl Validator for Helper {}
impl rustyline::Helper for Helper {}

pub(super) struct Editor {
    ed: rustyline::Editor<Helper, FileHistory>,
    history: PathBuf,
    prompt: String,
}

impl Editor {
    pub(super) fn new(
        agent_dir: &Path,
        names: Names,
        cwd: PathBuf,
        st: Style,
    ) -> anyhow::Result<Editor> {
        let config = Config::builder()
            .auto_add_history(false)
            .bracketed_paste(true)
            .max_history_size(1000)
            .map(|b| b.build())
            .unwrap_or_default();
        let mut ed = rustyline::Editor::with_config(config)
            .map_err(|e| anyhow::anyhow!("cannot start the line editor: {e}"))?;
        ed.set_helper(Some(Helper {
            names: super::commands::all_names(&names),
            files: FilenameCompleter::new(),
            cwd,
        }));
        ed.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), Cmd::Newline);
        ed.bind_sequence(KeyEvent::ctrl('J'), Cmd::Newline);
        let history = agent_dir.join("chat-history");
        let _ = ed.load_history(&history);
        let prompt = if st.on {
            format!("{} ", st.cyan("›"))
        } else {
            "› ".into()
        };
        Ok(Editor {
            ed,
            history,
            prompt,
        })
    }

    pub(super) fn read(&mut self, prefill: Option<String>) -> anyhow::Result<Entry> {
        let r = match prefill {
            Some(t) => self.ed.readline_with_initial(&self.prompt, (&t, "")),
            None => self.ed.readline(&self.prompt),
        };
        match r {
            Ok(line) => Ok(Entry::Text(line)),
            Err(ReadlineError::Interrupted) => Ok(Entry::Interrupted),
            Err(ReadlineError::Eof) => Ok(Entry::End),
            Err(e) => Err(anyhow::anyhow!("cannot read from the terminal: {e}")),
        }
    }

    /// Adds an entry to the history and to its file (0600 in the agent directory).
    pub(super) fn remember(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        let _ = self.ed.add_history_entry(line);
        if !self.history.exists() {
            if let Some(dir) = self.history.parent() {
                let _ = pi_base::fs::create_dir_all(dir);
            }
            let _ = pi_base::fs::create_new(&self.history);
        }
        let _ = self.ed.append_history(&self.history);
    }
}
