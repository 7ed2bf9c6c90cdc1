//! The built-in tools of the agent loop: `read`, `bash`, `edit`, `write`, `grep`, `find` and
//! `ls`, with upstream's parameters, limits, notices and error texts (the model reads them and
//! session files store them).
//!
//! The agent loop uses two steps, like upstream's: [`prepare`] looks the tool up and checks
//! the arguments (an unknown tool or bad arguments give an immediate error result), then
//! [`Prepared::execute`] runs it and yields a [`ToolResult`] — content blocks, details and
//! the error flag of the `toolResult` message. Every tool can be cancelled through a
//! [`CancelToken`]; `bash` reports progress through a callback. The tools also exist as plain
//! functions (`read::run`, `edit::run`, …) for callers without an async runtime (except
//! `bash::run`, which is async).
//!
//! ```no_run
//! # async fn demo() {
//! use std::sync::Arc;
//! use pi_tools::{self as tools, CancelToken, ToolContext};
//! let ctx = Arc::new(ToolContext::new("/work/project"));
//! let args = serde_json::json!({"path": "README.md", "limit": 20});
//! let result = match tools::prepare("read", &args) {
//!     Ok(call) => call.execute(ctx, CancelToken::new(), None).await,
//!     Err(immediate) => immediate,
//! };
//! println!("{} (error: {})", result.text(), result.is_error);
//! # }
//! ```

pub mod bash;
mod cancel;
mod diff;
mod edit;
pub mod env;
mod find;
mod grep;
mod image;
mod ls;
pub mod path;
pub mod process;
pub mod program;
pub mod project;
mod queue;
mod read;
mod text;
mod truncate;
pub mod trust;
mod validate;
mod write;

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use cancel::CancelToken;

/// The built-in tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolName {
    Read,
    Bash,
    Edit,
    Write,
    Grep,
    Find,
    Ls,
}

impl ToolName {
    /// All built-in tools, in upstream's order.
    pub const ALL: [ToolName; 7] = [
        ToolName::Read,
        ToolName::Bash,
        ToolName::Edit,
        ToolName::Write,
        ToolName::Grep,
        ToolName::Find,
        ToolName::Ls,
    ];

