//! `pi session import`

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::cmd::Ctx;
use crate::cmd::args::FormatArgs;
use crate::error::{ExitStatus, usage};
use crate::output::{Style, escape};
use pi_session::import::{self, Conversion, Format, Part, Target, Tokens};

pub const EXIT_STATUS: &str = "\
Exit status:
  0  every source was imported whole (also when nothing was new)
  1  a file was not imported (neither format, unreadable) or lines were skipped
  2  usage error (a PATH that does not exist, -o with several sources, -o - for a
     source with a sidechain)";

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum From {
    Claude,
    Codex,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Session files, or directories scanned for *.jsonl [default: ~/.claude/projects
    /// ($CLAUDE_CONFIG_DIR/projects) and $CODEX_HOME/sessions (~/.codex/sessions)]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The format of the sources [default: detected from each file's content]
    #[arg(long, value_enum, value_name = "AGENT")]
    pub from: Option<From>,
    /// Write the one source's session to FILE (or stdout with -) instead of the sessions
    /// directory; a sidechain of it goes next to FILE (FILE-stem.sidechain.jsonl)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Read and report everything, write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

fn is_jsonl(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "jsonl")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if is_jsonl(&p) {
            out.push(p);
        }
    }
}

/// A subagent's file: Claude Code's `agent-*.jsonl`, or anything below a `subagents/` folder.
fn is_agent_file(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("agent-"))
        || p.components().any(|c| c.as_os_str() == "subagents")
}

/// The `sessionId` of a Claude file's first line that has one.
fn claude_session_id(p: &Path) -> Option<String> {
    use std::io::BufRead;
    let f = std::fs::File::open(p).ok()?;
    for line in std::io::BufReader::new(f).lines().take(20) {
        let line = line.ok()?;
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && let Some(s) = v["sessionId"].as_str()
        {
            return Some(s.to_owned());
        }
    }
    None
}

/// A main Claude file given alone brings its subagents: `<session>/subagents/**/agent-*.jsonl`
/// and, from older versions, `agent-*.jsonl` siblings of the same session.
fn companions(file: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if is_agent_file(file) {
        return out;
    }
    let (Some(dir), Some(stem)) = (file.parent(), file.file_stem()) else {
        return out;
    };
    let mut below = Vec::new();
    walk(&dir.join(stem).join("subagents"), &mut below);
    out.extend(below.into_iter().filter(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("agent-"))
    }));
    let Some(sid) = claude_session_id(file) else {
        return out;
    };
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut sib: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                is_jsonl(p)
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("agent-"))
                    && claude_session_id(p).as_deref() == Some(sid.as_str())
            })
            .collect();
        sib.sort();
        out.extend(sib);
    }
    out
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

/// The agents' own stores.
fn default_roots() -> Vec<PathBuf> {
    let claude = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home().join(".claude"), PathBuf::from);
    let codex = std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home().join(".codex"), PathBuf::from);
    vec![claude.join("projects"), codex.join("sessions")]
}

fn sources(args: &ImportArgs, ctx: &Ctx) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if args.paths.is_empty() {
        for root in default_roots() {
            walk(&root, &mut files);
        }
    }
    for p in &args.paths {
        let p = ctx.cwd.join(p);
        if p.is_dir() {
            walk(&p, &mut files);
        } else if p.is_file() {
            files.push(p.clone());
            if args.output.is_none() && !matches!(args.from, Some(From::Codex)) {
                files.extend(companions(&p));
            }
        } else {
            return Err(usage(format!("{}: no such file or directory", p.display())));
        }
    }
    let mut seen = HashSet::new();
    let mut out: Vec<PathBuf> = Vec::new();
    for f in files {
        let key = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
        if seen.insert(key) {
            out.push(f);
        }
    }
    // Main sessions first, so that their subagents can name them.
    out.sort_by_key(|p| is_agent_file(p));
    Ok(out)
}

