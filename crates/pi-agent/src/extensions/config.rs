//! Which hooks run: `hooks` in `<agent dir>/settings.json`, then in the project's
//! `.pi/settings.json` (both lists run, global first; the project's only when it is
//! trusted, see [`super::trust`]), then `--hook EVENT=COMMAND` flags.
//!
//! ```json
//! {
//!   "hookTimeout": 30,
//!   "hooks": {
//!     "tool_call": [{"command": ".pi/hooks/guard", "tools": ["bash"], "timeout": 5, "onError": "block"}],
//!     "agent_end": "notify-send 'pi is done'"
//!   }
//! }
//! ```
//!
//! An event takes a command (a string), a hook object, or a list of either. A command is run
//! by `/bin/sh -c` in the session's working directory.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::Project;

/// The default time a hook may take, in seconds (setting `hookTimeout`).
pub(crate) const DEFAULT_TIMEOUT_SECS: f64 = 30.0;

/// The events hooks can be run for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    Input,
    BeforeAgentStart,
    Context,
    ToolCall,
    ToolResult,
    MessageEnd,
    TurnEnd,
    AgentEnd,
    SessionBeforeCompact,
    SessionBeforeTree,
    SessionBeforeSwitch,
    SessionBeforeFork,
}

impl HookEvent {
    pub const ALL: [HookEvent; 12] = [
        HookEvent::Input,
        HookEvent::BeforeAgentStart,
        HookEvent::Context,
        HookEvent::ToolCall,
        HookEvent::ToolResult,
        HookEvent::MessageEnd,
        HookEvent::TurnEnd,
        HookEvent::AgentEnd,
        HookEvent::SessionBeforeCompact,
        HookEvent::SessionBeforeTree,
        HookEvent::SessionBeforeSwitch,
        HookEvent::SessionBeforeFork,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::Input => "input",
            HookEvent::BeforeAgentStart => "before_agent_start",
            HookEvent::Context => "context",
            HookEvent::ToolCall => "tool_call",
            HookEvent::ToolResult => "tool_result",
            HookEvent::MessageEnd => "message_end",
            HookEvent::TurnEnd => "turn_end",
            HookEvent::AgentEnd => "agent_end",
            HookEvent::SessionBeforeCompact => "session_before_compact",
            HookEvent::SessionBeforeTree => "session_before_tree",
            HookEvent::SessionBeforeSwitch => "session_before_switch",
            HookEvent::SessionBeforeFork => "session_before_fork",
        }
    }

    pub fn from_name(s: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// Events whose hooks are only told (their answers change nothing but entries and
    /// custom messages).
    pub(crate) fn is_notification(self) -> bool {
        matches!(
            self,
            HookEvent::MessageEnd | HookEvent::TurnEnd | HookEvent::AgentEnd
        )
    }

    /// What a failure does when the hook does not say: `tool_call` guards fail closed
    /// (the call is blocked), every other event carries on.
    pub(crate) fn default_on_error(self) -> OnError {
        match self {
            HookEvent::ToolCall => OnError::Block,
            _ => OnError::Ignore,
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens when a hook fails (cannot start, exits non-zero, times out, or prints
/// something that is not a JSON object). It is always reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Carry on as if the hook had printed nothing.
    Ignore,
    /// Stop what the hook guards: the prompt (`input`, `before_agent_start`), the request
    /// (`context`), the tool call (`tool_call`, `tool_result`: an error result), the
    /// compaction or the branch. Notifications are never stopped.
    Block,
}

impl OnError {
    pub fn as_str(self) -> &'static str {
        match self {
            OnError::Ignore => "ignore",
            OnError::Block => "block",
        }
    }
}

/// One hook.
#[derive(Debug, Clone, PartialEq)]
pub struct HookSpec {
    pub event: HookEvent,
    /// A shell command line.
    pub command: String,
    pub timeout: Duration,
    pub on_error: OnError,
    /// For `tool_call` and `tool_result`: only calls of these tools (empty: all).
    pub tools: Vec<String>,
    /// Where it was defined (a settings file, or `--hook`).
    pub source: String,
}

impl HookSpec {
    /// Whether the hook wants to hear about a call of `tool`.
    pub(crate) fn matches_tool(&self, tool: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|t| t == tool)
    }
}

/// The hooks of a run, in the order they run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookSet {
    pub hooks: Vec<HookSpec>,
}

