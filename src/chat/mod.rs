//! `pi chat`'s front end: reads the user's messages (a line editor on a terminal, else one
//! message per line or per NUL), turns them and the slash commands into the commands of
//! the RPC server (src/rpc), which runs the agent in the same process, and shows what
//! happens ([`view`]). The server does the work `pi run --rpc` does (the same session
//! writes, queue, compaction, model changes); the front end only chooses and shows.
//!
//! The front end runs on a thread of its own; the server on the runtime of the main
//! thread. They meet at the [`Gate`]: a message is sent when the server is idle, and what
//! the user types while a run goes on reaches it as a follow-up (or steers, `/steer`).

mod commands;
mod editor;
mod tree;
pub mod view;

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;

use serde_json::{Value as Json, json};

use crate::output::{Style, escape};
use crate::rpc::gate::Gate;
use crate::rpc::{self, Info, Stop};
use view::{Board, Look, SharedBoard, View};

/// What the command line asks of the chat.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// Records end with NUL rather than a newline (not a terminal).
    pub nul: bool,
    /// The first message.
    pub first: Option<String>,
}

/// Suggests the closest of the names to a typed one.
pub type Suggest = fn(&str, &[String]) -> Option<String>;

/// What the chat starts from (resolved by `pi chat`).
pub struct Setup {
    pub opts: Options,
    pub info: Info,
    pub resources: Arc<pi_prompt::resources::Resources>,
    pub agent_dir: PathBuf,
    pub cwd: PathBuf,
    /// `provider/id`.
    pub model: String,
    pub context_window: u64,
    /// The merged settings (`hideThinkingBlock`).
    pub settings: serde_json::Map<String, Json>,
    /// Where the sessions of the directory are (`/resume`).
    pub session_dir: PathBuf,
    pub suggest: Suggest,
}

/// Takes the server's output lines: responses go to the front end; the session's own
/// events are shown by the [`View`] directly.
struct Sink {
    buf: Vec<u8>,
    replies: std_mpsc::Sender<Json>,
}

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        while let Some(k) = self.buf.iter().position(|&c| c == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=k).collect();
            if let Ok(v) = serde_json::from_slice::<Json>(&line)
                && v["type"] == "response"
            {
                let _ = self.replies.send(v);
            }
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs the chat: `serve` runs the RPC server on the given input and output until the
/// front end ends its input (or a signal).
pub fn run(
    setup: Setup,
    serve: impl FnOnce(rpc::Io) -> anyhow::Result<Stop>,
) -> anyhow::Result<Stop> {
    let tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let color = crate::output::color(tty);
    let board: SharedBoard = Arc::new(std::sync::Mutex::new(Board {
        tools: Vec::new(),
        window: setup.context_window,
    }));
    let look = Look {
        tty,
        color,
        hide_thinking: setup.settings.get("hideThinkingBlock") == Some(&Json::Bool(true)),
        width: if tty {
            crate::output::term_width()
        } else {
            usize::MAX / 2
        },
    };
    let (gate, input) = Gate::new();
    let gate = Arc::new(gate);
    let (tx, replies) = std_mpsc::channel();
    let front = Front {
        gate: gate.clone(),
        replies,
        next_id: 0,
        st: Style { on: color },
        tty,
        board: board.clone(),
        setup_names: names(&setup.resources),
        session_file: setup.info.session_file.clone(),
        session_dir: setup.session_dir.clone(),
        suggest: setup.suggest,
        model: setup.model.clone(),
        recent: Vec::new(),
        prefill: None,
    };
    let input_src = if tty {
        Input::Editor(Box::new(editor::Editor::new(
            &setup.agent_dir,
            front.setup_names.clone(),
            setup.cwd.clone(),
            Style { on: color },
        )?))
    } else {
        Input::Records {
            nul: setup.opts.nul,
        }
    };
    let first = setup.opts.first.clone();
    let handle = std::thread::spawn(move || front.run(input_src, first));
    let io = rpc::Io {
        out: Box::new(Sink {
            buf: Vec::new(),
            replies: tx,
        }),
        input,
        tap: Some(Box::new(View::new(look, board))),
        gate: Some(gate.clone()),
    };
    let stop = serve(io);
    gate.close();
    if matches!(stop, Ok(Stop::Eof)) {
        match handle.join() {
            Ok(r) => r?,
            Err(_) => anyhow::bail!("the chat's input thread failed"),
        }
    }
    stop
}

/// Names the front end knows: templates and skills (what is sent as a prompt).
#[derive(Debug, Clone, Default)]
pub struct Names {
    pub templates: Vec<String>,
    pub skills: Vec<String>,
}

fn names(r: &pi_prompt::resources::Resources) -> Names {
    Names {
        templates: r.templates.iter().map(|t| t.name.clone()).collect(),
        skills: r.skills.iter().map(|s| s.name.clone()).collect(),
    }
}

/// Where messages come from.
enum Input {
    /// The line editor (a terminal).
    Editor(Box<editor::Editor>),
    /// One message per line (or per NUL) of stdin.
    Records { nul: bool },
}

/// What the user entered.
enum Entry {
    Text(String),
    /// Ctrl-C at the prompt (the first of two).
    Interrupted,
    End,
}