    /// The tools active when none are chosen (`--tools` absent).
    pub const DEFAULT: [ToolName; 4] = [
        ToolName::Read,
        ToolName::Bash,
        ToolName::Edit,
        ToolName::Write,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Read => "read",
            ToolName::Bash => "bash",
            ToolName::Edit => "edit",
            ToolName::Write => "write",
            ToolName::Grep => "grep",
            ToolName::Find => "find",
            ToolName::Ls => "ls",
        }
    }

    /// The tool with exactly this name.
    pub fn from_name(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// What the tool does, for the model (sent with the tool's schema).
    pub fn description(self) -> String {
        use truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, GREP_MAX_LINE_LENGTH};
        let kb = DEFAULT_MAX_BYTES / 1024;
        match self {
            ToolName::Read => format!(
                "Show the contents of a file. Text files and images (jpg, png, gif, webp) are \
                 supported; images are returned as attachments. Text is cut after \
                 {DEFAULT_MAX_LINES} lines or {kb}KB, whichever comes first: read large files \
                 in parts with offset/limit, and when you need all of a file keep going from \
                 the offset the notice gives until the end."
            ),
            ToolName::Bash => format!(
                "Run a bash command in the working directory and return what it printed \
                 (stdout and stderr together). Only the last {DEFAULT_MAX_LINES} lines or \
                 {kb}KB of output are returned, whichever limit is reached first; when output \
                 is cut, all of it is saved to a temporary file whose path is given. Pass a \
                 timeout in seconds to stop long commands."
            ),
            ToolName::Edit => "Change one file by replacing exact pieces of its text. Every \
                 edits[].oldText must match exactly one place in the original file, and no two \
                 edits may overlap. Put changes to the same or neighbouring lines into a single \
                 edit, and do not include long unchanged stretches just to join changes that \
                 are far apart."
                .to_owned(),
            ToolName::Write => "Write content to a file: the file is created if it does not \
                 exist (missing parent directories too) and replaced entirely if it does."
                .to_owned(),
            ToolName::Grep => format!(
                "Search the contents of files for a pattern (a regular expression, or a plain \
                 string with literal). Returns the matching lines with their file path and line \
                 number, skipping files that .gitignore excludes. Stops after {} matches or \
                 {kb}KB of output, whichever comes first; lines longer than \
                 {GREP_MAX_LINE_LENGTH} characters are cut.",
                grep::DEFAULT_LIMIT
            ),
            ToolName::Find => format!(
                "Find files by glob pattern. Returns the paths that match, relative to the \
                 search directory, skipping what .gitignore excludes. Stops after {} results \
                 or {kb}KB of output, whichever comes first.",
                find::DEFAULT_LIMIT
            ),
            ToolName::Ls => format!(
                "List a directory: entries in alphabetical order, dot-files included, \
                 directories marked with a trailing '/'. Stops after {} entries or {kb}KB of \
                 output, whichever comes first.",
                ls::DEFAULT_LIMIT
            ),
        }
    }

    /// The JSON schema of the tool's arguments (the same shape as upstream's).
    pub fn parameters(self) -> Value {
        let string = |d: &str| json!({"type": "string", "description": d});
        let number = |d: &str| json!({"type": "number", "description": d});
        let boolean = |d: &str| json!({"type": "boolean", "description": d});
        match self {
            ToolName::Read => json!({
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": string("File to read, relative to the working directory or absolute"),
                    "offset": number("First line to show, counting from 1"),
                    "limit": number("How many lines to show at most"),
                },
            }),
            ToolName::Bash => json!({
                "type": "object",
                "required": ["command"],
                "properties": {
                    "command": string("The bash command to run"),
                    "timeout": number("Seconds after which the command is stopped (optional; no timeout by default)"),
                },
            }),
            ToolName::Edit => json!({
                "type": "object",
                "required": ["path", "edits"],
                "properties": {
                    "path": string("File to edit, relative to the working directory or absolute"),
                    "edits": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["oldText", "newText"],
                            "properties": {
                                "oldText": string("The exact text to replace. It must occur exactly once in the original file and must not overlap the oldText of any other edit in this call."),
                                "newText": string("The text that takes its place."),
                            },
                            "additionalProperties": false,
                        },
                        "description": "One or more replacements. Each one is matched against the file as it was before this call, not after the earlier edits. Edits must not overlap or nest; when two changes touch the same block or lines close together, make them one edit.",
                    },
                },
                "additionalProperties": false,
            }),
            ToolName::Write => json!({
                "type": "object",
                "required": ["path", "content"],
                "properties": {
                    "path": string("File to write, relative to the working directory or absolute"),
                    "content": string("The complete new content of the file"),
                },
            }),
            ToolName::Grep => json!({
                "type": "object",
                "required": ["pattern"],
                "properties": {
                    "pattern": string("What to search for: a regular expression, or a plain string with literal"),
                    "path": string("Directory or file to search (default: the working directory)"),
                    "glob": string("Only search files matching this glob, e.g. '*.ts' or '**/*.spec.ts'"),
                    "ignoreCase": boolean("Ignore upper/lower case (default: false)"),
                    "literal": boolean("Take the pattern as a plain string, not a regular expression (default: false)"),
                    "context": number("Lines to show before and after each match (default: 0)"),
                    "limit": number("Most matches to return (default: 100)"),
                },
            }),
            ToolName::Find => json!({
                "type": "object",
                "required": ["pattern"],
                "properties": {
                    "pattern": string("Glob the file paths must match, e.g. '*.ts', '**/*.json' or 'src/**/*.spec.ts'"),
                    "path": string("Directory to search (default: the working directory)"),
                    "limit": number("Most results to return (default: 1000)"),
                },
            }),
            ToolName::Ls => json!({
                "type": "object",
                "properties": {
                    "path": string("Directory to list (default: the working directory)"),
                    "limit": number("Most entries to return (default: 500)"),
                },
            }),
        }
    }

    /// Name, description and parameters: what a provider request declares.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition {
            name: self.as_str().to_owned(),
            description: self.description(),
            parameters: self.parameters(),
        }
    }

    /// The one-line summary and guidelines the system prompt lists for this tool.
    pub fn prompt(self) -> pi_prompt::system::Tool {
        pi_prompt::system::builtin_tools()
            .into_iter()
            .find(|t| t.name == self.as_str())
            .unwrap_or_else(|| pi_prompt::system::Tool::custom(self.as_str(), None, &[]))
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ToolName {
    type Err = String;
    fn from_str(s: &str) -> Result<ToolName, String> {
        ToolName::from_name(s).ok_or_else(|| format!("unknown tool: {s}"))
    }
}

/// A tool as declared to a model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Where and how the tools run: the session's settings that matter to them.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session's working directory; relative paths are taken from here.
    pub cwd: PathBuf,
    /// Settings `shellPath`: the shell for `bash` (else `/bin/bash`, `bash` on PATH, `sh`).
    pub shell_path: Option<String>,
    /// Settings `shellCommandPrefix`: put on its own line before every command.
    pub shell_command_prefix: Option<String>,
    /// Put first on `PATH` for commands (upstream's `<agent dir>/bin`), unless already there.
    pub bin_dir: Option<PathBuf>,
    /// Settings `images.autoResize` (default true): images over 2000×2000 pixels or the
    /// inline size limit are not sent as they are.
    pub auto_resize_images: bool,
    /// Whether the current model accepts images (`None`: unknown). When `Some(false)`, `read`
    /// adds a note that the image will be left out of the request.
    pub model_accepts_images: Option<bool>,
    /// Where `bash` saves the full output of commands whose output was cut.
    pub temp_dir: PathBuf,
    /// The session file of the run, if it records one (given to program tools as
    /// `PI_SESSION_FILE`).
    pub session_file: Option<PathBuf>,
    /// What `bash` and program tools get of pi's environment (settings
    /// `shellEnvironmentPolicy`; by default all but secret-looking variables).
    pub env_policy: std::sync::Arc<crate::env::Policy>,
    /// Where what a program tool wrote to stderr goes when the tool succeeded (the caller
    /// shows it; by default it is dropped).
    pub diagnostics: fn(&[u8]),
}

