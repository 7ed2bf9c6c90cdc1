//! Program tools: an executable that describes itself when run with `--describe` and does
//! its work when run with the call's arguments as a JSON object on stdin.
//!
//! `PROGRAM --describe` prints `{"name", "description", "parameters", "promptSnippet"?,
//! "promptGuidelines"?, "timeout"?}`: `parameters` is the JSON schema of the arguments (an
//! object schema; default: no arguments), `promptSnippet` the one-line summary the system
//! prompt lists, `promptGuidelines` lines added to its guidelines, `timeout` a limit in
//! seconds for one call.
//!
//! A call runs `PROGRAM` in the session's working directory with `PI_TOOL_NAME`, `PI_CWD`
//! and `PI_SESSION_FILE` set. What it prints on stdout is the result: plain text, or a JSON
//! object `{"content": [blocks] | "text", "details"?, "isError"?}`. A status other than 0
//! makes the result an error (its stderr is added). Text longer than 2000 lines or 50KB is
//! cut, as the built-in tools cut theirs.
//!
//! Tools are found in `<agent dir>/tools/` and `<cwd>/.pi/tools/` (executable files; a
//! project tool takes the place of a global one of the same name; the project's only when
//! it is trusted, see [`crate::trust`]) and given with `--tool PATH` (these win over both).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::env::Policy;
use super::process::{self, RunError, Spec};
use crate::project::Project;
use crate::truncate::{self, Limits};
use crate::{CancelToken, Content, CustomTool, ToolContext, ToolDefinition, ToolResult};

/// How long `--describe` may take.
pub(crate) const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A program tool, described.
#[derive(Debug, Clone)]
pub struct ProgramTool {
    pub path: PathBuf,
    pub definition: ToolDefinition,
    pub snippet: Option<String>,
    pub guidelines: Vec<String>,
    pub timeout: Option<Duration>,
}

/// Whether a name is one every provider takes for a tool.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Reads what `--describe` printed.
pub(crate) fn parse_description(path: &Path, stdout: &[u8]) -> Result<ProgramTool, String> {
    let v: Value = serde_json::from_slice(stdout)
        .map_err(|e| format!("`--describe` did not print a JSON object: {e}"))?;
    let o = v
        .as_object()
        .ok_or("`--describe` printed JSON that is not an object")?;
    let name = o
        .get("name")
        .and_then(Value::as_str)
        .ok_or("the description has no \"name\" (a string)")?;
    if !valid_name(name) {
        return Err(format!(
            "invalid tool name \"{name}\": use 1 to 64 letters, digits, '_' or '-'"
        ));
    }
    let description = o
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
        .ok_or("the description has no \"description\" (a non-empty string)")?;
    let parameters = match o.get("parameters") {
        None => json!({"type": "object", "properties": {}}),
        Some(p @ Value::Object(m))
            if m.get("type")
                .and_then(Value::as_str)
                .is_none_or(|t| t == "object")
                && m.get("properties").is_none_or(Value::is_object)
                && m.get("required").is_none_or(|r| {
                    r.as_array().is_some_and(|a| a.iter().all(Value::is_string))
                }) =>
        {
            p.clone()
        }
        Some(_) => return Err("\"parameters\" must be a JSON schema of an object".into()),
    };
    let snippet = match o.get("promptSnippet") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("\"promptSnippet\" must be a string".into()),
    };
    let guidelines = match o.get("promptGuidelines") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|g| {
                g.as_str()
                    .map(str::to_owned)
                    .ok_or("\"promptGuidelines\" must be a list of strings")
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"promptGuidelines\" must be a list of strings".into()),
    };
    let timeout = match o.get("timeout") {
        None | Some(Value::Null) => None,
        Some(t) => Some(
            t.as_f64()
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(|s| Duration::from_secs_f64(s.min(86_400.0)))
                .ok_or("\"timeout\" must be a number of seconds above 0")?,
        ),
    };
    Ok(ProgramTool {
        path: path.to_owned(),
        definition: ToolDefinition {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters,
        },
        snippet,
        guidelines,
        timeout,
    })
}