impl Input {
    fn read(&mut self, prefill: Option<String>) -> anyhow::Result<Entry> {
        match self {
            Input::Editor(e) => e.read(prefill),
            Input::Records { nul } => {
                let sep = if *nul { 0 } else { b'\n' };
                let mut buf = Vec::new();
                let n = std::io::stdin().lock().read_until(sep, &mut buf)?;
                if n == 0 {
                    return Ok(Entry::End);
                }
                if buf.last() == Some(&sep) {
                    buf.pop();
                }
                if !*nul && buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                Ok(Entry::Text(String::from_utf8_lossy(&buf).into_owned()))
            }
        }
    }
}

/// The front end's side of the chat.
struct Front {
    gate: Arc<Gate>,
    replies: std_mpsc::Receiver<Json>,
    next_id: u64,
    st: Style,
    tty: bool,
    board: SharedBoard,
    setup_names: Names,
    session_file: Option<PathBuf>,
    session_dir: PathBuf,
    suggest: Suggest,
    model: String,
    /// The sessions `/resume` listed last.
    recent: Vec<PathBuf>,
    /// Text for the next prompt of the editor (after `/fork ID`).
    prefill: Option<String>,
}

/// Whether the chat goes on.
enum Flow {
    Go,
    Quit,
}

impl Front {
    fn run(mut self, mut input: Input, first: Option<String>) -> anyhow::Result<()> {
        self.gate.wait_idle();
        if self.tty {
            self.say(&self.st.dim(&format!(
                "pi chat · {} · /help for commands, Ctrl-D to quit",
                escape(&self.model)
            )));
        }
        if let Some(f) = first {
            self.entry(&f);
        }
        let mut interrupted = false;
        while !self.gate.is_closed() {
            match input.read(self.prefill.take())? {
                Entry::End => break,
                Entry::Interrupted if interrupted => break,
                Entry::Interrupted => {
                    interrupted = true;
                    self.say(&self.st.dim("(Ctrl-C again or Ctrl-D to quit)"));
                }
                Entry::Text(t) => {
                    interrupted = false;
                    if let Input::Editor(e) = &mut input {
                        e.remember(&t);
                    }
                    if let Flow::Quit = self.entry(&t) {
                        break;
                    }
                }
            }
        }
        self.gate.close_input();
        Ok(())
    }

    /// A line of the front end's own on stdout.
    fn say(&self, s: &str) {
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{s}").and_then(|()| o.flush());
    }

    fn error(&self, s: &str) {
        self.say(&self.st.red(&format!("error: {s}")));
    }

    /// Sends a command and waits for its response and for the server to be idle again;
    /// `None` when the server has stopped.
    fn call(&mut self, mut cmd: Json) -> Option<Json> {
        self.next_id += 1;
        let id = format!("chat-{}", self.next_id);
        cmd["id"] = json!(id);
        if !self.gate.send(cmd.to_string().into_bytes()) {
            return None;
        }
        let reply = loop {
            match self.replies.recv() {
                Ok(r) if r["id"] == id.as_str() => break r,
                Ok(_) => continue,
                Err(_) => return None,
            }
        };
        self.wait();
        Some(reply)
    }

    /// `call`, with a failure said: the response's `data` when it succeeded.
    fn ask(&mut self, cmd: Json) -> Option<Json> {
        let r = self.call(cmd)?;
        if r["success"] == true {
            Some(r.get("data").cloned().unwrap_or(Json::Null))
        } else {
            let e = r["error"]
                .as_str()
                .unwrap_or("the command failed")
                .to_owned();
            self.error(&escape(&e));
            None
        }
    }

    /// Waits for the server to be idle; on a terminal, lines typed meanwhile are sent as
    /// follow-ups (`/steer TEXT`: steering).
    fn wait(&mut self) {
        if !self.tty {
            self.gate.wait_idle();
            return;
        }
        loop {
            if self
                .gate
                .wait_idle_for(std::time::Duration::from_millis(50))
            {
                return;
            }
            if !stdin_ready() {
                continue;
            }
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let line = line.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            let (text, behavior) = match line.strip_prefix("/steer ") {
                Some(t) => (t, "steer"),
                None => (line, "followUp"),
            };
            self.next_id += 1;
            let cmd = json!({"id": format!("chat-{}", self.next_id), "type": "prompt",
                             "message": text, "streamingBehavior": behavior});
            self.gate.send(cmd.to_string().into_bytes());
            let what = if behavior == "steer" {
                "steering"
            } else {
                "queued as a follow-up"
            };
            self.say(&self.st.dim(&format!("({what})")));
        }
    }

    /// A message to the model (templates and skills expanded by the server).
    fn prompt(&mut self, text: &str) {
        if let Some(d) = self.ask(json!({"type": "prompt", "message": text}))
            && d["disposition"] == "handled"
        {
            self.say(&self.st.dim("(handled by a hook)"));
        }
    }
}

/// Whether a line can be read from stdin without waiting (a terminal in canonical mode
/// reports it once Enter is pressed).
fn stdin_ready() -> bool {
    let mut fds = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, for the duration of the call.
    let n = unsafe { libc::poll(&mut fds, 1, 0) };
    n > 0 && fds.revents & libc::POLLIN != 0
}