impl ToolContext {
    /// Defaults for a working directory: upstream's settings defaults, `<agent dir>/bin`,
    /// the system's temporary directory.
    pub fn new(cwd: impl Into<PathBuf>) -> ToolContext {
        ToolContext {
            cwd: cwd.into(),
            shell_path: None,
            shell_command_prefix: None,
            bin_dir: Some(pi_base::config::agent_dir().join("bin")),
            auto_resize_images: true,
            model_accepts_images: None,
            temp_dir: std::env::temp_dir(),
            session_file: None,
            env_policy: std::sync::Arc::default(),
            diagnostics: |_| {},
        }
    }
}

/// One block of a tool result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Content {
    #[serde(rename = "text")]
    Text { text: String },
    #[serde(rename = "image")]
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl Content {
    pub fn text(text: impl Into<String>) -> Content {
        Content::Text { text: text.into() }
    }
}

/// What a tool produced: the final result of a success, or a progress update.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    pub content: Vec<Content>,
    /// `None` is upstream's `undefined` (the key is absent from the message).
    pub details: Option<Value>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: vec![Content::text(text)],
            details: None,
        }
    }

    /// `{content, details}` as upstream emits it in `tool_execution_update` / `_end`.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("content".into(), content_json(&self.content));
        if let Some(d) = &self.details {
            m.insert("details".into(), d.clone());
        }
        Value::Object(m)
    }
}

