//! Generated session directories for the many-sessions commands (`pi session search`,
//! `pi usage`, `pi session gc`): several projects, a fork, branches, an empty session, usage
//! on several days, months and models. Files are written directly, with fixed timestamps and
//! modification times.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::World;

/// The files of [`populate`].
pub struct Sessions {
    /// Project `proj`: the parser session (two branches, a label, a name).
    pub parser: PathBuf,
    /// Its fork: the first three entries copied, then a new turn.
    pub fork: PathBuf,
    /// A session with no entries.
    pub empty: PathBuf,
    /// Project `other`: two models, a compaction.
    pub other: PathBuf,
    /// Project `other`, a month earlier.
    pub old: PathBuf,
    /// The directory of project `other`.
    pub other_cwd: PathBuf,
}

pub fn session_dir(world: &World, cwd: &Path) -> PathBuf {
    world
        .agent()
        .join("sessions")
        .join(pi_base::config::encode_cwd(&cwd.to_string_lossy()))
}

/// Writes a session file named after `stamp` with the given entries; its modification time
/// is `mtime` (ISO).
pub fn write(
    world: &World,
    cwd: &Path,
    id: &str,
    stamp: &str,
    parent: Option<&Path>,
    entries: &[Value],
    mtime: &str,
) -> PathBuf {
    let dir = session_dir(world, cwd);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}_{id}.jsonl", stamp.replace([':', '.'], "-")));
    let mut header = json!({"type":"session","version":3,"id":id,"timestamp":stamp,"cwd":cwd});
    if let Some(p) = parent {
        header["parentSession"] = json!(p);
    }
    let mut text = header.to_string() + "\n";
    for e in entries {
        text += &e.to_string();
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    set_mtime(&path, mtime);
    path
}

pub fn set_mtime(path: &Path, iso: &str) {
    let ms = pi_base::clock::parse_iso(iso).unwrap();
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

pub fn user(id: &str, parent: Option<&str>, ts: &str, text: &str) -> Value {
    json!({"type":"message","id":id,"parentId":parent,"timestamp":ts,
           "message":{"role":"user","content":text,"timestamp":0}})
}

#[allow(clippy::too_many_arguments)]
pub fn assistant(
    id: &str,
    parent: &str,
    ts: &str,
    content: Value,
    model: (&str, &str),
    tokens: [u64; 4],
    cost: f64,
) -> Value {
    let [input, output, cache_read, cache_write] = tokens;
    json!({"type":"message","id":id,"parentId":parent,"timestamp":ts,
        "message":{"role":"assistant","content":content,"api":"anthropic-messages",
            "provider":model.0,"model":model.1,
            "usage":{"input":input,"output":output,"cacheRead":cache_read,"cacheWrite":cache_write,
                "totalTokens":input + output + cache_read + cache_write,
                "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":cost}},
            "stopReason":"stop","timestamp":0}})
}

pub fn tool_result(id: &str, parent: &str, ts: &str, text: &str) -> Value {
    json!({"type":"message","id":id,"parentId":parent,"timestamp":ts,
        "message":{"role":"toolResult","toolCallId":"call1","toolName":"bash",
            "content":[{"type":"text","text":text}],"isError":false,"timestamp":0}})
}

const SONNET: (&str, &str) = ("anthropic", "claude-sonnet-4-5");
const GPT: (&str, &str) = ("openai", "gpt-5");

