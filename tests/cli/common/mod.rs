//! Shared helpers: a temporary world (agent dir, home, project dir) and a `pi` command bound
//! to it.

#![allow(dead_code)]

pub mod deflate;

pub mod model_server;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// Path to the pi binary under test.
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin!("pi").to_path_buf()
}

/// The reference fixtures shipped with the repository.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A temporary home with an agent directory and a project directory.
pub struct World {
    pub tmp: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        let tmp = tempfile::tempdir().expect("tempdir");
        for d in ["home", "agent", "proj"] {
            std::fs::create_dir_all(tmp.path().join(d)).expect("mkdir");
        }
        World { tmp }
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    pub fn agent(&self) -> PathBuf {
        self.root().join("agent")
    }

    /// The project directory (canonical, as the process sees its cwd).
    pub fn proj(&self) -> PathBuf {
        std::fs::canonicalize(self.root().join("proj")).expect("canonicalize")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(&p, content).expect("write");
        p
    }

    /// `pi` with a clean environment, run in the project directory.
    pub fn pi(&self) -> Command {
        let mut c = Command::new(bin());
        c.current_dir(self.proj())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("PI_CODING_AGENT_DIR", self.agent());
        c
    }

    /// `pi` as a plain std Command (for spawning with pipes).
    pub fn std_cmd(&self) -> std::process::Command {
        let mut c = std::process::Command::new(bin());
        c.current_dir(self.proj())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("PI_CODING_AGENT_DIR", self.agent());
        c
    }

    /// Runs `pi ARGS` expecting success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.pi().args(args).output().expect("run pi");
        assert!(
            out.status.success(),
            "pi {args:?} failed with {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf8")
    }

    /// Runs `pi ARGS` with stdin, expecting success; returns stdout.
    pub fn ok_in(&self, args: &[&str], stdin: &str) -> String {
        let out = self
            .pi()
            .args(args)
            .write_stdin(stdin)
            .output()
            .expect("run pi");
        assert!(
            out.status.success(),
            "pi {args:?} failed with {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf8")
    }

    /// Creates a session in the project and returns its path.
    pub fn new_session(&self) -> PathBuf {
        PathBuf::from(self.ok(&["session", "new"]).trim())
    }
}

/// Parses JSONL output.
pub fn jsonl(s: &str) -> Vec<serde_json::Value> {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// A user message line for stdin.
pub fn user(text: &str) -> String {
    serde_json::json!({"role": "user", "content": text}).to_string()
}

/// An assistant message line for stdin.
pub fn assistant(text: &str) -> String {
    serde_json::json!({
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop",
    })
    .to_string()
}