fn content_json(content: &[Content]) -> Value {
    serde_json::to_value(content).unwrap_or_else(|_| Value::Array(Vec::new()))
}

/// A failed tool call; the message is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError(message.into())
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolError {}

/// The outcome of a tool call, as stored in the `toolResult` message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub content: Vec<Content>,
    pub details: Option<Value>,
    pub is_error: bool,
}

impl ToolResult {
    pub fn success(out: ToolOutput) -> ToolResult {
        ToolResult {
            content: out.content,
            details: out.details,
            is_error: false,
        }
    }

    /// An error result: the message as the only text block and empty details, as upstream
    /// records thrown errors.
    pub fn error(message: impl Into<String>) -> ToolResult {
        ToolResult {
            content: vec![Content::text(message)],
            details: Some(json!({})),
            is_error: true,
        }
    }

    /// The result for a call of a tool that is not active: `Tool <name> not found`.
    pub fn not_found(name: &str) -> ToolResult {
        ToolResult::error(format!("Tool {name} not found"))
    }

    /// The text blocks joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                Content::Image { .. } => None,
            })
            .collect();
        texts.join("\n")
    }

    /// `{content, details}` (details omitted when `None`), as in `tool_execution_end.result`.
    pub fn to_json(&self) -> Value {
        ToolOutput {
            content: self.content.clone(),
            details: self.details.clone(),
        }
        .to_json()
    }

    /// The `toolResult` message upstream appends to the session for this result.
    pub fn to_message(&self, tool_call_id: &str, tool_name: &str, timestamp_ms: i64) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("role".into(), json!("toolResult"));
        m.insert("toolCallId".into(), json!(tool_call_id));
        m.insert("toolName".into(), json!(tool_name));
        m.insert("content".into(), content_json(&self.content));
        if let Some(d) = &self.details {
            m.insert("details".into(), d.clone());
        }
        m.insert("isError".into(), json!(self.is_error));
        m.insert("timestamp".into(), json!(timestamp_ms));
        Value::Object(m)
    }
}

impl From<Result<ToolOutput, ToolError>> for ToolResult {
    fn from(r: Result<ToolOutput, ToolError>) -> ToolResult {
        match r {
            Ok(out) => ToolResult::success(out),
            Err(e) => ToolResult::error(e.0),
        }
    }
}

/// Receives `bash`'s progress updates (`tool_execution_update.partialResult`).
pub type OnUpdate = Box<dyn FnMut(ToolOutput) + Send>;

/// Upstream's argument fix-ups before validation (`prepareArguments`). For `edit`: a JSON
/// string holding an array becomes that array, and a legacy top-level `oldText`/`newText`
/// pair is appended to `edits` as one more replacement. Other tools: unchanged.
pub fn prepare_arguments(tool: ToolName, args: &Value) -> Value {
    if tool != ToolName::Edit {
        return args.clone();
    }
    let Value::Object(map) = args else {
        return args.clone();
    };
    let mut map = map.clone();
    if let Some(Value::String(s)) = map.get("edits")
        && let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(s)
    {
        map.insert("edits".into(), parsed);
    }
    let (Some(Value::String(old)), Some(Value::String(new))) =
        (map.get("oldText"), map.get("newText"))
    else {
        return Value::Object(map);
    };
    let mut edits = match map.get("edits") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    edits.push(json!({"oldText": old, "newText": new}));
    map.remove("oldText");
    map.remove("newText");
    map.insert("edits".into(), Value::Array(edits));
    Value::Object(map)
}

/// The validated, typed arguments of one call.
#[derive(Debug, Clone)]
pub enum Call {
    Read(read::ReadArgs),
    Bash(bash::BashArgs),
    Edit(edit::EditArgs),
    Write(write::WriteArgs),
    Grep(grep::GrepArgs),
    Find(find::FindArgs),
    Ls(ls::LsArgs),
}

