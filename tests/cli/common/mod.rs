//! Shared helpers: a temporary world (agent dir, home, project dir) and a `pi` command bound
//! to it.
//!
//! Every command of a world runs with a fixed clock (`PI_NOW` = [`NOW`]) and a seed for its
//! ids (`PI_SEED`) drawn from a counter of the world, so a test's output is the same on every
//! run (and can be compared with a snapshot) while two commands of one test still make
//! distinct ids. A test that needs the real clock says so with [`World::real_clock`].

#![allow(dead_code)]

pub mod deflate;

pub mod model_server;

pub mod sessions;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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

/// The clock of every command of a [`World`] (`PI_NOW`).
pub const NOW: &str = "2026-01-02T03:04:05.678Z";

/// The terminal width of the tests that render human views (`COLUMNS`).
pub const COLUMNS: &str = "100";

/// A temporary home with an agent directory and a project directory.
pub struct World {
    pub tmp: tempfile::TempDir,
    /// The `PI_SEED` of the next command (counts up, so each command draws other ids).
    seed: AtomicU64,
    /// Commands see the real clock instead of [`NOW`].
    real_clock: AtomicBool,
}

impl World {
    pub fn new() -> World {
        let tmp = tempfile::tempdir().expect("tempdir");
        for d in ["home", "agent", "proj"] {
            std::fs::create_dir_all(tmp.path().join(d)).expect("mkdir");
        }
        World {
            tmp,
            seed: AtomicU64::new(1),
            real_clock: AtomicBool::new(false),
        }
    }

    /// From now on, commands run with the real clock (no `PI_NOW`): for tests about ages,
    /// modification times or time passing. `why` documents the reason at the call site.
    pub fn real_clock(&self, why: &str) -> &Self {
        assert!(!why.is_empty(), "say why the test needs the real clock");
        self.real_clock.store(true, Ordering::Relaxed);
        self
    }

    /// The environment of a command: a clean one with the world's home, agent directory,
    /// clock and the next id seed.
    pub fn envs(&self) -> Vec<(&'static str, OsString)> {
        let seed = self.seed.fetch_add(1, Ordering::Relaxed);
        let mut env = vec![
            ("PATH", std::env::var_os("PATH").unwrap_or_default()),
            ("HOME", self.path("home").into_os_string()),
            ("PI_CODING_AGENT_DIR", self.agent().into_os_string()),
            ("PI_SEED", seed.to_string().into()),
        ];
        if !self.real_clock.load(Ordering::Relaxed) {
            env.push(("PI_NOW", NOW.into()));
        }
        env
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

    /// Gives the world the reference 0.73's model catalogue as its `models.json` (for
    /// goldens recorded from 0.73 that name models 1.6 dropped or changed).
    pub fn with_models_073(&self) {
        self.write(
            "agent/models.json",
            std::fs::read(fixture(MODELS_073)).expect("models-0.73.json"),
        );
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
        c.current_dir(self.proj()).env_clear().envs(self.envs());
        c
    }

    /// `pi` as a plain std Command (for spawning with pipes).
    pub fn std_cmd(&self) -> std::process::Command {
        let mut c = std::process::Command::new(bin());
        c.current_dir(self.proj()).env_clear().envs(self.envs());
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

    /// `text` with the world's directories written as placeholders: `[SESSIONS]` for the
    /// project's session directory, `[AGENT]`, `[PROJ]`, `[HOME]` and `[ROOT]`, also in the
    /// names of session directories (`--[ROOT]-other--`).
    pub fn redact(&self, text: &str) -> String {
        let root = self.root().to_string_lossy().into_owned();
        let canonical = std::fs::canonicalize(self.root())
            .expect("canonicalize")
            .to_string_lossy()
            .into_owned();
        let proj = self.proj().to_string_lossy().into_owned();
        let sessions = self
            .agent()
            .join("sessions")
            .join(pi_base::config::encode_cwd(&proj))
            .to_string_lossy()
            .into_owned();
        let mut text = text.replace(&sessions, "[SESSIONS]");
        // The session directory of another directory under the root.
        let encoded = pi_base::config::encode_cwd(&canonical);
        text = text.replace(encoded.trim_end_matches('-'), "--[ROOT]");
        for (dir, name) in [("agent", "[AGENT]"), ("proj", "[PROJ]"), ("home", "[HOME]")] {
            for base in [&canonical, &root] {
                text = text.replace(&format!("{base}/{dir}"), name);
            }
        }
        text.replace(&canonical, "[ROOT]").replace(&root, "[ROOT]")
    }

    /// A command's outcome as one text for a snapshot: the exit status, stdout and stderr,
    /// redacted (see [`World::redact`]). A missing final newline is marked `[no newline]`.
    pub fn shown(&self, o: &std::process::Output) -> String {
        let status = match o.status.code() {
            Some(code) => code.to_string(),
            None => format!("{:?}", o.status),
        };
        let part = |bytes: &[u8]| {
            let mut t = self.redact(&String::from_utf8_lossy(bytes));
            if !t.is_empty() && !t.ends_with('\n') {
                t.push_str("[no newline]\n");
            }
            t
        };
        format!(
            "status: {status}\n----- stdout -----\n{}----- stderr -----\n{}",
            part(&o.stdout),
            part(&o.stderr)
        )
    }

    /// Runs `pi ARGS` as for a human view (`COLUMNS` fixed at [`COLUMNS`]) and shows its
    /// outcome (see [`World::shown`]).
    pub fn snap(&self, args: &[&str]) -> String {
        let o = self
            .pi()
            .env("COLUMNS", COLUMNS)
            .args(args)
            .output()
            .expect("run pi");
        self.shown(&o)
    }

    /// [`World::snap`] of several commands, each shown after a `$ pi ARGS` line.
    pub fn snaps(&self, runs: &[&[&str]]) -> String {
        runs.iter()
            .map(|args| {
                let line = self.redact(&shell_words::join(*args));
                format!("$ pi {line}\n{}", self.snap(args))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// [`World::snap`] with `stdin`.
    pub fn snap_in(&self, args: &[&str], stdin: &str) -> String {
        let o = self
            .pi()
            .env("COLUMNS", COLUMNS)
            .args(args)
            .write_stdin(stdin)
            .output()
            .expect("run pi");
        self.shown(&o)
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

/// The reference 0.73's model catalogue (`tests/fixtures/llm/models-0.73.json`, written by
/// `scripts/models.mjs --models-json` from 0.73), for the goldens recorded from 0.73 whose
/// models 1.6 changed or dropped. As a `models.json`, or (`catalogue_073`) as built-in models.
pub const MODELS_073: &str = "llm/models-0.73.json";

/// The 0.73 catalogue as built-in models (its static headers stay the models' own, as the
/// built-in table keeps them).
pub fn catalogue_073() -> pi_ai::models::Registry {
    let text = std::fs::read_to_string(fixture(MODELS_073)).expect("models-0.73.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("models-0.73.json is JSON");
    let mut table = String::new();
    for (provider, p) in v["providers"].as_object().expect("providers") {
        for m in p["models"].as_array().expect("models") {
            let mut m = m.clone();
            m["provider"] = provider.as_str().into();
            table.push_str(&m.to_string());
            table.push('\n');
        }
    }
    pi_ai::models::Registry::from_table(&table)
}
