//! The slash commands of `pi chat`: each does what the matching pi subcommand does, on the
//! chat's session, through the server's commands.

use std::path::PathBuf;

use serde_json::{Value as Json, json};

use super::{Flow, Front};
use crate::output::escape;

/// The commands, with what they take and do (`/help`).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("help", "", "this list"),
    (
        "model",
        "[M]",
        "list the models, or switch to M (provider/id or id)",
    ),
    ("thinking", "[LEVEL]", "show or set the thinking level"),
    ("tree", "", "the session's tree, the current leaf marked"),
    (
        "branch",
        "ID [SUMMARY]",
        "continue from entry ID (root: the start)",
    ),
    (
        "fork",
        "[ID]",
        "a new session: the path so far, or up to user message ID",
    ),
    (
        "resume",
        "[N]",
        "list recent sessions, or switch to number N",
    ),
    ("new", "", "start a new session"),
    ("name", "NAME", "name the session"),
    ("label", "ID TEXT", "label an entry (empty TEXT clears it)"),
    ("compact", "[INSTRUCTIONS]", "summarize older messages"),
    ("export", "[FILE]", "write the session as an HTML page"),
    ("session", "", "file, id, counts, tokens, cost"),
    (
        "show",
        "[N]",
        "the whole output of tool call N (default: the last)",
    ),
    ("copy", "", "copy the last answer to the clipboard (OSC 52)"),
    (
        "steer",
        "TEXT",
        "while the agent works: steer it (else: a message)",
    ),
    ("quit", "", "leave (also Ctrl-D, or Ctrl-C twice)"),
];

/// Every name that can follow `/`: commands, templates, `skill:` names.
pub fn all_names(names: &super::Names) -> Vec<String> {
    let mut all: Vec<String> = COMMANDS.iter().map(|c| c.0.to_owned()).collect();
    all.push("exit".into());
    all.extend(names.templates.iter().cloned());
    all.extend(names.skills.iter().map(|s| format!("skill:{s}")));
    all
}

impl Front {
    /// One entry of the user: a slash command or a message.
    pub(super) fn entry(&mut self, line: &str) -> Flow {
        let text = line.trim();
        if text.is_empty() {
            return Flow::Go;
        }
        let Some(rest) = text.strip_prefix('/') else {
            self.prompt(line);
            return Flow::Go;
        };
        let (name, arg) = match rest.find(char::is_whitespace) {
            Some(k) => (&rest[..k], rest[k..].trim()),
            None => (rest, ""),
        };
        match name {
            "quit" | "exit" => return Flow::Quit,
            "help" => self.help(),
            "model" => self.model(arg),
            "thinking" => self.thinking(arg),
            "tree" => self.tree(),
            "branch" => self.branch(arg),
            "fork" => self.fork(arg),
            "resume" => self.resume(arg),
            "new" => self.new_session(),
            "name" => self.name(arg),
            "label" => self.label(arg),
            "compact" => self.compact(arg),
            "export" => self.export(arg),
            "session" => self.session(),
            "show" => self.show(arg),
            "copy" => self.copy(),
            "steer" if !arg.is_empty() => self.prompt(arg),
            n if self.is_prompt_name(n) => self.prompt(line),
            n => self.unknown(n),
        }
        Flow::Go
    }

    fn is_prompt_name(&self, n: &str) -> bool {
        match n.strip_prefix("skill:") {
            Some(s) => self.setup_names.skills.iter().any(|k| k == s),
            None => self.setup_names.templates.iter().any(|t| t == n),
        }
    }

    fn unknown(&self, n: &str) {
        let all = all_names(&self.setup_names);
        let hint = match (self.suggest)(n, &all) {
            Some(s) => format!("; did you mean /{s}?"),
            None => "; /help lists the commands".into(),
        };
        self.error(&format!(
            "unknown command /{}{hint} (nothing sent)",
            escape(n)
        ));
    }

    fn usage(&self, u: &str) {
        self.error(&format!("usage: {u}"));
    }

