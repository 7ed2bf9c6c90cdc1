//! Helpers for the tool tests: a temporary tree with a `proj/` working directory and a
//! `tmp/` directory for bash's full-output files, and a way to run a tool call the way the
//! agent loop does (prepare, then execute) without an async caller.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_tools::{self as tools, CancelToken, OnUpdate, ToolContext, ToolOutput, ToolResult};
use serde_json::Value;

pub struct Tree {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
}

impl Tree {
    pub fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        for d in ["proj", "tmp", "home"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        Tree { _tmp: tmp, root }
    }

    pub fn proj(&self) -> PathBuf {
        self.root.join("proj")
    }

    /// Writes `proj/<rel>` (parents created).
    pub fn file(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.proj().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.proj().join(rel)).unwrap()
    }

    pub fn ctx(&self) -> ToolContext {
        ctx_in(&self.proj(), &self.root.join("tmp"))
    }

    /// Runs a call with the default context.
    pub fn call(&self, tool: &str, args: Value) -> ToolResult {
        call(self.ctx(), tool, &args)
    }
}

pub fn ctx_in(cwd: &Path, temp: &Path) -> ToolContext {
    let mut ctx = ToolContext::new(cwd);
    ctx.bin_dir = None;
    ctx.temp_dir = temp.to_path_buf();
    ctx
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// prepare + execute, on a fresh single-threaded runtime.
pub fn call(ctx: ToolContext, tool: &str, args: &Value) -> ToolResult {
    runtime().block_on(tools::execute(
        Arc::new(ctx),
        tool,
        args,
        CancelToken::new(),
        None,
    ))
}

/// Like [`call`], collecting the progress updates.
pub fn call_with_updates(
    ctx: ToolContext,
    tool: &str,
    args: &Value,
    cancel: CancelToken,
) -> (ToolResult, Vec<ToolOutput>) {
    let updates = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&updates);
    let on_update: OnUpdate = Box::new(move |u| sink.lock().unwrap().push(u));
    let r = runtime().block_on(tools::execute(
        Arc::new(ctx),
        tool,
        args,
        cancel,
        Some(on_update),
    ));
    let u = updates.lock().unwrap().clone();
    (r, u)
}

/// The single text block of a result.
pub fn text(r: &ToolResult) -> String {
    r.text()
}

/// `n` lines `Line 1` … `Line n` joined with `\n`.
pub fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("Line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}