impl HookSet {
    /// The hooks of one event.
    pub fn of(&self, event: HookEvent) -> impl Iterator<Item = &HookSpec> {
        self.hooks.iter().filter(move |h| h.event == event)
    }

    pub fn has(&self, event: HookEvent) -> bool {
        self.of(event).next().is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}

fn seconds(v: &Value) -> Option<Duration> {
    v.as_f64()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| Duration::from_secs_f64(s.min(86_400.0)))
}

/// Reads the `hooks` object of one settings file.
fn parse_hooks(
    hooks: &Value,
    default_timeout: Duration,
    source: &str,
    out: &mut Vec<HookSpec>,
    warnings: &mut Vec<String>,
) {
    let Some(map) = hooks.as_object() else {
        warnings.push(format!("{source}: \"hooks\" must be an object of events"));
        return;
    };
    for (name, v) in map {
        let Some(event) = HookEvent::from_name(name) else {
            let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
            warnings.push(format!(
                "{source}: unknown hook event \"{name}\" ignored (events: {})",
                known.join(", ")
            ));
            continue;
        };
        let items: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        for item in items {
            match hook_of(event, item, default_timeout, source) {
                Ok(h) => out.push(h),
                Err(e) => warnings.push(format!("{source}: hooks.{name}: {e}; ignored")),
            }
        }
    }
}

fn hook_of(
    event: HookEvent,
    v: &Value,
    default_timeout: Duration,
    source: &str,
) -> Result<HookSpec, String> {
    let mut h = HookSpec {
        event,
        command: String::new(),
        timeout: default_timeout,
        on_error: event.default_on_error(),
        tools: Vec::new(),
        source: source.to_owned(),
    };
    match v {
        Value::String(c) => h.command = c.clone(),
        Value::Object(o) => {
            h.command = o
                .get("command")
                .and_then(Value::as_str)
                .ok_or("a hook needs a \"command\" (a string)")?
                .to_owned();
            if let Some(t) = o.get("timeout") {
                h.timeout = seconds(t).ok_or("\"timeout\" must be a number of seconds above 0")?;
            }
            if let Some(e) = o.get("onError") {
                h.on_error = match e.as_str() {
                    Some("ignore") => OnError::Ignore,
                    Some("block") => OnError::Block,
                    _ => return Err("\"onError\" must be \"ignore\" or \"block\"".into()),
                };
            }
            if let Some(t) = o.get("tools") {
                let list = t
                    .as_array()
                    .ok_or("\"tools\" must be a list of tool names")?;
                for name in list {
                    h.tools.push(
                        name.as_str()
                            .ok_or("\"tools\" must be a list of tool names")?
                            .to_owned(),
                    );
                }
            }
        }
        _ => return Err("a hook is a command (a string) or an object with \"command\"".into()),
    }
    if h.command.trim().is_empty() {
        return Err("the command is empty".into());
    }
    Ok(h)
}

/// Parses `--hook EVENT=COMMAND`.
pub(crate) fn parse_flag(arg: &str, default_timeout: Duration) -> Result<HookSpec, String> {
    let Some((name, command)) = arg.split_once('=') else {
        return Err(format!("invalid --hook '{arg}': expected EVENT=COMMAND"));
    };
    let name = name.trim();
    let event = HookEvent::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
        format!(
            "invalid --hook '{arg}': unknown event '{name}' (events: {})",
            known.join(", ")
        )
    })?;
    if command.trim().is_empty() {
        return Err(format!("invalid --hook '{arg}': the command is empty"));
    }
    Ok(HookSpec {
        event,
        command: command.to_owned(),
        timeout: default_timeout,
        on_error: event.default_on_error(),
        tools: Vec::new(),
        source: "--hook".to_owned(),
    })
}

