//! Secrets stay with pi: the `bash` tool, hooks and program tools get the environment
//! without secret-looking variables (`shellEnvironmentPolicy`, as Codex does it); files
//! holding conversations are private whatever the umask; `bash`'s full-output files do not
//! outlive a run that does not record them; keys are cut out of errors in every spelling.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::ext_hooks::script;
use crate::run_support::*;

/// Secrets in pi's environment, and one harmless variable.
const ENV: [(&str, &str); 7] = [
    ("OPENAI_API_KEY", "sk-openai-8c1d2e3f"),
    ("ANTHROPIC_API_KEY", "sk-ant-7a6b5c4d"),
    ("GITHUB_TOKEN", "ghp_0a1b2c3d4e"),
    ("db_password", "hunter2-pw"),
    ("AWS_SECRET_ACCESS_KEY", "aws-secret-99"),
    ("Signing_Secret", "sign-secret-42"),
    ("HARMLESS", "visible-value"),
];

fn secrets_hidden(text: &str) {
    for (name, value) in &ENV[..6] {
        assert!(!text.contains(value), "{name} reached a child:\n{text}");
    }
}

/// `pi run` with the secrets in its environment, the model calling `bash` with `env`.
fn run_env(w: &World, server: &ModelServer, extra: &[&str]) -> std::process::Output {
    server.push(tool_calls(&[("c1", "bash", r#"{"command":"env"}"#)]));
    server.push(Reply::openai_text(&["done"]));
    w.pi()
        .envs(ENV)
        .args(["run", "--json"])
        .args(extra)
        .args(["-p", "show me the environment"])
        .output()
        .unwrap()
}

/// The text of the last `bash` result of the project's session.
fn last_result(w: &World) -> String {
    text(tool_results(&session_file(w)).last().unwrap())
}

#[test]
fn children_get_no_secret_looking_variables() {
    let server = ModelServer::start();
    let w = world(&server);
    let env_log = w.path("hook-env.txt");
    settings(
        &w,
        json!({"hooks": {"agent_end": format!("cat > /dev/null; env > '{}'", env_log.display())}}),
    );
    script(
        &w,
        "agent/tools/showenv",
        r#"if [ "$1" = --describe ]; then echo '{"name": "showenv", "description": "Prints the environment"}'; exit; fi
env"#,
    );
    let o = run_env(&w, &server, &[]);
    status(&o, 0);
    let bash = last_result(&w);
    assert!(bash.contains("HARMLESS=visible-value"), "{bash}");
    assert!(bash.contains("PATH="), "{bash}");
    secrets_hidden(&bash);
    // The whole session and the event stream too (the model's key is used, not leaked).
    secrets_hidden(&std::fs::read_to_string(session_file(&w)).unwrap());
    secrets_hidden(&out(&o));
    let hook_env = std::fs::read_to_string(&env_log).unwrap();
    assert!(hook_env.contains("HARMLESS=visible-value"));
    assert!(hook_env.contains("PI_HOOK_EVENT=agent_end"));
    secrets_hidden(&hook_env);
    // A program tool, and the key still reached the provider.
    server.push(tool_calls(&[("c1", "showenv", "{}")]));
    server.push(Reply::openai_text(&["done"]));
    let o = w.pi().envs(ENV).args(["run", "-p", "x"]).output().unwrap();
    status(&o, 0);
    let tool = last_result(&w);
    assert!(tool.contains("PI_TOOL_NAME=showenv"), "{tool}");
    assert!(tool.contains("HARMLESS=visible-value"), "{tool}");
    secrets_hidden(&tool);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

/// `shellEnvironmentPolicy` with Codex's rules: inherit, default excludes, exclude, set,
/// includeOnly; a project's policy counts only when the project is trusted.
#[test]
fn the_environment_policy_follows_codex() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        json!({"shellEnvironmentPolicy": {"inherit": "core", "set": {"ADDED": "by-policy"}}}),
    );
    status(&run_env(&w, &server, &[]), 0);
    let env = last_result(&w);
    assert!(env.contains("ADDED=by-policy"), "{env}");
    assert!(env.contains("HOME="), "{env}");
    assert!(!env.contains("HARMLESS"), "{env}");
    secrets_hidden(&env);

    settings(
        &w,
        json!({"shellEnvironmentPolicy": {"ignoreDefaultExcludes": true, "exclude": ["*_secret*"],
                                          "includeOnly": ["*_API_KEY", "AWS_*", "signing_*", "PATH"]}}),
    );
    status(&run_env(&w, &server, &[]), 0);
    let env = last_result(&w);
    // (bash itself adds PWD, SHLVL and _.)
    let mut names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .filter(|k| !["PWD", "OLDPWD", "SHLVL", "_"].contains(k))
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "PATH"],
        "{env}"
    );

    // A bad value is a warning and never lets more through.
    settings(
        &w,
        json!({"shellEnvironmentPolicy": {"inherit": "everything"}}),
    );
    let o = run_env(&w, &server, &[]);
    status(&o, 0);
    assert!(
        err(&o).contains("\"shellEnvironmentPolicy.inherit\" must be"),
        "{}",
        err(&o)
    );
    let env = last_result(&w);
    assert!(env.contains("HARMLESS=visible-value"));
    secrets_hidden(&env);

    // The project asks for every variable: not before it is trusted.
    settings(&w, json!({}));
    w.write(
        "proj/.pi/settings.json",
        r#"{"shellEnvironmentPolicy": {"ignoreDefaultExcludes": true}}"#,
    );
    let o = run_env(&w, &server, &[]);
    status(&o, 0);
    assert!(err(&o).contains("pi trust"), "{}", err(&o));
    secrets_hidden(&last_result(&w));
    w.ok(&["trust"]);
    status(&run_env(&w, &server, &[]), 0);
    assert!(last_result(&w).contains("OPENAI_API_KEY=sk-openai-8c1d2e3f"));
}

/// `pi ARGS` run with umask 000 (as `sh -c 'umask 000; exec pi …'`).
fn lax(w: &World, args: &[&str]) -> std::process::Output {
    let mut c = assert_cmd::Command::new("sh");
    c.current_dir(w.proj())
        .env_clear()
        .envs(w.envs())
        .env("TMPDIR", w.path("tmp"))
        .arg("-c")
        .arg("umask 000 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args(args);
    c.output().unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// The `pi-bash-*.log` files in the world's temporary directory.
fn logs(w: &World) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(w.path("tmp"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("pi-bash-"))
        .collect();
    v.sort();
    v
}

#[test]
fn files_with_conversations_are_private_whatever_the_umask() {
    let server = ModelServer::start();
    let w = world(&server);
    std::fs::create_dir_all(w.path("tmp")).unwrap();
    let o = lax(&w, &["session", "new"]);
    status(&o, 0);
    let s = PathBuf::from(out(&o).trim());
    assert_eq!(mode(&s), 0o600);
    assert_eq!(mode(s.parent().unwrap()), 0o700);
    assert_eq!(mode(&w.agent().join("sessions")), 0o700);
    // Appends keep an id cache: private too.
    let mut stdin = String::new();
    for k in 0..3 {
        stdin.push_str(&user(&format!("q{k}")));
        stdin.push('\n');
    }
    let o = lax_in(&w, &["session", "append", s.to_str().unwrap()], &stdin);
    status(&o, 0);
    let cache = w.agent().join("cache").join("session-ids");
    let files: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!files.is_empty());
    for f in &files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    assert_eq!(mode(&cache), 0o700);
    let o = lax(&w, &["session", "fork", s.to_str().unwrap()]);
    status(&o, 0);
    assert_eq!(mode(Path::new(out(&o).trim())), 0o600);

    // A run's session and the full output of a long command.
    std::fs::remove_dir_all(w.agent().join("sessions")).unwrap();
    server.push(tool_calls(&[("c1", "bash", r#"{"command":"seq 1 5000"}"#)]));
    server.push(Reply::openai_text(&["done"]));
    let o = lax(&w, &["run", "-p", "count"]);
    status(&o, 0);
    let f = session_file(&w);
    assert_eq!(mode(&f), 0o600);
    assert_eq!(mode(f.parent().unwrap()), 0o700);
    let kept = logs(&w);
    assert_eq!(kept.len(), 1);
    assert_eq!(mode(&kept[0]), 0o600);
    // The session names it, so it stays.
    let details = &tool_results(&f)[0]["details"];
    assert_eq!(details["fullOutputPath"], kept[0].to_str().unwrap());

    // Without a session nothing names it: removed when the run ends.
    server.push(tool_calls(&[("c1", "bash", r#"{"command":"seq 1 5000"}"#)]));
    server.push(Reply::openai_text(&["done"]));
    let o = lax(&w, &["run", "--no-session", "--json", "-p", "count"]);
    status(&o, 0);
    assert!(out(&o).contains("fullOutputPath"));
    assert_eq!(logs(&w), kept);
}

fn lax_in(w: &World, args: &[&str], stdin: &str) -> std::process::Output {
    let mut c = assert_cmd::Command::new("sh");
    c.current_dir(w.proj())
        .env_clear()
        .envs(w.envs())
        .arg("-c")
        .arg("umask 000 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args(args)
        .write_stdin(stdin);
    c.output().unwrap()
}

/// A provider's error that repeats the key in other spellings: each is cut out.
#[test]
fn keys_are_redacted_in_every_spelling() {
    let server = ModelServer::start();
    let w = World::new();
    let key = "sk-Live/Abc+Def=0123456789xyz";
    w.write(
        "agent/models.json",
        json!({"providers": {"mock": {"baseUrl": format!("{}/v1", server.url()),
            "api": "openai-completions", "apiKey": key, "models": [{"id": "m1"}]}}})
        .to_string(),
    );
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider": "mock", "defaultModel": "m1", "retry": {"enabled": false, "provider": {"maxRetries": 0}}}"#,
    );
    let upper = key.to_uppercase();
    let url = "sk-Live%2fAbc%2BDef%3D0123456789xyz";
    let json_escaped = key.replace('/', "\\/");
    let prefix = &key[..14];
    let message = format!(
        "bad key {upper}; query ?key={url}; body {{\"key\":\"{json_escaped}\"}}; shown as {prefix}...9xyz"
    );
    server.push(Reply::status(
        401,
        &json!({"error": {"message": message}}).to_string(),
    ));
    let o = w.pi().args(["run", "-p", "hello"]).output().unwrap();
    status(&o, 1);
    let shown = err(&o);
    let recorded = std::fs::read_to_string(session_file(&w)).unwrap();
    for text in [&shown, &recorded] {
        for form in [key, &upper, url, &json_escaped, prefix, &key[..12]] {
            assert!(!text.contains(form), "{form} in:\n{text}");
        }
    }
    assert!(
        shown.contains(
            "bad key [redacted]; query ?key=[redacted]; body {\"key\":\"[redacted]\"}; shown as [redacted]...9xyz"
        ),
        "{shown}"
    );
}

/// `pi ARGS` run with the usual umask 022.
fn usual(w: &World, args: &[&str]) -> std::process::Output {
    let mut c = assert_cmd::Command::new("sh");
    c.current_dir(w.proj())
        .env_clear()
        .envs(w.envs())
        .arg("-c")
        .arg("umask 022 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args(args);
    c.output().unwrap()
}

/// Every folder from `below` (excluded) down to `path`'s folder is 0700.
fn private_folders(below: &Path, path: &Path) {
    let mut d = path.parent().unwrap();
    while d != below && d.starts_with(below) {
        assert_eq!(mode(d), 0o700, "{}", d.display());
        d = d.parent().unwrap();
    }
}

/// Issue 30: every file pi writes or rewrites (`new --id`, `fork`, `migrate`, `export -o`,
/// the archive of `gc`, also across file systems) is 0600, in 0700 folders, under the
/// usual umask 022.
#[test]
fn every_writer_is_private_under_umask_022() {
    let w = World::new();
    let sessions = w.agent().join("sessions");
    // new --id creates the sessions folders itself (under its lock).
    let o = usual(&w, &["session", "new", "--id", "chosen-id"]);
    status(&o, 0);
    let s = PathBuf::from(out(&o).trim());
    assert_eq!(mode(&s), 0o600);
    assert_eq!(mode(&sessions), 0o700);
    private_folders(&w.agent(), &s);
    w.ok_in(&["session", "append", s.to_str().unwrap()], &user("hello"));
    // fork
    let o = usual(&w, &["session", "fork", s.to_str().unwrap()]);
    status(&o, 0);
    assert_eq!(mode(Path::new(out(&o).trim())), 0o600);
    // migrate: a version 1 file, private, stays private; so does its backup.
    let v1 = w.write(
        "old/v1.jsonl",
        concat!(
            r#"{"type":"session","id":"11111111-2222-3333-4444-555555555555","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/src"}"#,
            "\n",
            r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
            "\n"
        ),
    );
    std::fs::set_permissions(&v1, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = usual(&w, &["session", "migrate", v1.to_str().unwrap()]);
    status(&o, 0);
    assert_eq!(mode(&v1), 0o600);
    assert_eq!(mode(&w.path("old/v1.jsonl.v1.bak")), 0o600);
    // export -o, every format.
    for (format, name) in [("html", "s.html"), ("md", "s.md"), ("jsonl", "s.jsonl")] {
        let o = usual(
            &w,
            &[
                "session",
                "export",
                s.to_str().unwrap(),
                "--format",
                format,
                "-o",
                name,
            ],
        );
        status(&o, 0);
        assert_eq!(mode(&w.proj().join(name)), 0o600, "{format}");
    }
    // gc's archive: new folders 0700, the moved file 0600.
    let empty = PathBuf::from(out(&usual(&w, &["session", "new"])).trim());
    let archive = w.path("archive");
    let o = usual(
        &w,
        &[
            "session",
            "gc",
            "--empty",
            "--archive",
            archive.to_str().unwrap(),
        ],
    );
    status(&o, 0);
    let moved = archive
        .join(empty.parent().unwrap().file_name().unwrap())
        .join(empty.file_name().unwrap());
    assert_eq!(mode(&moved), 0o600);
    assert_eq!(mode(&archive), 0o700);
    private_folders(&archive, &moved);
    // Across file systems the archive is a copy: private too (when /dev/shm is another one).
    use std::os::unix::fs::MetadataExt;
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && std::fs::metadata(shm).unwrap().dev() != std::fs::metadata(w.root()).unwrap().dev()
    {
        let far = tempfile::tempdir_in(shm).unwrap();
        let empty = PathBuf::from(out(&usual(&w, &["session", "new"])).trim());
        let dest = far.path().join("archive");
        let o = usual(
            &w,
            &[
                "session",
                "gc",
                "--empty",
                "--archive",
                dest.to_str().unwrap(),
            ],
        );
        status(&o, 0);
        let moved = dest
            .join(empty.parent().unwrap().file_name().unwrap())
            .join(empty.file_name().unwrap());
        assert!(!empty.exists());
        assert_eq!(mode(&moved), 0o600);
        assert_eq!(mode(&dest), 0o700);
        private_folders(&dest, &moved);
    }
}