/// A call ready to run: the tool and its checked (and converted) arguments.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub tool: ToolName,
    /// The arguments after conversion (what the tool runs with).
    pub args: Value,
    pub call: Call,
}

/// Looks the tool up among all built-ins and checks the arguments. `Err` is the immediate
/// error result upstream records (`Tool x not found`, or the validation failure text).
/// A caller with a narrower set of active tools checks the name against that set first.
pub fn prepare(name: &str, args: &Value) -> Result<Prepared, ToolResult> {
    let Some(tool) = ToolName::from_name(name) else {
        return Err(ToolResult::not_found(name));
    };
    prepare_tool(tool, args)
}

/// [`prepare`] for a known tool.
pub(crate) fn prepare_tool(tool: ToolName, args: &Value) -> Result<Prepared, ToolResult> {
    let prepared = prepare_arguments(tool, args);
    let converted = validate::validate_arguments(tool.as_str(), &tool.parameters(), &prepared)
        .map_err(ToolResult::error)?;
    let typed = |v: &Value| -> Result<Call, ToolResult> {
        let bad = |e: serde_json::Error| ToolResult::error(format!("Invalid arguments: {e}"));
        Ok(match tool {
            ToolName::Read => Call::Read(serde_json::from_value(v.clone()).map_err(bad)?),
            ToolName::Bash => Call::Bash(serde_json::from_value(v.clone()).map_err(bad)?),
            ToolName::Edit => Call::Edit(serde_json::from_value(v.clone()).map_err(bad)?),
            ToolName::Write => Call::Write(serde_json::from_value(v.clone()).map_err(bad)?),
            ToolName::Grep => Call::Grep(serde_json::from_value(v.clone()).map_err(bad)?),
            ToolName::Find => Call::Find(serde_json::from_value(v.clone()).map_err(bad)?),
            ToolName::Ls => Call::Ls(serde_json::from_value(v.clone()).map_err(bad)?),
        })
    };
    let call = typed(&converted)?;
    Ok(Prepared {
        tool,
        args: converted,
        call,
    })
}

const ABORTED: &str = "Operation aborted";

impl Prepared {
    /// Runs the call. The returned future owns everything it needs (it can be spawned).
    ///
    /// `edit` and `write` take their place in the file's queue when this is called, so two
    /// calls on one file run in the order `execute` was called, however the futures are
    /// polled. Cancelling ends the call with `Operation aborted` (`bash`: `Command aborted`,
    /// after killing the command's process group).
    pub fn execute(
        self,
        ctx: Arc<ToolContext>,
        cancel: CancelToken,
        on_update: Option<OnUpdate>,
    ) -> impl Future<Output = ToolResult> + Send + 'static {
        let ticket = match &self.call {
            Call::Edit(a) if !a.edits.is_empty() => {
                Some(queue::enter(&path::resolve_to_cwd(&a.path, &ctx.cwd)))
            }
            Call::Write(a) => Some(queue::enter(&path::resolve_to_cwd(&a.path, &ctx.cwd))),
            _ => None,
        };
        async move {
            match self.call {
                Call::Bash(args) => {
                    let mut sink: OnUpdate = on_update.unwrap_or_else(|| Box::new(|_| {}));
                    bash::run(&ctx, &args, &cancel, &mut *sink).await.into()
                }
                call => run_blocking(call, ctx, cancel, ticket).await,
            }
        }
    }
}