/// Runs `PROGRAM --describe` (from synchronous code), with the environment `policy` makes.
pub fn describe(path: &Path, cwd: &Path, policy: &Arc<Policy>) -> Result<ProgramTool, String> {
    let spec = Spec {
        argv: vec![path.as_os_str().to_owned(), "--describe".into()],
        cwd: cwd.to_owned(),
        policy: policy.clone(),
        env: vec![("PI_CWD".into(), cwd.as_os_str().to_owned())],
        stdin: Vec::new(),
        timeout: Some(DESCRIBE_TIMEOUT),
        capture_stderr: true,
    };
    let done = process::run_blocking(&spec).map_err(|e| format!("`--describe`: {e}"))?;
    if !done.status.success() {
        let err = String::from_utf8_lossy(&done.stderr);
        let err = err.trim();
        return Err(format!(
            "`--describe` ended with {}{}",
            process::describe_status(&done.status),
            if err.is_empty() {
                String::new()
            } else {
                format!(": {err}")
            }
        ));
    }
    parse_description(path, &done.stdout)
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The executables of a `tools/` folder, by name.
fn folder(dir: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') || p.is_dir() {
            continue;
        }
        if is_executable(&p) {
            out.push(p);
        } else {
            warnings.push(format!(
                "ignoring {}: not an executable file (chmod +x it to make it a tool)",
                p.display()
            ));
        }
    }
    out.sort();
    out
}

/// The program tools for a session of `project`: `<agent dir>/tools/`, the project's
/// `.pi/tools/` when it is trusted, then `explicit` (`--tool`, taken from `launch_dir`);
/// later ones take the place of earlier ones of the same name. A tool that cannot describe
/// itself is left out with a warning, except one given with `--tool`, which is an error.
pub fn discover(
    agent_dir: &Path,
    project: &Project,
    launch_dir: &Path,
    explicit: &[PathBuf],
    warnings: &mut Vec<String>,
) -> Result<Vec<Arc<dyn CustomTool>>, String> {
    let cwd = project.dir.as_path();
    let policy = &project.policy;
    let mut found: Vec<ProgramTool> = Vec::new();
    let add = |t: ProgramTool, found: &mut Vec<ProgramTool>| match found
        .iter_mut()
        .find(|f| f.definition.name == t.definition.name)
    {
        Some(f) => *f = t,
        None => found.push(t),
    };
    let mut dirs = vec![agent_dir.join("tools")];
    if project.trusted {
        dirs.push(cwd.join(".pi").join("tools"));
    }
    for dir in dirs {
        for p in folder(&dir, warnings) {
            match describe(&p, cwd, policy) {
                Ok(t) => add(t, &mut found),
                Err(e) => warnings.push(format!("ignoring tool {}: {e}", p.display())),
            }
        }
    }
    for p in explicit {
        let p = launch_dir.join(p);
        if !is_executable(&p) {
            return Err(format!("--tool {}: not an executable file", p.display()));
        }
        let t = describe(&p, cwd, policy).map_err(|e| format!("--tool {}: {e}", p.display()))?;
        add(t, &mut found);
    }
    Ok(found
        .into_iter()
        .map(|t| Arc::new(t) as Arc<dyn CustomTool>)
        .collect())
}

/// A text cut to the tools' limits, with a notice when cut.
fn cut(text: String) -> (String, Option<Value>) {
    let t = truncate::truncate_head(&text, Limits::default());
    if !t.truncated {
        return (text, None);
    }
    let limit = truncate::format_size(t.max_bytes);
    let notice = if t.first_line_exceeds_limit {
        let first = text.split('\n').next().map_or(0, str::len);
        format!(
            "[Output truncated: its first line is {}, over the {limit} limit.]",
            truncate::format_size(first)
        )
    } else if t.truncated_by == Some(truncate::TruncatedBy::Bytes) {
        format!(
            "\n\n[Output truncated: showing lines 1-{} of {} ({limit} limit).]",
            t.output_lines, t.total_lines
        )
    } else {
        format!(
            "\n\n[Output truncated: showing lines 1-{} of {}.]",
            t.output_lines, t.total_lines
        )
    };
    let details = t.to_json();
    (format!("{}{notice}", t.content), Some(details))
}