fn pricer(
    registry: &pi_ai::models::Registry,
) -> impl Fn(&str, &str, &Tokens) -> Option<import::Cost> {
    move |provider: &str, model: &str, t: &Tokens| {
        let found = registry
            .find(provider, model)
            .map(|m| (m.provider.clone(), m.id.clone()))
            .or_else(|| {
                registry
                    .find("anthropic", model)
                    .map(|m| (m.provider.clone(), m.id.clone()))
            })?;
        let d = registry.details_of(&found.0, &found.1);
        let p = d.prices.for_input(t.input + t.cache_read + t.cache_write);
        let c = |price: f64, n: u64| price / 1_000_000.0 * n as f64;
        Some(import::Cost {
            input: c(p.input, t.input),
            output: c(p.output, t.output),
            cache_read: c(p.cache_read, t.cache_read),
            cache_write: c(p.cache_write, t.cache_write),
        })
    }
}

/// A session id as a file name may hold it.
fn file_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '-'
            } else {
                c
            }
        })
        .collect()
}

/// The sessions of a directory by id (read once per directory): their file, and the
/// source id they were imported from (`importedFrom.id`).
#[derive(Default)]
struct Known(HashMap<PathBuf, HashMap<String, (PathBuf, Option<String>)>>);

fn imported_from(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(f).read_line(&mut line).ok()?;
    let v: Value = serde_json::from_str(&line).ok()?;
    v["importedFrom"]["id"].as_str().map(str::to_owned)
}

impl Known {
    fn map(&mut self, dir: &Path) -> &mut HashMap<String, (PathBuf, Option<String>)> {
        self.0.entry(dir.to_owned()).or_insert_with(|| {
            pi_session::find::jsonl_files(dir)
                .iter()
                .filter_map(|p| pi_session::find::read_header(p))
                .map(|h| {
                    let from = imported_from(&h.path);
                    (h.id, (h.path, from))
                })
                .collect()
        })
    }

    fn get(&mut self, dir: &Path, id: &str) -> Option<PathBuf> {
        self.map(dir).get(id).map(|(p, _)| p.clone())
    }

    /// The session id for a part: its own, unless a session of another source has it.
    fn id_for(&mut self, dir: &Path, part: &Part, source: &Path) -> String {
        let id = file_id(&part.id);
        match self.map(dir).get(&id) {
            Some((_, Some(from))) if *from != part.source_id => {
                let h = source
                    .to_string_lossy()
                    .bytes()
                    .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                    });
                format!("{id}-{:08x}", (h ^ (h >> 32)) as u32)
            }
            _ => id,
        }
    }

    fn add(&mut self, dir: &Path, id: &str, path: &Path, from: &str) {
        self.map(dir)
            .insert(id.to_owned(), (path.to_owned(), Some(from.to_owned())));
    }
}

fn part_record(part: &Part, session: Option<&Path>, status: &str, entries: u64) -> Value {
    let s = &part.stats;
    let usage: BTreeMap<&String, Value> = s
        .usage
        .iter()
        .map(|(k, u)| {
            (
                k,
                json!({
                    "messages": u.messages,
                    "input": u.tokens.input,
                    "output": u.tokens.output,
                    "cacheRead": u.tokens.cache_read,
                    "cacheWrite": u.tokens.cache_write,
                    "cost": u.cost,
                }),
            )
        })
        .collect();
    json!({
        "kind": part.kind.as_str(),
        "session": session,
        "id": part.id,
        "status": status,
        "entries": entries,
        "messages": s.messages,
        "branches": s.branches,
        "compactions": s.compactions,
        "modelChanges": s.model_changes,
        "custom": s.custom,
        "unknown": s.unknown,
        "usage": usage,
    })
}