/// The settings files hooks are read from, in order: the global one, and the project's
/// when it is trusted.
pub(crate) fn settings_files(agent_dir: &Path, project: &Project) -> Vec<PathBuf> {
    let mut files = vec![agent_dir.join("settings.json")];
    if project.trusted {
        files.push(project.dir.join(".pi").join("settings.json"));
    }
    files
}

/// The hooks for a session of `project`: from the settings files (global first; the
/// project's when it is trusted), then the `--hook` flags (already checked). Problems are
/// returned as warnings; a broken file contributes nothing.
pub fn load(agent_dir: &Path, project: &Project, flags: &[String]) -> (HookSet, Vec<String>) {
    let mut warnings = Vec::new();
    let mut hooks = Vec::new();
    let mut files: Vec<(String, Map<String, Value>)> = Vec::new();
    for path in settings_files(agent_dir, project) {
        // Unreadable or invalid files are reported by the settings reader already.
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        if let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(&text) {
            files.push((path.display().to_string(), o));
        }
    }
    // The default timeout: the last file that sets it.
    let mut default_timeout = Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS);
    for (source, o) in &files {
        if let Some(t) = o.get("hookTimeout") {
            match seconds(t) {
                Some(d) => default_timeout = d,
                None => warnings.push(format!(
                    "{source}: \"hookTimeout\" must be a number of seconds above 0; ignored"
                )),
            }
        }
    }
    for (source, o) in &files {
        if let Some(h) = o.get("hooks") {
            parse_hooks(h, default_timeout, source, &mut hooks, &mut warnings);
        }
    }
    for f in flags {
        match parse_flag(f, default_timeout) {
            Ok(h) => hooks.push(h),
            Err(e) => warnings.push(e),
        }
    }
    (HookSet { hooks }, warnings)
}

/// Checks `--hook` flags before anything runs (a bad one is a usage error).
pub fn check_flags(flags: &[String]) -> Result<(), String> {
    for f in flags {
        parse_flag(f, Duration::from_secs(1))?;
    }
    Ok(())
}

/// Checks the `--hook` flags of a command that runs only the hooks of `event`.
pub fn check_flags_for(flags: &[String], event: HookEvent) -> Result<(), String> {
    check_flags(flags)?;
    for f in flags {
        let name = f.split_once('=').map_or(f.as_str(), |(n, _)| n.trim());
        if name != event.as_str() {
            return Err(format!(
                "invalid --hook '{f}': this command runs only {event} hooks"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_form() {
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        parse_hooks(
            &json!({
                "tool_call": [{"command": "guard", "tools": ["bash"], "timeout": 2.5},
                              "log-call"],
                "agent_end": {"command": "done", "onError": "block"},
                "bogus": "x",
                "context": [{"timeout": 3}]
            }),
            Duration::from_secs(30),
            "s.json",
            &mut out,
            &mut warnings,
        );
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].command, "guard");
        assert_eq!(out[0].tools, vec!["bash"]);
        assert_eq!(out[0].timeout, Duration::from_millis(2500));
        assert_eq!(out[0].on_error, OnError::Block);
        assert_eq!(out[1].command, "log-call");
        assert!(out[1].matches_tool("read"));
        assert!(!out[0].matches_tool("read"));
        assert_eq!(out[2].event, HookEvent::AgentEnd);
        assert_eq!(out[2].on_error, OnError::Block);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("unknown hook event \"bogus\""));
        assert!(warnings[1].contains("needs a \"command\""));
    }

    #[test]
    fn flags() {
        let h = parse_flag("tool_call=./guard.sh --strict", Duration::from_secs(7)).unwrap();
        assert_eq!(
            (h.event, h.command.as_str(), h.timeout),
            (
                HookEvent::ToolCall,
                "./guard.sh --strict",
                Duration::from_secs(7)
            )
        );
        assert!(parse_flag("nope=x", Duration::from_secs(1)).is_err());
        assert!(parse_flag("input=", Duration::from_secs(1)).is_err());
        assert!(parse_flag("input", Duration::from_secs(1)).is_err());
        assert!(check_flags(&["agent_end=true".into()]).is_ok());
    }
}