/// Runs a file-system tool on the blocking pool, racing it against cancellation.
async fn run_blocking(
    call: Call,
    ctx: Arc<ToolContext>,
    cancel: CancelToken,
    ticket: Option<queue::Ticket>,
) -> ToolResult {
    if let Call::Edit(a) = &call
        && a.edits.is_empty()
    {
        return ToolResult::error(edit::EMPTY_EDITS);
    }
    if cancel.is_cancelled() {
        return ToolResult::error(ABORTED);
    }
    let worker_cancel = cancel.clone();
    let task = tokio::task::spawn_blocking(move || {
        if let Some(t) = &ticket {
            t.wait();
            if worker_cancel.is_cancelled() {
                return Err(ToolError::new(ABORTED));
            }
        }
        let result = run_call(&call, &ctx, &worker_cancel);
        drop(ticket);
        result
    });
    tokio::select! {
        r = task => match r {
            Ok(r) => r.into(),
            Err(e) => ToolResult::error(format!("Tool failed: {e}")),
        },
        () = cancel.cancelled() => ToolResult::error(ABORTED),
    }
}

/// Runs a non-`bash` call synchronously.
pub(crate) fn run_call(
    call: &Call,
    ctx: &ToolContext,
    cancel: &CancelToken,
) -> Result<ToolOutput, ToolError> {
    match call {
        Call::Read(a) => read::run(ctx, a, cancel),
        Call::Edit(a) => edit::run(ctx, a),
        Call::Write(a) => write::run(ctx, a),
        Call::Grep(a) => grep::run(ctx, a, cancel),
        Call::Find(a) => find::run(ctx, a, cancel),
        Call::Ls(a) => ls::run(ctx, a),
        Call::Bash(_) => Err(ToolError::new("bash runs asynchronously")),
    }
}

/// [`prepare`] then [`Prepared::execute`].
pub async fn execute(
    ctx: Arc<ToolContext>,
    name: &str,
    args: &Value,
    cancel: CancelToken,
    on_update: Option<OnUpdate>,
) -> ToolResult {
    match prepare(name, args) {
        Ok(p) => p.execute(ctx, cancel, on_update).await,
        Err(r) => r,
    }
}

/// The active built-in tools for the command-line flags (upstream's rules, 0.73):
/// `--tools a,b` (`list`) is an allowlist in the order given (blanks dropped, unknown and
/// repeated names ignored) and wins over `--no-tools` / `--no-builtin-tools`, which leave no
/// built-in tool active; with no flag, `read, bash, edit, write`.
pub fn select_tools(list: Option<&str>, no_tools: bool, no_builtin_tools: bool) -> Vec<ToolName> {
    match list {
        Some(list) => {
            let mut out: Vec<ToolName> = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                if let Some(t) = ToolName::from_name(name)
                    && !out.contains(&t)
                {
                    out.push(t);
                }
            }
            out
        }
        None if no_tools || no_builtin_tools => Vec::new(),
        None => ToolName::DEFAULT.to_vec(),
    }
}

/// A tool defined outside pi (a program tool, `crate::program`): what the agent
/// loop needs of it. Its arguments are checked against [`CustomTool::definition`]'s schema
/// like a built-in tool's before [`CustomTool::run`] is called.
pub trait CustomTool: Send + Sync + fmt::Debug {
    /// Name, description and parameters, as declared to the model.
    fn definition(&self) -> &ToolDefinition;
    /// The one-line summary and guidelines for the system prompt.
    fn prompt(&self) -> pi_prompt::system::Tool;
    /// Runs the tool with checked arguments; cancelling ends it with an error result.
    fn run(
        &self,
        args: Value,
        ctx: Arc<ToolContext>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn Future<Output = ToolResult> + Send + 'static>>;
    /// The program behind the tool, if it is one.
    fn source_path(&self) -> Option<std::path::PathBuf> {
        None
    }
}

/// An active tool: built in, or a program.
#[derive(Debug, Clone)]
pub enum Tool {
    Builtin(ToolName),
    Custom(Arc<dyn CustomTool>),
}

impl Tool {
    pub fn name(&self) -> &str {
        match self {
            Tool::Builtin(t) => t.as_str(),
            Tool::Custom(c) => &c.definition().name,
        }
    }

    pub fn definition(&self) -> ToolDefinition {
        match self {
            Tool::Builtin(t) => t.definition(),
            Tool::Custom(c) => c.definition().clone(),
        }
    }