pub fn run(args: ImportArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let files = sources(&args, ctx)?;
    if args.output.is_some() && files.len() != 1 {
        return Err(usage(format!(
            "-o writes one source, and {} were given",
            files.len()
        )));
    }
    let registry = pi_ai::models::Registry::load(&ctx.dirs.agent_dir);
    let price = pricer(&registry);
    let forced = args.from.map(|f| match f {
        From::Claude => Format::Claude,
        From::Codex => Format::Codex,
    });
    let mut known = Known::default();
    let mut records: Vec<Value> = Vec::new();
    let mut incomplete = false;
    let mut refused = None;
    let to_stdout = args.output.as_deref() == Some(Path::new("-"));
    // Sources are read and converted on all cores, a few ahead of the writes, which happen
    // here one source at a time, in the order of the sources (a subagent's session names its
    // main session's file, and a Codex fork finds its parent among those already written).
    pi_base::par::ordered(
        files.len(),
        pi_base::par::threads_at_most(4),
        |i, _| {
            let abs = std::fs::canonicalize(&files[i]).unwrap_or_else(|_| files[i].clone());
            let conv = import::convert(&abs, forced, &price);
            (abs, conv)
        },
        |_, (abs, conv)| {
            let conv = match conv {
                Ok(c) if to_stdout && c.parts.len() > 1 => {
                    refused = Some(one_stream(&abs, &c));
                    return ControlFlow::Break(());
                }
                Ok(c) => c,
                Err(e) => {
                    incomplete = true;
                    let msg = crate::error::one_line(&e.into());
                    eprintln!("pi: error: {msg}");
                    records.push(
                        json!({"source": abs, "format": Value::Null, "status": "error", "error": msg}),
                    );
                    return ControlFlow::Continue(());
                }
            };
            for s in &conv.skipped {
                crate::error::warn(&format!(
                    "{}:{}: skipped: {}",
                    abs.display(),
                    s.line,
                    s.reason
                ));
            }
            if !conv.skipped.is_empty() {
                incomplete = true;
            }
            match import_one(ctx, &args, &abs, conv, &mut known) {
                Ok(Some(mut r)) => {
                    if args.output.is_some() {
                        left_out(&abs, &args, &mut r);
                    }
                    records.push(r)
                }
                Ok(None) => {}
                Err(e) => {
                    incomplete = true;
                    eprintln!("pi: error: {}", crate::error::one_line(&e));
                    records.push(json!({"source": abs, "status": "error",
                        "error": crate::error::one_line(&e)}));
                }
            }
            ControlFlow::Continue(())
        },
    );
    if let Some(e) = refused {
        return Err(e);
    }
    count_subagents(&mut records);
    if args.output.as_deref() != Some(Path::new("-")) {
        if ctx.out.human(args.format.get()) {
            human(ctx, &records, args.dry_run)?;
        } else {
            for r in &records {
                ctx.out.json(r)?;
            }
        }
    }
    Ok(if incomplete {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// `-o -` holds one session: a source with more is refused, naming what would be lost.
fn one_stream(source: &Path, c: &Conversion) -> anyhow::Error {
    let extra: Vec<String> = c.parts[1..]
        .iter()
        .map(|p| format!("a {} of {} entries", p.kind.as_str(), p.len()))
        .collect();
    usage(format!(
        "{}: -o - writes one session, and this source also holds {}, which would be lost; \
         write it with -o FILE (the rest goes next to FILE) or import it without -o",
        source.display(),
        extra.join(", ")
    ))
}

/// Each record's `subagentSessions`: the sessions (subagents, sidechains) naming its session.
fn count_subagents(records: &mut [Value]) {
    let mut subs: HashMap<String, u64> = HashMap::new();
    for r in records.iter() {
        if let Some(p) = r["parentSession"].as_str() {
            *subs.entry(p.to_owned()).or_insert(0) += 1;
        }
        if let Some(p) = r["session"].as_str() {
            let n = r["sidechains"].as_array().map_or(0, Vec::len) as u64;
            *subs.entry(p.to_owned()).or_insert(0) += n;
        }
    }
    for r in records.iter_mut() {
        if let Some(p) = r["session"].as_str() {
            let n = subs.get(p).copied().unwrap_or(0);
            r["subagentSessions"] = json!(n);
        }
    }
}

fn import_one(
    ctx: &mut Ctx,
    args: &ImportArgs,
    source: &Path,
    conv: Conversion,
    known: &mut Known,
) -> anyhow::Result<Option<Value>> {
    let Conversion {
        format,
        mut parts,
        skipped,
        repairs,
    } = conv;
    let mut rec = json!({
        "source": source,
        "format": format.as_str(),
        "skipped": skipped.iter().map(|s| json!({"line": s.line, "reason": s.reason})).collect::<Vec<_>>(),
        "repairs": repairs.iter().map(|r| json!({"line": r.line, "kind": r.kind, "uuid": r.uuid})).collect::<Vec<_>>(),
    });
    let mut main_path: Option<PathBuf> = None;
    let mut sidechains = Vec::new();
    for (k, part) in parts.iter_mut().enumerate() {
        let cwd = part.cwd.clone().unwrap_or_else(|| ctx.cwd_str());
        let dir = ctx.dirs.session_dir_for(&cwd);
        let parent_session: Option<PathBuf> = match (&part.parent_id, k) {
            (Some(_), 1..) => main_path.clone(),
            (Some(pid), 0) => known
                .get(&dir, &file_id(pid))
                .or_else(|| known.get(&dir, pid)),
            _ => None,
        };
        let parent_str = parent_session
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned());
        if args.output.is_none() {
            let id = known.id_for(&dir, part, source);
            part.id = id;
        }
        let header = import::header_line(part, format, source, &cwd, parent_str.as_deref());
        let (path, status, entries) = match (&args.output, k) {
            // With -o FILE, a sidechain of the source goes next to FILE, named after it.
            (Some(out), 1..) => {
                let beside = beside(&ctx.cwd.join(out), part.kind.as_str(), k);
                place(ctx, Some(&beside), args.dry_run, part, &header, &dir, known)?
            }
            _ => place(
                ctx,
                args.output.as_deref(),
                args.dry_run,
                part,
                &header,
                &dir,
                known,
            )?,
        };
        let mut r = part_record(part, path.as_deref(), status, entries);
        if let Some(p) = &parent_str {
            r["parentSession"] = json!(p);
        }
        if k == 0 {
            main_path = path.clone();
            if let (Some(o), Some(m)) = (rec.as_object_mut(), r.as_object()) {
                for (key, v) in m {
                    o.insert(key.clone(), v.clone());
                }
            }
        } else {
            sidechains.push(r);
        }
    }
    if !sidechains.is_empty() {
        rec["sidechains"] = json!(sidechains);
    }
    Ok(Some(rec))
}

/// Where `-o FILE` puts a source's other part: `FILE`'s name with `.sidechain` (or the
/// part's kind) before its extension, numbered past the first.
fn beside(file: &Path, kind: &str, k: usize) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = file
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let n = if k > 1 {
        format!("-{k}")
    } else {
        String::new()
    };
    file.with_file_name(format!("{stem}.{kind}{n}{ext}"))
}

/// With -o, a main Claude file's subagent files are not imported (-o takes one source):
/// the record lists them, and a warning says how to bring them.
fn left_out(source: &Path, args: &ImportArgs, r: &mut Value) {
    if matches!(args.from, Some(From::Codex)) {
        return;
    }
    let agents = companions(source);
    if agents.is_empty() {
        return;
    }
    crate::error::warn(&format!(
        "{}: -o imports this file alone; its {} subagent file(s) are not imported \
         (import it without -o to bring them)",
        source.display(),
        agents.len()
    ));
    r["notImported"] = json!(
        agents
            .iter()
            .map(|p| json!({"source": p, "reason": "subagent file (-o imports one source)"}))
            .collect::<Vec<_>>()
    );
}

/// Writes a part where it goes (or, with --dry-run, counts what would be written):
/// (session file, status, entries).
fn place(
    ctx: &Ctx,
    output: Option<&Path>,
    dry_run: bool,
    part: &mut Part,
    header: &[u8],
    dir: &Path,
    known: &mut Known,
) -> anyhow::Result<(Option<PathBuf>, &'static str, u64)> {
    if let Some(out) = output {
        if out == Path::new("-") {
            let mut stdout = std::io::stdout().lock();
            let n = import::write_part(part, header, Target::Stream(&mut stdout))?;
            return Ok((None, "written", n));
        }
        let out = ctx.cwd.join(out);
        return Ok(if dry_run {
            let n = if out.exists() {
                import::missing(part, &out)?
            } else {
                part.len() as u64
            };
            (Some(out), "dry-run", n)
        } else if out.exists() {
            let n = import::write_part(part, header, Target::Existing(&out))?;
            (Some(out), if n == 0 { "unchanged" } else { "appended" }, n)
        } else {
            let n = import::write_part(part, header, Target::New(&out))?;
            (Some(out), "created", n)
        });
    }
    let id = part.id.clone();
    if let Some(existing) = known.get(dir, &id) {
        return Ok(if dry_run {
            let n = import::missing(part, &existing)?;
            (Some(existing), "dry-run", n)
        } else {
            let n = import::write_part(part, header, Target::Existing(&existing))?;
            (
                Some(existing),
                if n == 0 { "unchanged" } else { "appended" },
                n,
            )
        });
    }
    let path = dir.join(format!(
        "{}_{id}.jsonl",
        pi_base::clock::file_stamp(part.start_ms)
    ));
    if dry_run {
        let n = part.len() as u64;
        return Ok((Some(path), "dry-run", n));
    }
    let n = import::write_part(part, header, Target::New(&path))?;
    known.add(dir, &id, &path, &part.source_id);
    Ok((Some(path), "created", n))
}

fn human(ctx: &mut Ctx, records: &[Value], dry: bool) -> std::io::Result<()> {
    let st = Style {
        on: ctx.out.color(),
    };
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    for r in records {
        let status = r["status"].as_str().unwrap_or("");
        let status_s = match status {
            "error" => st.red(&format!("{status:<9}")),
            "created" | "appended" => st.green(&format!("{status:<9}")),
            _ => st.dim(&format!("{status:<9}")),
        };
        let src = escape(r["source"].as_str().unwrap_or(""));
        if status == "error" {
            let line = format!(
                "{status_s} {src}\n          {}",
                r["error"].as_str().unwrap_or("")
            );
            ctx.out.line(line.as_bytes())?;
            continue;
        }
        let m = &r["messages"];
        let line = format!(
            "{status_s} {:>5} entries  {:>4} user {:>4} assistant {:>4} tool  {} branch{}  {}\n          → {}",
            n(&r["entries"]),
            n(&m["user"]),
            n(&m["assistant"]),
            n(&m["toolResult"]),
            n(&r["branches"]),
            if n(&r["branches"]) == 1 { "" } else { "es" },
            src,
            escape(r["session"].as_str().unwrap_or("-")),
        );
        ctx.out.line(line.as_bytes())?;
        let skipped = r["skipped"].as_array().map_or(0, Vec::len);
        if skipped > 0 {
            ctx.out.line(
                st.yellow(&format!("          {skipped} line(s) skipped"))
                    .as_bytes(),
            )?;
        }
    }
    let total = records.len();
    let errors = records.iter().filter(|r| r["status"] == "error").count();
    let mut sum = format!(
        "{total} source{}, {errors} not imported",
        if total == 1 { "" } else { "s" }
    );
    if dry {
        sum.push_str(" (dry run: nothing written)");
    }
    ctx.out.line(st.bold(&sum).as_bytes())
}