/// The result of a call from what the program printed.
pub(crate) fn result_of(
    stdout: &[u8],
    stderr: &[u8],
    status: Option<i32>,
    signal: bool,
) -> ToolResult {
    let text = String::from_utf8_lossy(stdout).into_owned();
    let parsed = match serde_json::from_str::<Value>(text.trim_start()) {
        Ok(Value::Object(o)) if o.contains_key("content") => Some(o),
        _ => None,
    };
    let mut result = match parsed {
        Some(o) => {
            let content = match o.get("content") {
                Some(Value::String(s)) => Ok(vec![Content::text(s.clone())]),
                Some(c) => serde_json::from_value::<Vec<Content>>(c.clone()).map_err(|e| {
                    format!("the tool printed a result whose \"content\" is not a list of text and image blocks: {e}")
                }),
                None => Ok(Vec::new()),
            };
            match content {
                Ok(mut content) => {
                    // Long text blocks are cut too.
                    for c in &mut content {
                        if let Content::Text { text } = c {
                            let (t, _) = cut(std::mem::take(text));
                            *text = t;
                        }
                    }
                    ToolResult {
                        content,
                        details: o.get("details").cloned(),
                        is_error: o.get("isError").and_then(Value::as_bool) == Some(true),
                    }
                }
                Err(e) => return ToolResult::error(e),
            }
        }
        None => {
            let (text, details) = cut(text);
            ToolResult {
                content: vec![Content::text(if text.is_empty() {
                    "(no output)".to_owned()
                } else {
                    text
                })],
                details: details.map(|t| json!({"truncation": t})),
                is_error: false,
            }
        }
    };
    let failed = status != Some(0) || signal;
    if failed {
        result.is_error = true;
        let err = String::from_utf8_lossy(stderr);
        let err = err.trim_end();
        let mut tail = String::new();
        if !err.is_empty() {
            tail.push_str("\n\n");
            tail.push_str(&cut(err.to_owned()).0);
        }
        match status {
            Some(code) => tail.push_str(&format!("\n\nTool exited with code {code}")),
            None => tail.push_str("\n\nTool was killed by a signal"),
        }
        match result.content.iter_mut().rev().find_map(|c| match c {
            Content::Text { text } => Some(text),
            Content::Image { .. } => None,
        }) {
            Some(text) if text != "(no output)" => text.push_str(&tail),
            Some(text) => *text = tail.trim_start().to_owned(),
            None => result.content.push(Content::text(tail.trim_start())),
        }
    }
    result
}