    /// What the system prompt lists for the tool.
    pub fn prompt(&self) -> pi_prompt::system::Tool {
        match self {
            Tool::Builtin(t) => t.prompt(),
            Tool::Custom(c) => c.prompt(),
        }
    }

    /// Checks a call's arguments (upstream's `prepareToolCall` after the lookup); `Err` is
    /// the immediate error result.
    pub fn prepare(&self, args: &Value) -> Result<Ready, ToolResult> {
        match self {
            Tool::Builtin(t) => prepare_tool(*t, args).map(Ready::Builtin),
            Tool::Custom(c) => {
                let d = c.definition();
                let args = validate::validate_arguments(&d.name, &d.parameters, args)
                    .map_err(ToolResult::error)?;
                Ok(Ready::Custom(c.clone(), args))
            }
        }
    }
}

impl From<ToolName> for Tool {
    fn from(t: ToolName) -> Tool {
        Tool::Builtin(t)
    }
}

/// A checked call of any tool, ready to run.
#[derive(Debug, Clone)]
pub enum Ready {
    Builtin(Prepared),
    Custom(Arc<dyn CustomTool>, Value),
}

impl Ready {
    /// The arguments the call runs with.
    pub fn args(&self) -> &Value {
        match self {
            Ready::Builtin(p) => &p.args,
            Ready::Custom(_, a) => a,
        }
    }

    /// Runs the call (see [`Prepared::execute`]); the future can be spawned.
    pub fn execute(
        self,
        ctx: Arc<ToolContext>,
        cancel: CancelToken,
        on_update: Option<OnUpdate>,
    ) -> Pin<Box<dyn Future<Output = ToolResult> + Send + 'static>> {
        match self {
            Ready::Builtin(p) => Box::pin(p.execute(ctx, cancel, on_update)),
            Ready::Custom(c, args) => c.run(args, ctx, cancel),
        }
    }
}

/// Whether a tool-list entry is `+name` (add) or `-name` (remove), as opposed to a name.
pub fn is_modifier(entry: &str) -> bool {
    entry.starts_with('+') || entry.starts_with('-')
}

/// What is wrong with a `--tools` list, as the reference 1.6 checks it: names, or only
/// `+name`/`-name` entries with exact names (no `*`), never both.
pub fn tool_list_error(entries: &[&str]) -> Option<String> {
    let modifiers: Vec<&&str> = entries.iter().filter(|e| is_modifier(e)).collect();
    if modifiers.is_empty() {
        return None;
    }
    if modifiers.len() < entries.len() {
        return Some("tool names cannot be mixed with +name or -name entries".into());
    }
    modifiers
        .iter()
        .find(|e| e.contains('*'))
        .map(|e| format!("+name and -name entries take exact tool names, not patterns: {e}"))
}

/// `base` with the `+name` and `-name` entries of `entries` applied in order (other
/// entries are skipped).
pub fn apply_modifiers(base: Vec<String>, entries: &[String]) -> Vec<String> {
    let mut tools = base;
    for e in entries.iter().filter(|e| is_modifier(e)) {
        let name = &e[1..];
        let at = tools.iter().position(|t| t == name);
        match (e.starts_with('+'), at) {
            (true, None) if !name.is_empty() => tools.push(name.to_owned()),
            (false, Some(i)) => {
                tools.remove(i);
            }
            _ => {}
        }
    }
    tools
}

/// The tools a `defaultTools` setting names (the reference 1.6): its plain names replace the
/// defaults (`read, bash, edit, write`), then `+name` adds and `-name` removes a tool, in
/// order; an empty list is no tool.
pub fn resolve_default_tools(entries: &[String]) -> Vec<String> {
    let plain: Vec<String> = entries
        .iter()
        .filter(|e| !is_modifier(e))
        .cloned()
        .collect();
    let base = if plain.is_empty() && !entries.is_empty() {
        ToolName::DEFAULT
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect()
    } else {
        plain
    };
    apply_modifiers(base, entries)
}