/// Writes the sessions described on [`Sessions`].
pub fn populate(world: &World) -> Sessions {
    let proj = world.proj();
    let other_cwd = world.root().join("other");
    std::fs::create_dir_all(&other_cwd).unwrap();
    let other_cwd = std::fs::canonicalize(other_cwd).unwrap();
    let first = vec![
        user(
            "u1",
            None,
            "2025-12-30T10:00:00.000Z",
            "Why does the parser reject trailing commas?",
        ),
        assistant(
            "a1",
            "u1",
            "2025-12-30T10:00:05.000Z",
            json!([
                {"type":"thinking","thinking":"Maybe the tokenizer is too strict."},
                {"type":"text","text":"Let me look at the parser."},
                {"type":"toolCall","id":"call1","name":"bash","arguments":{"command":"grep -n \"trailing\" src/parse.rs"}}
            ]),
            SONNET,
            [1200, 300, 5000, 800],
            0.0123,
        ),
        tool_result(
            "t1",
            "a1",
            "2025-12-30T10:00:06.000Z",
            "42: // trailing commas\tare rejected here",
        ),
    ];
    let mut entries = first.clone();
    entries.extend([
        assistant("a2", "t1", "2025-12-30T10:00:09.000Z", json!([{"type":"text","text":"Line 42 rejects them on purpose."}]), SONNET, [1500, 120, 6000, 0], 0.0087),
        // a second branch from a1
        user("u2", Some("a1"), "2025-12-31T09:00:00.000Z", "Try another way: café ünïcode"),
        assistant("a3", "u2", "2025-12-31T09:00:04.000Z", json!([{"type":"text","text":"Another way to read trailing commas."}]), SONNET, [900, 80, 0, 0], 0.005),
        json!({"type":"label","id":"l1","parentId":"a3","timestamp":"2025-12-31T09:00:05.000Z","targetId":"a3","label":"good answer"}),
        json!({"type":"session_info","id":"n1","parentId":"l1","timestamp":"2025-12-31T09:00:06.000Z","name":"Parser work"}),
    ]);
    let parser = write(
        world,
        &proj,
        "0193a000-0000-7000-8000-000000000001",
        "2025-12-30T10:00:00.000Z",
        None,
        &entries,
        "2025-12-31T09:00:06.000Z",
    );
    let mut fork_entries = first;
    fork_entries.extend([
        user(
            "u3",
            Some("t1"),
            "2026-01-01T12:00:00.000Z",
            "In the fork: allow trailing commas",
        ),
        assistant(
            "a4",
            "u3",
            "2026-01-01T12:00:03.000Z",
            json!([{"type":"text","text":"Done."}]),
            GPT,
            [700, 50, 0, 100],
            0.004,
        ),
    ]);
    let fork = write(
        world,
        &proj,
        "0193a000-0000-7000-8000-000000000002",
        "2026-01-01T12:00:00.000Z",
        Some(&parser),
        &fork_entries,
        "2026-01-01T12:00:03.000Z",
    );
    let empty = write(
        world,
        &proj,
        "0193a000-0000-7000-8000-000000000003",
        "2026-01-01T13:00:00.000Z",
        None,
        &[],
        "2026-01-01T13:00:00.000Z",
    );
    let other = write(
        world,
        &other_cwd,
        "0193a000-0000-7000-8000-000000000004",
        "2025-12-29T08:00:00.000Z",
        None,
        &[
            user(
                "v1",
                None,
                "2025-12-29T08:00:00.000Z",
                "Summarize the build failures",
            ),
            assistant(
                "b1",
                "v1",
                "2025-12-29T08:00:02.000Z",
                json!([{"type":"text","text":"The linker fails."}]),
                GPT,
                [3000, 400, 0, 0],
                0.021,
            ),
            json!({"type":"compaction","id":"c1","parentId":"b1","timestamp":"2025-12-29T08:10:00.000Z","summary":"The build fails in the LINKER step","firstKeptEntryId":"b1","tokensBefore":5000}),
            assistant(
                "b2",
                "c1",
                "2025-12-29T23:30:00.000Z",
                json!([{"type":"text","text":"Fixed."}]),
                SONNET,
                [100, 10, 20000, 0],
                0.0061,
            ),
        ],
        "2025-12-29T23:30:00.000Z",
    );
    let old = write(
        world,
        &other_cwd,
        "0193a000-0000-7000-8000-000000000005",
        "2025-11-15T08:00:00.000Z",
        None,
        &[
            user("w1", None, "2025-11-15T08:00:00.000Z", "An old question"),
            assistant(
                "x1",
                "w1",
                "2025-11-15T08:00:02.000Z",
                json!([{"type":"text","text":"An old answer."}]),
                GPT,
                [10, 20, 0, 0],
                0.0001,
            ),
        ],
        "2025-11-15T08:00:02.000Z",
    );
    Sessions {
        parser,
        fork,
        empty,
        other,
        old,
        other_cwd,
    }
}