impl CustomTool for ProgramTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn source_path(&self) -> Option<PathBuf> {
        Some(self.path.clone())
    }

    fn prompt(&self) -> pi_prompt::system::Tool {
        pi_prompt::system::Tool::custom(
            &self.definition.name,
            self.snippet.as_deref(),
            &self.guidelines,
        )
    }

    fn run(
        &self,
        args: Value,
        ctx: Arc<ToolContext>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn std::future::Future<Output = ToolResult> + Send + 'static>> {
        let mut env: Vec<(String, OsString)> = vec![
            ("PI_TOOL_NAME".into(), self.definition.name.clone().into()),
            ("PI_CWD".into(), ctx.cwd.clone().into_os_string()),
        ];
        if let Some(f) = &ctx.session_file {
            env.push(("PI_SESSION_FILE".into(), f.clone().into_os_string()));
        }
        let mut stdin = serde_json::to_vec(&args).unwrap_or_else(|_| b"{}".to_vec());
        stdin.push(b'\n');
        let diagnostics = ctx.diagnostics;
        let spec = Spec {
            argv: vec![self.path.clone().into_os_string()],
            cwd: ctx.cwd.clone(),
            policy: ctx.env_policy.clone(),
            env,
            stdin,
            timeout: self.timeout,
            capture_stderr: true,
        };
        Box::pin(async move {
            if cancel.is_cancelled() {
                return ToolResult::error("Operation aborted");
            }
            match process::run(&spec, Some(&cancel)).await {
                Ok(done) => {
                    use std::os::unix::process::ExitStatusExt;
                    let r = result_of(
                        &done.stdout,
                        &done.stderr,
                        done.status.code(),
                        done.status.signal().is_some(),
                    );
                    if !r.is_error && !done.stderr.is_empty() {
                        (diagnostics)(&done.stderr);
                    }
                    r
                }
                Err(RunError::Cancelled) => ToolResult::error("Operation aborted"),
                Err(RunError::TimedOut(d)) => ToolResult::error(format!(
                    "Tool timed out after {} seconds",
                    process::format_secs(d)
                )),
                Err(e) => ToolResult::error(format!(
                    "Cannot run {}: {e}",
                    spec.argv[0].to_string_lossy()
                )),
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn descriptions() {
        let p = Path::new("/x/t");
        let t = parse_description(
            p,
            br#"{"name":"todo","description":"Keep a list","parameters":{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]},"promptSnippet":"Track tasks","promptGuidelines":["Use todo for tasks."],"timeout":5}"#,
        )
        .unwrap();
        assert_eq!(t.definition.name, "todo");
        assert_eq!(t.timeout, Some(Duration::from_secs(5)));
        assert_eq!(t.guidelines, vec!["Use todo for tasks."]);
        let t = parse_description(p, br#"{"name":"x","description":"d"}"#).unwrap();
        assert_eq!(
            t.definition.parameters,
            json!({"type":"object","properties":{}})
        );
        for bad in [
            &br#"[1]"#[..],
            br#"{"description":"d"}"#,
            br#"{"name":"a b","description":"d"}"#,
            br#"{"name":"a","description":" "}"#,
            br#"{"name":"a","description":"d","parameters":{"type":"string"}}"#,
            br#"{"name":"a","description":"d","parameters":{"type":"object","properties":5}}"#,
            br#"{"name":"a","description":"d","parameters":{"required":"x"}}"#,
            br#"{"name":"a","description":"d","promptGuidelines":"x"}"#,
            b"not json",
        ] {
            assert!(
                parse_description(p, bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn results() {
        let r = result_of(b"hello\n", b"", Some(0), false);
        assert_eq!((r.text().as_str(), r.is_error), ("hello\n", false));
        let r = result_of(b"", b"", Some(0), false);
        assert_eq!(r.text(), "(no output)");
        let r = result_of(
            br#"{"content":"done","details":{"n":2}}"#,
            b"",
            Some(0),
            false,
        );
        assert_eq!(r.text(), "done");
        assert_eq!(r.details, Some(json!({"n": 2})));
        let r = result_of(
            br#"{"content":[{"type":"text","text":"a"}],"isError":true}"#,
            b"",
            Some(0),
            false,
        );
        assert!(r.is_error);
        let r = result_of(b"partial", b"boom", Some(3), false);
        assert!(r.is_error);
        assert_eq!(r.text(), "partial\n\nboom\n\nTool exited with code 3");
        let r = result_of(b"", b"", Some(1), false);
        assert_eq!(r.text(), "Tool exited with code 1");
        let big = "line\n".repeat(3000);
        let r = result_of(big.as_bytes(), b"", Some(0), false);
        assert!(
            r.text()
                .ends_with("[Output truncated: showing lines 1-2000 of 3001.]")
        );
        let wide = "x".repeat(60_000);
        let r = result_of(format!("{wide}\n{wide}").as_bytes(), b"", Some(0), false);
        assert_eq!(
            r.text(),
            "[Output truncated: its first line is 58.6KB, over the 50.0KB limit.]"
        );
        assert!(
            r.details.unwrap()["truncation"]["truncated"]
                .as_bool()
                .unwrap()
        );
    }
}