/// How the active tools are chosen: the command-line flags and the `defaultTools` setting.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selection<'a> {
    /// `--tools`: names (an allowlist in the order given), or only `+name`/`-name` entries
    /// (changing the default selection).
    pub list: Option<&'a str>,
    pub no_tools: bool,
    pub no_builtin_tools: bool,
    /// `defaultTools` from the settings (merged), when set.
    pub default_tools: Option<&'a [String]>,
}

impl Selection<'_> {
    /// The entries of `--tools` (blanks dropped).
    pub fn entries(&self) -> Vec<&str> {
        self.list
            .map(|l| {
                l.split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The names of the default selection: `defaultTools` (else `read, bash, edit, write`;
    /// nothing with `--no-builtin-tools`), with `--tools`' `+name`/`-name` entries applied.
    /// `None` when `--tools` is an allowlist or `--no-tools` is given.
    pub fn default_names(&self) -> Option<Vec<String>> {
        let entries = self.entries();
        let modifiers = !entries.is_empty() && entries.iter().all(|e| is_modifier(e));
        if self.no_tools || (self.list.is_some() && !modifiers) {
            return None;
        }
        let base = if self.no_builtin_tools {
            Vec::new()
        } else {
            self.default_tools.map_or_else(
                || {
                    ToolName::DEFAULT
                        .iter()
                        .map(|t| t.as_str().to_owned())
                        .collect()
                },
                resolve_default_tools,
            )
        };
        let cli: Vec<String> = entries.iter().map(|e| (*e).to_owned()).collect();
        Some(apply_modifiers(base, &cli))
    }

    /// Names a `-name` entry removes (of `defaultTools` or `--tools`).
    fn removed(&self, name: &str) -> bool {
        let minus = |e: &str| e.strip_prefix('-') == Some(name);
        self.entries().iter().any(|e| minus(e))
            || self
                .default_tools
                .is_some_and(|d| d.iter().any(|e| minus(e)))
    }
}

/// The active tools over built-in and program tools: `--tools a,b` as names is an allowlist
/// in the order given (unknown and repeated names ignored) and wins over the rest;
/// `--no-tools` leaves no tool at all; otherwise the default selection
/// ([`Selection::default_names`]: `defaultTools`, `--no-builtin-tools`, `--tools +x,-y`),
/// then every program tool that no `-name` entry removes (the reference 1.6: `defaultTools`
/// chooses built-in tools, extension tools stay). A program tool with a built-in tool's
/// name takes its place.
pub fn select_active(sel: Selection<'_>, custom: &[Arc<dyn CustomTool>]) -> Vec<Tool> {
    let by_name = |name: &str| -> Option<Tool> {
        custom
            .iter()
            .find(|c| c.definition().name == name)
            .map(|c| Tool::Custom(c.clone()))
            .or_else(|| ToolName::from_name(name).map(Tool::Builtin))
    };
    let mut out: Vec<Tool> = Vec::new();
    let push = |t: Tool, out: &mut Vec<Tool>| {
        if !out.iter().any(|o| o.name() == t.name()) {
            out.push(t);
        }
    };
    if sel.no_tools {
        return out;
    }
    match sel.default_names() {
        None => {
            for name in sel.entries() {
                if let Some(t) = by_name(name) {
                    push(t, &mut out);
                }
            }
        }
        Some(names) => {
            for name in &names {
                if let Some(t) = by_name(name) {
                    push(t, &mut out);
                }
            }
            for c in custom {
                let name = &c.definition().name;
                if names.contains(name) || !sel.removed(name) {
                    push(Tool::Custom(c.clone()), &mut out);
                }
            }
        }
    }
    out
}

/// A JavaScript number used as a count (`slice` semantics): the integer part, saturated.
pub(crate) fn js_int(n: f64) -> i64 {
    if n.is_nan() { 0 } else { n.trunc() as i64 }
}