    fn help(&self) {
        for (name, args, what) in COMMANDS {
            let head = format!("/{name} {args}");
            self.say(&format!(
                "  {}  {}",
                self.st.cyan(&pi_base::text::pad_right(&head, 24)),
                what
            ));
        }
        let mut extra = Vec::new();
        extra.extend(self.setup_names.templates.iter().map(|t| format!("/{t}")));
        extra.extend(
            self.setup_names
                .skills
                .iter()
                .map(|s| format!("/skill:{s}")),
        );
        if !extra.is_empty() {
            self.say(&format!(
                "  templates and skills: {}",
                escape(&extra.join(" "))
            ));
        }
        self.say(&self.st.dim(
            "  Enter sends; Alt-Enter or Ctrl-J a new line; Tab completes; @ completes paths; \
             Ctrl-C stops the agent; typing while it works queues a follow-up",
        ));
    }

    fn model(&mut self, arg: &str) {
        let Some(d) = self.ask(json!({"type": "get_available_models"})) else {
            return;
        };
        let models: Vec<(String, String)> = d["models"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|m| {
                        let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
                        (s("provider"), s("id"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if arg.is_empty() {
            for (p, i) in &models {
                let name = format!("{p}/{i}");
                let mark = if name == self.model { "*" } else { " " };
                self.say(&format!("{mark} {}", escape(&name)));
            }
            return;
        }
        let found: Vec<&(String, String)> = match arg.split_once('/') {
            Some((p, i)) => models.iter().filter(|m| m.0 == p && m.1 == i).collect(),
            None => models.iter().filter(|m| m.1 == arg).collect(),
        };
        let (p, i) = match found.as_slice() {
            [one] => (*one).clone(),
            [] => match arg.split_once('/') {
                Some((p, i)) => (p.to_owned(), i.to_owned()),
                None => {
                    self.error(&format!(
                        "no model {} with a key (/model lists them)",
                        escape(arg)
                    ));
                    return;
                }
            },
            _ => {
                self.error(&format!(
                    "{} names several models; use provider/id",
                    escape(arg)
                ));
                return;
            }
        };
        if let Some(d) = self.ask(json!({"type": "set_model", "provider": p, "modelId": i})) {
            self.model = format!("{p}/{i}");
            if let Some(w) = d["contextWindow"].as_u64() {
                super::view::lock(&self.board).window = w;
            }
            self.say(&format!("model: {}", escape(&self.model)));
        }
    }

    fn thinking(&mut self, arg: &str) {
        if !arg.is_empty()
            && self
                .ask(json!({"type": "set_thinking_level", "level": arg}))
                .is_none()
        {
            return;
        }
        if let Some(s) = self.ask(json!({"type": "get_state"})) {
            let level = s["thinkingLevel"].as_str().unwrap_or("off");
            self.say(&format!("thinking: {}", escape(level)));
        }
    }

    fn tree(&mut self) {
        let Some(d) = self.ask(json!({"type": "get_tree"})) else {
            return;
        };
        let leaf = d["leafId"].as_str().unwrap_or_default().to_owned();
        let width = if self.tty {
            crate::output::term_width()
        } else {
            usize::MAX / 2
        };
        for line in super::tree::tree_lines(&d["tree"], &leaf, width) {
            let line = if line.starts_with('*') {
                self.st.cyan(&line)
            } else {
                line
            };
            self.say(&line);
        }
    }

    fn branch(&mut self, arg: &str) {
        let (id, summary) = match arg.split_once(char::is_whitespace) {
            Some((i, s)) => (i, s.trim()),
            None => (arg, ""),
        };
        if id.is_empty() {
            return self.usage("/branch ID [SUMMARY]");
        }
        let mut cmd = json!({"type": "branch", "entryId": id});
        if !summary.is_empty() {
            cmd["summary"] = json!(summary);
        }
        if let Some(d) = self.ask(cmd) {
            let at = d["leafId"].as_str().unwrap_or("root");
            self.say(&format!(
                "continuing from {} ({} messages in context)",
                escape(at),
                d["messages"]
            ));
        }
    }

    fn fork(&mut self, arg: &str) {
        let cmd = if arg.is_empty() {
            json!({"type": "clone"})
        } else {
            json!({"type": "fork", "entryId": arg})
        };
        let Some(d) = self.ask(cmd) else {
            return;
        };
        if d["cancelled"] == true {
            return self.say("fork cancelled by a hook");
        }
        let file = self.refresh_file();
        self.say(&format!("forked: now in {}", escape(&file)));
        if let Some(t) = d["text"].as_str().filter(|t| !t.is_empty()) {
            if self.tty {
                self.prefill = Some(t.to_owned());
            } else {
                self.say(&format!("(the message was: {})", escape(t)));
            }
        }
    }

    /// The session file now (after a change of session), as text.
    fn refresh_file(&mut self) -> String {
        let s = self.ask(json!({"type": "get_state"})).unwrap_or_default();
        self.session_file = s["sessionFile"].as_str().map(PathBuf::from);
        self.session_file
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|| "(not recorded)".into())
    }

    fn resume(&mut self, arg: &str) {
        if arg.is_empty() {
            self.recent = recent_sessions(&self.session_dir, 10);
            if self.recent.is_empty() {
                return self.say("no sessions in this directory");
            }
            let now = pi_base::clock::now_ms();
            for (k, p) in self.recent.iter().enumerate() {
                let (name, first, when) = describe(p);
                let age = when.map_or_else(String::new, |t| pi_base::clock::age(now, t));
                let current = self.session_file.as_deref() == Some(p.as_path());
                let mark = if current { "*" } else { " " };
                let title = name.unwrap_or(first);
                let title = pi_base::text::truncate(&escape(&title), 60);
                self.say(&format!("{mark}{:>3}  {:>8}  {title}", k + 1, age));
            }
            self.say(&self.st.dim("/resume N switches to session N"));
            // On a terminal the next prompt starts with the command: type the number.
            if self.tty {
                self.prefill = Some("/resume ".into());
            }
            return;
        }
        let path = match arg.parse::<usize>() {
            Ok(n) if n >= 1 && n <= self.recent.len() => self.recent[n - 1].clone(),
            Ok(_) => return self.error("no such number; /resume lists the sessions"),
            Err(_) => PathBuf::from(arg),
        };
        let same = |a: &std::path::Path| {
            std::fs::canonicalize(a).ok() == std::fs::canonicalize(&path).ok()
        };
        if self.session_file.as_deref().is_some_and(same) {
            return self.say("already in that session");
        }
        let cmd = json!({"type": "switch_session", "sessionPath": path.to_string_lossy()});
        if let Some(d) = self.ask(cmd) {
            if d["cancelled"] == true {
                return self.say("switch cancelled by a hook");
            }
            let file = self.refresh_file();
            self.say(&format!("resumed {}", escape(&file)));
        }
    }

    fn new_session(&mut self) {
        if let Some(d) = self.ask(json!({"type": "new_session"})) {
            if d["cancelled"] == true {
                return self.say("cancelled by a hook");
            }
            let file = self.refresh_file();
            self.say(&format!("new session {}", escape(&file)));
        }
    }

    fn name(&mut self, arg: &str) {
        if arg.is_empty() {
            return self.usage("/name NAME");
        }
        if self
            .ask(json!({"type": "set_session_name", "name": arg}))
            .is_some()
        {
            self.say(&format!("named: {}", escape(arg)));
        }
    }

    fn label(&mut self, arg: &str) {
        let (id, text) = match arg.split_once(char::is_whitespace) {
            Some((i, t)) => (i, t.trim()),
            None => (arg, ""),
        };
        if id.is_empty() {
            return self.usage("/label ID TEXT");
        }
        if let Some(d) = self.ask(json!({"type": "label", "entryId": id, "label": text})) {
            let target = d["entryId"].as_str().unwrap_or(id);
            if text.is_empty() {
                self.say(&format!("label of {} cleared", escape(target)));
            } else {
                self.say(&format!("labelled {}: {}", escape(target), escape(text)));
            }
        }
    }

    fn compact(&mut self, arg: &str) {
        let mut cmd = json!({"type": "compact"});
        if !arg.is_empty() {
            cmd["customInstructions"] = json!(arg);
        }
        // The view says how it went.
        self.ask(cmd);
    }

    fn export(&mut self, arg: &str) {
        let mut cmd = json!({"type": "export_html"});
        if !arg.is_empty() {
            cmd["outputPath"] = json!(arg);
        }
        if let Some(d) = self.ask(cmd) {
            self.say(&format!(
                "wrote {}",
                escape(d["path"].as_str().unwrap_or_default())
            ));
        }
    }

    fn session(&mut self) {
        let Some(s) = self.ask(json!({"type": "get_session_stats"})) else {
            return;
        };
        let state = self.ask(json!({"type": "get_state"})).unwrap_or_default();
        let text = |v: &Json| escape(v.as_str().unwrap_or("-")).into_owned();
        let n = |v: &Json| v.as_f64().map_or(0, |x| x as u64);
        self.say(&format!("file      {}", text(&s["sessionFile"])));
        self.say(&format!("id        {}", text(&s["sessionId"])));
        if let Some(name) = state["sessionName"].as_str() {
            self.say(&format!("name      {}", escape(name)));
        }
        self.say(&format!("model     {}", escape(&self.model)));
        self.say(&format!(
            "messages  {} ({} user, {} assistant, {} tool results; {} tool calls)",
            n(&s["totalMessages"]),
            n(&s["userMessages"]),
            n(&s["assistantMessages"]),
            n(&s["toolResults"]),
            n(&s["toolCalls"])
        ));
        let t = &s["tokens"];
        self.say(&format!(
            "tokens    {} in, {} out, {} cache read, {} cache write",
            n(&t["input"]),
            n(&t["output"]),
            n(&t["cacheRead"]),
            n(&t["cacheWrite"])
        ));
        self.say(&format!(
            "cost      ${:.4}",
            s["cost"].as_f64().unwrap_or(0.0)
        ));
        let c = &s["contextUsage"];
        if let (Some(tok), Some(w)) = (c["tokens"].as_f64(), c["contextWindow"].as_f64()) {
            self.say(&format!(
                "context   {} of {} tokens ({:.0}%)",
                tok as u64,
                w as u64,
                c["percent"].as_f64().unwrap_or(0.0)
            ));
        }
    }

    fn show(&self, arg: &str) {
        let b = super::view::lock(&self.board);
        if b.tools.is_empty() {
            drop(b);
            return self.say("no tool calls yet");
        }
        let k = match arg.parse::<usize>() {
            Ok(k) if k >= 1 && k <= b.tools.len() => k,
            Ok(_) | Err(_) if !arg.is_empty() => {
                let n = b.tools.len();
                drop(b);
                return self.error(&format!("no tool call {}; 1 to {n}", escape(arg)));
            }
            _ => b.tools.len(),
        };
        let t = b.tools[k - 1].clone();
        drop(b);
        self.say(&self.st.cyan(&format!("→ {}", t.line)));
        self.say(crate::output::escape_text(&t.output).trim_end());
    }

    fn copy(&mut self) {
        let Some(d) = self.ask(json!({"type": "get_last_assistant_text"})) else {
            return;
        };
        let Some(text) = d["text"].as_str() else {
            return self.say("no answer to copy yet");
        };
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        if !self.tty || dumb {
            return self.say("not a terminal that takes OSC 52: nothing copied");
        }
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        {
            use std::io::Write as _;
            let mut o = std::io::stdout().lock();
            let _ = write!(o, "\x1b]52;c;{b64}\x07").and_then(|()| o.flush());
        }
        self.say(&format!(
            "copied the last answer ({} characters)",
            text.chars().count()
        ));
    }
}

/// The most recent sessions of `dir` (newest first).
fn recent_sessions(dir: &std::path::Path, n: usize) -> Vec<PathBuf> {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = pi_session::find::jsonl_files(dir)
        .into_iter()
        .filter_map(|p| {
            let m = std::fs::metadata(&p).ok()?.modified().ok()?;
            Some((m, p))
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    files.into_iter().take(n).map(|(_, p)| p).collect()
}

/// A session's name, first user message and last change (ms).
fn describe(path: &std::path::Path) -> (Option<String>, String, Option<i64>) {
    let when = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64);
    let Ok(s) = pi_session::Session::open(path) else {
        return (None, "(unreadable)".into(), when);
    };
    let name = s.name().map(str::to_owned);
    let mut first = String::from("(no messages)");
    for (i, e) in s.entries.iter().enumerate() {
        if e.kind != pi_session::Kind::Message {
            continue;
        }
        let Ok(line) = s.line(i as u32) else {
            continue;
        };
        let Ok(v) = serde_json::from_slice::<Json>(&line) else {
            continue;
        };
        if v["message"]["role"] != "user" {
            continue;
        }
        let c = &v["message"]["content"];
        let t = match c {
            Json::String(t) => t.clone(),
            Json::Array(b) => b
                .iter()
                .filter_map(|x| x["text"].as_str())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        first = t.lines().next().unwrap_or_default().to_owned();
        break;
    }
    (name, first, when)
}
