//! Claude Code transcripts (`~/.claude/projects/<dir>/<session>.jsonl`, subagents'
//! `agent-*.jsonl`).
//!
//! Two passes over the file. The first keeps a small record per line (kind, uuid, parent,
//! message id, offset) and rebuilds the conversation tree from it: the lines of one streamed
//! message fold into one assistant message, tool results chain after the message that
//! called them (so that parallel calls are not forks), structural lines (progress,
//! attachments, hook output, system notes) are spliced out of the tree and kept as `custom`
//! entries, a `compact_boundary` continues from its logical parent, and dangling parents,
//! duplicate uuids and cycles are repaired. The second pass reads the lines again and writes
//! the entries.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufReader, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::{
    Builder, Conversion, Format, Lines, Part, PartKind, Pricer, Repair, Skipped, Tokens, norm_ts,
    parse_line, to_vec,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum K {
    User,
    ToolResult,
    Assistant,
    Boundary,
    /// The user line holding a compaction's summary.
    Summary,
    /// Has a uuid, not part of the conversation.
    Structural,
    /// No uuid (titles, snapshots, …).
    Meta,
    /// A line type this importer does not know.
    Unknown,
    /// An unparsable line (skipped).
    Bad,
}

struct Node {
    line: u64,
    offset: u64,
    len: u32,
    kind: K,
    uuid: Option<Box<str>>,
    parent: Option<Box<str>>,
    msg: Option<Box<str>>,
    side: bool,
    /// The model of an assistant line.
    model: Option<Box<str>>,
    /// Entries a tool-result line becomes.
    n_out: u32,
    /// The line's time (epoch ms; 0 when it has none).
    ts: i64,
    /// A user line with `isMeta` (Claude Code's local-command caveat, …).
    meta_user: bool,
    /// What a partial compaction's boundary keeps (`compactMetadata.preservedSegment` /
    /// `preservedMessages`).
    preserved: Option<Box<Preserved>>,
}

/// The messages a partial compaction keeps: their uuids in order (head first), and the line
/// they were re-attached under (the summary).
struct Preserved {
    uuids: Vec<Box<str>>,
    anchor: Option<Box<str>>,
    /// Whether `uuids` lists every kept message (`preservedMessages`), or only the segment's
    /// head and tail.
    listed: bool,
}

fn preserved(m: &Map<String, Value>) -> Option<Box<Preserved>> {
    let meta = m.get("compactMetadata")?;
    let seg = &meta["preservedSegment"];
    let msgs = &meta["preservedMessages"];
    let mut uuids: Vec<Box<str>> = msgs["uuids"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(Box::from).collect())
        .unwrap_or_default();
    let listed = !uuids.is_empty();
    if uuids.is_empty() {
        uuids.extend(seg["headUuid"].as_str().map(Box::from));
        if let Some(t) = seg["tailUuid"].as_str()
            && uuids.first().is_none_or(|h| &**h != t)
        {
            uuids.push(Box::from(t));
        }
    }
    if uuids.is_empty() {
        return None;
    }
    let anchor = s(seg.get("anchorUuid")).or_else(|| s(msgs.get("anchorUuid")));
    Some(Box::new(Preserved {
        uuids,
        anchor,
        listed,
    }))
}

const KNOWN: &[&str] = &[
    "user",
    "assistant",
    "system",
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "attachment",
    "custom-title",
    "ai-title",
    "agent-name",
    "last-prompt",
    "permission-mode",
    "pr-link",
    "worktree-state",
    "tag",
    "agent-setting",
    "mode",
];

fn s(v: Option<&Value>) -> Option<Box<str>> {
    v.and_then(Value::as_str).map(Box::from)
}

fn line_type(m: &Map<String, Value>) -> &str {
    match m.get("type").and_then(Value::as_str) {
        Some(t) => t,
        // The oldest transcripts name only the message's role.
        None => m
            .get("message")
            .and_then(|x| x.get("role"))
            .and_then(Value::as_str)
            .unwrap_or(""),
    }
}

fn classify(m: &Map<String, Value>, has_uuid: bool) -> K {
    let ty = line_type(m);
    let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    match ty {
        "user" if has_uuid => {
            if flag("isCompactSummary") {
                K::Summary
            } else if flag("isMeta") || flag("isVisibleInTranscriptOnly") {
                K::Structural
            } else if m
                .get("message")
                .and_then(|x| x.get("content"))
                .and_then(Value::as_array)
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
            {
                K::ToolResult
            } else {
                K::User
            }
        }
        "assistant" if has_uuid && m.get("message").is_some_and(Value::is_object) => K::Assistant,
        "system"
            if has_uuid && m.get("subtype").and_then(Value::as_str) == Some("compact_boundary") =>
        {
            K::Boundary
        }
        t if KNOWN.contains(&t) => {
            if has_uuid {
                K::Structural
            } else {
                K::Meta
            }
        }
        _ => K::Unknown,
    }
}

fn is_conversation(k: K) -> bool {
    matches!(k, K::User | K::ToolResult | K::Assistant | K::Boundary)
}

/// An assistant line without a message id: its parent, and the key of its message.
type NoId = (Option<Box<str>>, Box<str>);

/// The first pass: a small record per line, and what the file says about itself.
#[derive(Default)]
struct Scan {
    nodes: Vec<Node>,
    skipped: Vec<Skipped>,
    session_id: Option<String>,
    agent_id: Option<String>,
    cwd: Option<String>,
    start_ms: Option<i64>,
    /// The last line of a message without a uuid (the oldest transcripts).
    prev_synthetic: Option<Box<str>>,
    /// The last message line, of the main thread and of the sidechain.
    prev_conv: [Option<Box<str>>; 2],
    /// Message lines with no parent chained to the line before them.
    chained: Vec<u64>,
    /// The last message line without a message id (its parent, its message key), per thread.
    prev_noid: [Option<NoId>; 2],
}

fn first_str(slot: &mut Option<String>, m: &Map<String, Value>, key: &str) {
    if slot.is_none() {
        *slot = m.get(key).and_then(Value::as_str).map(str::to_owned);
    }
}

/// How many entries a tool-result line becomes: one per result, and one for other blocks.
fn result_entries(message: Option<&Value>) -> u32 {
    let c = message
        .and_then(|x| x.get("content"))
        .and_then(Value::as_array);
    let results = c.map_or(0, |c| {
        c.iter().filter(|b| b["type"] == "tool_result").count()
    });
    let other = c.is_some_and(|c| c.iter().any(|b| b["type"] != "tool_result"));
    results as u32 + u32::from(other)
}

impl Scan {
    fn line(&mut self, line: u64, offset: u64, buf: &[u8]) {
        let len = buf.len() as u32;
        let m = match parse_line(buf) {
            None => return,
            Some(Err(reason)) => {
                self.skipped.push(Skipped { line, reason });
                self.nodes.push(Node {
                    line,
                    offset,
                    len,
                    kind: K::Bad,
                    uuid: None,
                    parent: None,
                    msg: None,
                    side: false,
                    model: None,
                    n_out: 0,
                    ts: 0,
                    meta_user: false,
                    preserved: None,
                });
                return;
            }
            Some(Ok(m)) => m,
        };
        first_str(&mut self.session_id, &m, "sessionId");
        first_str(&mut self.agent_id, &m, "agentId");
        first_str(&mut self.cwd, &m, "cwd");
        if self.start_ms.is_none() {
            self.start_ms = m.get("timestamp").and_then(norm_ts).map(|t| t.1);
        }
        let node = self.node(&m, line, offset, len);
        self.nodes.push(node);
    }

    fn node(&mut self, m: &Map<String, Value>, line: u64, offset: u64, len: u32) -> Node {
        let ty = line_type(m);
        let has_uuid = m.get("uuid").and_then(Value::as_str).is_some();
        // Lines of user or assistant messages without uuids (the oldest transcripts) form
        // a chain in file order.
        let synthetic = matches!(ty, "user" | "assistant")
            && !has_uuid
            && m.get("message").is_some_and(Value::is_object);
        let kind = classify(m, synthetic || has_uuid);
        let message = m.get("message");
        let side = m.get("isSidechain").and_then(Value::as_bool) == Some(true);
        let mut parent = if synthetic {
            self.prev_synthetic.take()
        } else if kind == K::Boundary {
            s(m.get("logicalParentUuid")).or_else(|| s(m.get("parentUuid")))
        } else {
            s(m.get("parentUuid"))
        };
        // A message line with no parent after the conversation began (test data, or
        // `/branch` in some versions) continues from the line before it.
        if parent.is_none()
            && matches!(kind, K::User | K::Assistant | K::ToolResult)
            && let Some(prev) = &self.prev_conv[usize::from(side)]
        {
            parent = Some(prev.clone());
            self.chained.push(line);
        }
        let uuid = if synthetic {
            let u: Box<str> = Box::from(format!("L{line}"));
            self.prev_synthetic = Some(u.clone());
            Some(u)
        } else {
            s(m.get("uuid"))
        };
        if is_conversation(kind) {
            self.prev_conv[usize::from(side)] = uuid.clone();
        }
        let msg = (kind == K::Assistant).then(|| {
            s(message.and_then(|x| x.get("id"))).unwrap_or_else(|| {
                // Lines of one response written without a message id, each hung off the
                // same parent (test data, gateways): one message, not a fork per block.
                match &self.prev_noid[usize::from(side)] {
                    Some((p, key)) if !synthetic && *p == parent => key.clone(),
                    _ => Box::from(format!("L{line}")),
                }
            })
        });
        if is_conversation(kind) {
            let noid =
                kind == K::Assistant && !synthetic && message.and_then(|x| x.get("id")).is_none();
            self.prev_noid[usize::from(side)] = match (&msg, noid) {
                (Some(k), true) => Some((parent.clone(), k.clone())),
                _ => None,
            };
        }
        Node {
            line,
            offset,
            len,
            kind,
            uuid,
            parent,
            msg,
            side,
            model: if kind == K::Assistant {
                s(message.and_then(|x| x.get("model")))
            } else {
                None
            },
            n_out: if kind == K::ToolResult {
                result_entries(message)
            } else {
                1
            },
            ts: m.get("timestamp").and_then(norm_ts).map_or(0, |t| t.1),
            meta_user: kind == K::Structural
                && ty == "user"
                && m.get("isMeta").and_then(Value::as_bool) == Some(true),
            preserved: if kind == K::Boundary {
                preserved(m)
            } else {
                None
            },
        }
    }
}

pub(super) fn convert(path: &Path, price: Pricer<'_>) -> io::Result<Conversion> {
    let file = File::open(path)?;
    let mut lines = Lines::new(BufReader::with_capacity(1 << 16, file.try_clone()?));
    let mut scan = Scan::default();
    while lines.next_line()? {
        scan.line(lines.number, lines.offset, &lines.buf);
    }
    let nodes = std::mem::take(&mut scan.nodes);
    let mut ctx = Ctx {
        file,
        nodes: &nodes,
        price,
        repairs: scan
            .chained
            .iter()
            .map(|&line| Repair {
                line,
                kind: "null-parent",
                uuid: String::new(),
            })
            .collect(),
        all: nodes.iter().filter_map(|n| n.uuid.as_deref()).collect(),
    };
    let parts = ctx.parts(path, &scan)?;
    Ok(Conversion {
        format: Format::Claude,
        parts,
        skipped: scan.skipped,
        repairs: ctx.repairs,
    })
}

struct Ctx<'a, 'p> {
    file: File,
    nodes: &'a [Node],
    price: Pricer<'p>,
    repairs: Vec<Repair>,
    all: HashSet<&'a str>,
}

const NONE: u32 = u32::MAX;

/// The conversation tree of one thread.
struct Tree {
    sel: Vec<bool>,
    dup: Vec<bool>,
    /// The line each line is folded into (itself if none).
    alias: Vec<u32>,
    /// The lines of each streamed message, by its first line.
    members: HashMap<u32, Vec<u32>>,
    /// A compaction boundary's summary line.
    summary_of: HashMap<u32, u32>,
    /// The parent line of each entry-making line.
    parent: Vec<u32>,
    /// A partial compaction's boundary → the first line it keeps (the preserved head).
    first_kept: HashMap<u32, u32>,
    /// Parents set by the import instead of the line's own (a partial compaction's
    /// preserved segment re-linked in order, what follows it continued after the boundary).
    relinked: HashMap<u32, Box<str>>,
}

impl Tree {
    /// Whether line `i` becomes entries of the conversation (its first line, for a message).
    fn head(&self, nodes: &[Node], i: usize) -> bool {
        self.sel[i] && !self.dup[i] && is_conversation(nodes[i].kind) && self.alias[i] == i as u32
    }

    fn folded(&self, i: usize) -> bool {
        self.alias[i] != i as u32
    }
}

/// The ids each line's entries get.
struct Ids {
    first: Vec<Option<String>>,
    last: Vec<Option<String>>,
    /// All ids of a tool-result line that becomes several entries.
    more: HashMap<usize, Vec<String>>,
    /// The model a message switches to (its first id is then the `model_change` entry's).
    model_change: Vec<Option<String>>,
}

impl<'a, 'p> Ctx<'a, 'p> {
    fn read(&self, i: usize) -> io::Result<Map<String, Value>> {
        let n = &self.nodes[i];
        let mut buf = vec![0u8; n.len as usize];
        self.file.read_exact_at(&mut buf, n.offset)?;
        match parse_line(&buf) {
            Some(Ok(m)) => Ok(m),
            _ => Ok(Map::new()),
        }
    }

    /// The parts of the file: its main thread, a sidechain thread, or a subagent's.
    fn parts(&mut self, path: &Path, scan: &Scan) -> io::Result<Vec<Part>> {
        let nodes = self.nodes;
        let has_main = nodes.iter().any(|n| is_conversation(n.kind) && !n.side);
        let has_side = nodes.iter().any(|n| is_conversation(n.kind) && n.side);
        // A main session is named after its file (Claude Code names the file after the
        // session; a resumed session's file starts with copies of the earlier session's
        // lines, under that session's id).
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sid = scan.session_id.clone().unwrap_or_else(|| stem.clone());
        let start = scan.start_ms.unwrap_or(0);
        let cwd = scan.cwd.clone();
        let mut parts = Vec::new();
        if has_main {
            let b = self.thread(|n| !n.side || n.uuid.is_none())?;
            parts.push(b.finish(
                stem.clone(),
                sid.clone(),
                PartKind::Main,
                cwd.clone(),
                start,
                None,
            ));
            if has_side {
                let b = self.thread(|n| n.side)?;
                let id = format!("{stem}-sidechain");
                parts.push(b.finish(id, sid, PartKind::Sidechain, cwd, start, Some(stem)));
            }
            return Ok(parts);
        }
        let b = self.thread(|_| true)?;
        if has_side || stem.starts_with("agent-") {
            let agent = scan
                .agent_id
                .clone()
                .unwrap_or_else(|| stem.trim_start_matches("agent-").to_owned());
            let id = format!("{sid}-agent-{agent}");
            parts.push(b.finish(id, sid.clone(), PartKind::Subagent, cwd, start, Some(sid)));
        } else {
            parts.push(b.finish(stem, sid, PartKind::Main, cwd, start, None));
        }
        Ok(parts)
    }

    /// Converts the lines `keep` selects into one part.
    fn thread(&mut self, keep: impl Fn(&Node) -> bool) -> io::Result<Builder<'p>> {
        let tree = self.tree(keep)?;
        let mut b = Builder::new(Format::Claude, self.price)?;
        let ids = self.ids(&tree, &mut b);
        self.emit(&tree, ids, &mut b)?;
        Ok(b)
    }

    fn tree(&mut self, keep: impl Fn(&Node) -> bool) -> io::Result<Tree> {
        let nodes = self.nodes;
        let sel: Vec<bool> = nodes.iter().map(|x| x.kind != K::Bad && keep(x)).collect();
        let (by_uuid, dup) = self.index(&sel);
        let mut tree = Tree {
            alias: (0..nodes.len() as u32).collect(),
            sel,
            dup,
            members: HashMap::new(),
            summary_of: HashMap::new(),
            parent: Vec::new(),
            first_kept: HashMap::new(),
            relinked: HashMap::new(),
        };
        fold(nodes, &by_uuid, &mut tree);
        partial_compactions(nodes, &by_uuid, &mut tree);
        let kp = self.kept_parents(&by_uuid, &mut tree)?;
        tree.parent = chain_results(nodes, &tree, &kp);
        self.break_cycles(&mut tree);
        Ok(tree)
    }

    /// uuid → line (the first line with it; later ones are duplicates, reported).
    fn index(&mut self, sel: &[bool]) -> (HashMap<&'a str, u32>, Vec<bool>) {
        let nodes = self.nodes;
        let mut by_uuid: HashMap<&str, u32> = HashMap::new();
        let mut dup = vec![false; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            let Some(u) = n.uuid.as_deref().filter(|_| sel[i]) else {
                continue;
            };
            if by_uuid.contains_key(u) {
                dup[i] = true;
                self.repairs.push(Repair {
                    line: n.line,
                    kind: "duplicate-uuid",
                    uuid: u.to_owned(),
                });
            } else {
                by_uuid.insert(u, i as u32);
            }
        }
        (by_uuid, dup)
    }

    /// The nearest kept ancestor of each message line (structural lines spliced out); a
    /// parent in no line of the file is reported. Recording artifacts are folded on the way:
    /// a local command hung off the caveat line an earlier one already hangs off continues
    /// from the line before it, and a line repeating an earlier sibling (same parent, same
    /// time, same content: a replay with a new uuid) is folded into it.
    fn kept_parents(&mut self, by_uuid: &HashMap<&str, u32>, t: &mut Tree) -> io::Result<Vec<u32>> {
        let nodes = self.nodes;
        let n = nodes.len();
        let mut kp = vec![NONE; n];
        // Children seen so far of each caveat (isMeta user) line.
        let mut meta_kids: HashMap<u32, u32> = HashMap::new();
        // The heads under each parent, by time (replay candidates).
        let mut siblings: HashMap<(u32, i64), Vec<u32>> = HashMap::new();
        // The latest conversation line so far, in file order.
        let mut last_conv = NONE;
        for i in 0..n {
            if !t.head(nodes, i) {
                if t.sel[i] && !t.dup[i] && is_conversation(nodes[i].kind) {
                    last_conv = t.alias[i];
                }
                continue;
            }
            let own = t
                .relinked
                .get(&(i as u32))
                .map(|p| &**p)
                .or(nodes[i].parent.as_deref());
            let via_meta = own
                .and_then(|u| by_uuid.get(u))
                .copied()
                .filter(|&j| nodes[j as usize].meta_user);
            let later_kid = via_meta.is_some_and(|j| {
                let seen = meta_kids.entry(j).or_insert(0);
                *seen += 1;
                *seen > 1
            });
            kp[i] = if later_kid && nodes[i].kind == K::User && last_conv != NONE {
                last_conv
            } else {
                self.ancestor(by_uuid, t, i, own)
            };
            if matches!(nodes[i].kind, K::User | K::ToolResult) && nodes[i].ts != 0 {
                let key = (kp[i], nodes[i].ts);
                let mut same = None;
                for &o in siblings.get(&key).map_or(&[][..], Vec::as_slice) {
                    if nodes[o as usize].kind == nodes[i].kind
                        && self.same_content(o as usize, i)?
                    {
                        same = Some(o);
                        break;
                    }
                }
                if let Some(o) = same {
                    t.alias[i] = o;
                    self.repairs.push(Repair {
                        line: nodes[i].line,
                        kind: "replay",
                        uuid: nodes[i].uuid.as_deref().unwrap_or("").to_owned(),
                    });
                    last_conv = o;
                    kp[i] = NONE;
                    continue;
                }
                siblings.entry(key).or_default().push(i as u32);
            }
            last_conv = i as u32;
        }
        Ok(kp)
    }

    /// The nearest kept ancestor of line `i`, starting from parent uuid `p`.
    fn ancestor<'t>(
        &mut self,
        by_uuid: &HashMap<&str, u32>,
        t: &'t Tree,
        i: usize,
        mut p: Option<&'t str>,
    ) -> u32
    where
        'a: 't,
    {
        let nodes = self.nodes;
        let n = nodes.len();
        let is_kept = |j: usize| {
            (t.sel[j] && !t.dup[j] && is_conversation(nodes[j].kind))
                || (nodes[j].kind == K::Summary && t.folded(j))
        };
        let mut steps = 0;
        loop {
            let Some(u) = p else { return NONE };
            let Some(&j) = by_uuid.get(u) else {
                if !self.all.contains(u) {
                    self.repairs.push(Repair {
                        line: nodes[i].line,
                        kind: "dangling-parent",
                        uuid: u.to_owned(),
                    });
                }
                return NONE;
            };
            let j = j as usize;
            if is_kept(j) {
                let a = t.alias[j];
                return if a as usize == i { NONE } else { a };
            }
            steps += 1;
            if steps > n {
                return NONE;
            }
            p = t
                .relinked
                .get(&(j as u32))
                .map(|p| &**p)
                .or(nodes[j].parent.as_deref());
        }
    }

    /// Whether two lines carry the same message content.
    fn same_content(&self, a: usize, b: usize) -> io::Result<bool> {
        let (x, y) = (self.read(a)?, self.read(b)?);
        Ok(message(&x)["content"] == message(&y)["content"])
    }

    /// Cycles are broken at their latest line, which becomes a root.
    fn break_cycles(&mut self, t: &mut Tree) {
        let nodes = self.nodes;
        let mut state = vec![0u8; nodes.len()];
        for i in 0..nodes.len() {
            if state[i] != 0 || !t.head(nodes, i) {
                continue;
            }
            let mut path = Vec::new();
            let mut j = i as u32;
            while j != NONE && state[j as usize] != 2 {
                if state[j as usize] == 1 {
                    let start = path.iter().position(|&x| x == j).unwrap_or(0);
                    if let Some(&latest) = path[start..]
                        .iter()
                        .max_by_key(|&&x| nodes[x as usize].line)
                    {
                        let l = latest as usize;
                        t.parent[l] = NONE;
                        self.repairs.push(Repair {
                            line: nodes[l].line,
                            kind: "cycle",
                            uuid: nodes[l].uuid.as_deref().unwrap_or("").to_owned(),
                        });
                    }
                    break;
                }
                state[j as usize] = 1;
                path.push(j);
                j = t.parent[j as usize];
            }
            for x in path {
                state[x as usize] = 2;
            }
        }
    }

    /// Ids in line order: the first and last entry of each line.
    fn ids(&self, t: &Tree, b: &mut Builder<'_>) -> Ids {
        let nodes = self.nodes;
        let n = nodes.len();
        let mut ids = Ids {
            first: vec![None; n],
            last: vec![None; n],
            more: HashMap::new(),
            model_change: vec![None; n],
        };
        let mut prev_model: Option<String> = None;
        for i in 0..n {
            if !t.head(nodes, i) {
                continue;
            }
            let u = nodes[i].uuid.as_deref().unwrap_or("");
            if nodes[i].kind == K::Assistant {
                let model = nodes[i].model.as_deref().unwrap_or("");
                if !model.is_empty() && model != "<synthetic>" {
                    if prev_model.as_deref().is_some_and(|p| p != model) {
                        ids.model_change[i] = Some(model.to_owned());
                        ids.first[i] = Some(b.id_for(&format!("model:{u}")));
                    }
                    prev_model = Some(model.to_owned());
                }
            }
            let id = b.id_for(u);
            if ids.first[i].is_none() {
                ids.first[i] = Some(id.clone());
            }
            let mut last = id.clone();
            if nodes[i].n_out > 1 {
                let mut all = vec![id];
                for k in 1..nodes[i].n_out {
                    last = b.id_for(&format!("{u}#{k}"));
                    all.push(last.clone());
                }
                ids.more.insert(i, all);
            }
            ids.last[i] = Some(last);
        }
        ids
    }

    /// The second pass: the entries, in line order.
    fn emit(&self, t: &Tree, mut ids: Ids, b: &mut Builder<'_>) -> io::Result<()> {
        let nodes = self.nodes;
        let n = nodes.len();
        let mut e = Emit {
            tool_names: HashMap::new(),
            last_ts: String::new(),
        };
        let mut f = self.file.try_clone()?;
        f.seek(SeekFrom::Start(0))?;
        let mut lines = Lines::new(BufReader::with_capacity(1 << 16, f));
        let mut k = 0usize;
        while lines.next_line()? {
            while k < n && nodes[k].line < lines.number {
                k += 1;
            }
            if k >= n || nodes[k].line != lines.number || !t.sel[k] {
                continue;
            }
            let Some(Ok(m)) = parse_line(&lines.buf) else {
                continue;
            };
            let ts = match m.get("timestamp").and_then(norm_ts) {
                Some((ts, _)) => ts,
                None => e.last_ts.clone(),
            };
            e.last_ts.clone_from(&ts);
            let parent = (t.parent.get(k).copied().unwrap_or(NONE) != NONE)
                .then(|| ids.last[t.parent[k] as usize].clone())
                .flatten();
            if t.head(nodes, k) {
                let first = ids.first[k].clone().unwrap_or_default();
                let more = ids.more.remove(&k).unwrap_or_else(|| vec![first.clone()]);
                let last = ids.last[k].clone().unwrap_or_default();
                let line = Line {
                    i: k,
                    m,
                    ts,
                    parent,
                    first,
                    last,
                    more,
                };
                self.entry(t, &ids, line, &mut e, b)?;
            } else if !(t.folded(k)) {
                custom(nodes, t, k, m, &ts, b)?;
            }
        }
        Ok(())
    }

    fn entry(
        &self,
        t: &Tree,
        ids: &Ids,
        l: Line,
        e: &mut Emit,
        b: &mut Builder<'_>,
    ) -> io::Result<()> {
        let ms = pi_base::clock::parse_iso(&l.ts).unwrap_or(0);
        match self.nodes[l.i].kind {
            K::User => {
                let content = user_content(&message(&l.m)["content"]);
                let msg = json!({"role": "user", "content": content, "timestamp": ms});
                b.message(&l.first, l.parent.as_deref(), &l.ts, &msg)
            }
            K::ToolResult => results(&l, ms, e, b),
            K::Assistant => {
                let mut lines_of = Vec::new();
                for &j in t.members.get(&(l.i as u32)).map_or(&[][..], Vec::as_slice) {
                    if j as usize == l.i {
                        lines_of.push(l.m.clone());
                    } else {
                        lines_of.push(self.read(j as usize)?);
                    }
                }
                let msg = assistant(&lines_of, ms, b);
                for blk in msg["content"].as_array().map_or(&[][..], Vec::as_slice) {
                    if let (Some(id), Some(name)) = (blk["id"].as_str(), blk["name"].as_str()) {
                        e.tool_names.insert(id.to_owned(), name.to_owned());
                    }
                }
                let mut p = l.parent.clone();
                if let Some(model) = &ids.model_change[l.i] {
                    let provider = msg["provider"].as_str().unwrap_or("anthropic").to_owned();
                    let fields = [
                        ("provider", to_vec(&json!(provider))),
                        ("modelId", to_vec(&json!(model))),
                    ];
                    b.entry("model_change", &l.first, p.as_deref(), &l.ts, &fields)?;
                    p = Some(l.first.clone());
                }
                b.message(&l.last, p.as_deref(), &l.ts, &msg)
            }
            K::Boundary => {
                let summary = match t.summary_of.get(&(l.i as u32)) {
                    Some(&sidx) => text_of(&message(&self.read(sidx as usize)?)["content"]),
                    None => {
                        l.m.get("content")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned()
                    }
                };
                let meta = l.m.get("compactMetadata").cloned().unwrap_or(Value::Null);
                let before = meta["preTokens"].as_u64().unwrap_or(0);
                // A partial compaction keeps its preserved segment; a full one nothing
                // before it (its own id is on no earlier path).
                let first_kept = t
                    .first_kept
                    .get(&(l.i as u32))
                    .and_then(|&h| ids.first[h as usize].clone())
                    .unwrap_or_else(|| l.first.clone());
                let fields = [
                    ("summary", to_vec(&json!(summary))),
                    ("firstKeptEntryId", to_vec(&json!(first_kept))),
                    ("tokensBefore", to_vec(&json!(before))),
                    ("details", to_vec(&json!({"compactMetadata": meta}))),
                    ("fromHook", b"false".to_vec()),
                ];
                b.entry("compaction", &l.first, l.parent.as_deref(), &l.ts, &fields)
            }
            _ => Ok(()),
        }
    }
}

/// One entry-making line in the second pass.
struct Line {
    i: usize,
    m: Map<String, Value>,
    ts: String,
    parent: Option<String>,
    first: String,
    last: String,
    /// Every id of the line's entries.
    more: Vec<String>,
}

/// State of the second pass.
struct Emit {
    tool_names: HashMap<String, String>,
    last_ts: String,
}

/// The lines of one message fold into its first line; a compaction's summary line into its
/// boundary.
fn fold(nodes: &[Node], by_uuid: &HashMap<&str, u32>, t: &mut Tree) {
    let mut head_of_msg: HashMap<&str, u32> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        if !t.sel[i] || t.dup[i] {
            continue;
        }
        match node.kind {
            K::Assistant => {
                let m = node.msg.as_deref().unwrap_or("");
                let h = *head_of_msg.entry(m).or_insert(i as u32);
                t.alias[i] = h;
                t.members.entry(h).or_default().push(i as u32);
            }
            K::Summary => {
                if let Some(&b) = node.parent.as_deref().and_then(|p| by_uuid.get(p))
                    && nodes[b as usize].kind == K::Boundary
                    && !t.summary_of.contains_key(&b)
                {
                    t.alias[i] = b;
                    t.summary_of.insert(b, i as u32);
                }
            }
            _ => {}
        }
    }
}

/// A partial compaction keeps a segment of the messages before it (`preservedSegment`),
/// which Claude Code re-attaches under the summary. In pi the kept messages stay where they
/// were, before the compaction: the segment is re-linked in its own order, the compaction
/// follows its last message, what came after it in the file continues after the compaction,
/// and the compaction's `firstKeptEntryId` is the segment's first message.
fn partial_compactions(nodes: &[Node], by_uuid: &HashMap<&str, u32>, t: &mut Tree) {
    for (b, node) in nodes.iter().enumerate() {
        let Some(pres) = node.preserved.as_deref() else {
            continue;
        };
        if !t.sel[b] || t.dup[b] {
            continue;
        }
        let lines: Vec<u32> = pres
            .uuids
            .iter()
            .filter_map(|u| by_uuid.get(&**u).copied())
            .collect();
        let Some(&head) = lines.first() else { continue };
        // The lines that stand for the boundary: itself, its summary, the anchor.
        let mut under: HashSet<&str> = HashSet::new();
        under.extend(node.uuid.as_deref());
        under.extend(pres.anchor.as_deref());
        if let Some(&sl) = t.summary_of.get(&(b as u32)) {
            under.extend(nodes[sl as usize].uuid.as_deref());
        }
        let is_under = |j: u32| {
            nodes[j as usize]
                .parent
                .as_deref()
                .is_some_and(|p| under.contains(p))
        };
        if is_under(head) {
            // The whole segment hangs under the summary: it stays after the compaction,
            // and the compaction keeps no earlier message.
            continue;
        }
        for w in lines.windows(2) {
            // Known only by its head and tail, the segment ends with the last message
            // written before the boundary.
            let before = if pres.listed {
                w[0]
            } else {
                (0..b as u32)
                    .rev()
                    .find(|&j| {
                        let x = &nodes[j as usize];
                        t.sel[j as usize] && !t.dup[j as usize] && is_conversation(x.kind)
                    })
                    .unwrap_or(w[0])
            };
            if is_under(w[1])
                && let Some(u) = nodes[before as usize].uuid.as_deref()
            {
                t.relinked.insert(w[1], Box::from(u));
            }
        }
        t.first_kept.insert(b as u32, t.alias[head as usize]);
        // The compaction follows the segment's last message; what the file adds under that
        // message after the boundary continues after the compaction.
        let Some(&tail) = lines.last() else { continue };
        let (Some(tail_u), Some(b_u)) =
            (nodes[tail as usize].uuid.as_deref(), node.uuid.as_deref())
        else {
            continue;
        };
        t.relinked.insert(b as u32, Box::from(tail_u));
        for (j, x) in nodes.iter().enumerate().skip(b + 1) {
            if x.parent.as_deref() == Some(tail_u)
                && !lines.contains(&(j as u32))
                && is_conversation(x.kind)
            {
                t.relinked.insert(j as u32, Box::from(b_u));
            }
        }
    }
}

/// Tool results chain after the message that called them, in file order; what follows any
/// of them continues from the last (parallel calls only look like forks).
fn chain_results(nodes: &[Node], t: &Tree, kp: &[u32]) -> Vec<u32> {
    let n = nodes.len();
    let mut group = vec![NONE; n];
    let mut tail: HashMap<u32, u32> = HashMap::new();
    let mut parent = vec![NONE; n];
    for i in 0..n {
        if !t.head(nodes, i) {
            continue;
        }
        if nodes[i].kind == K::Assistant {
            group[i] = i as u32;
            tail.insert(i as u32, i as u32);
        }
        if nodes[i].kind == K::ToolResult && kp[i] != NONE && group[kp[i] as usize] != NONE {
            let g = group[kp[i] as usize];
            parent[i] = tail.get(&g).copied().unwrap_or(g);
            group[i] = g;
            tail.insert(g, i as u32);
        }
    }
    for i in 0..n {
        if !t.head(nodes, i) || (nodes[i].kind == K::ToolResult && group[i] != NONE) {
            continue;
        }
        let p = kp[i];
        parent[i] = match group.get(p as usize) {
            Some(&g) if g != NONE => tail.get(&g).copied().unwrap_or(p),
            _ => p,
        };
    }
    parent
}

/// A line that has no place in the conversation, kept as a `custom` entry.
fn custom(
    nodes: &[Node],
    t: &Tree,
    k: usize,
    m: Map<String, Value>,
    ts: &str,
    b: &mut Builder<'_>,
) -> io::Result<()> {
    let node = &nodes[k];
    let key = match node.uuid.as_deref() {
        Some(u) if !t.dup[k] => u.to_owned(),
        _ => format!("L{}", node.line),
    };
    let ty = line_type(&m).to_owned();
    let kind = match m.get("subtype").and_then(Value::as_str) {
        Some(st) => format!("{ty}/{st}"),
        None => ty,
    };
    b.custom(
        &key,
        ts,
        node.line,
        &kind,
        node.kind == K::Unknown,
        Value::Object(m),
    )
}

/// A tool-result line: one `toolResult` message per result, then the line's other blocks
/// as a user message.
fn results(l: &Line, ms: i64, e: &Emit, b: &mut Builder<'_>) -> io::Result<()> {
    let blocks = message(&l.m)["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let details = l.m.get("toolUseResult").cloned();
    let mut prev = l.parent.clone();
    let mut it = l.more.iter();
    let mut others = Vec::new();
    for blk in &blocks {
        if blk["type"] != "tool_result" {
            others.push(blk.clone());
            continue;
        }
        let Some(id) = it.next() else { break };
        let call = blk["tool_use_id"].as_str().unwrap_or("");
        let mut msg = json!({
            "role": "toolResult",
            "toolCallId": call,
            "toolName": e.tool_names.get(call).map_or("", String::as_str),
            "content": result_content(&blk["content"]),
            "isError": blk["is_error"].as_bool().unwrap_or(false),
            "timestamp": ms,
        });
        if let Some(d) = &details {
            msg["details"] = d.clone();
        }
        b.message(id, prev.as_deref(), &l.ts, &msg)?;
        prev = Some(id.clone());
    }
    if !others.is_empty()
        && let Some(id) = it.next()
    {
        let content = user_content(&Value::Array(others));
        let msg = json!({"role": "user", "content": content, "timestamp": ms});
        b.message(id, prev.as_deref(), &l.ts, &msg)?;
    }
    Ok(())
}

/// A line's `message` (null when it has none).
fn message(m: &Map<String, Value>) -> &Value {
    m.get("message").unwrap_or(&Value::Null)
}

/// The text of a content value (a string, or the text blocks of an array).
fn text_of(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn image(b: &Value) -> Value {
    let src = &b["source"];
    if src["type"] == "base64" {
        json!({
            "type": "image",
            "data": src["data"].as_str().unwrap_or(""),
            "mimeType": src["media_type"].as_str().unwrap_or("image/png"),
        })
    } else {
        json!({"type": "text", "text": format!("[image: {}]", src["url"].as_str().unwrap_or("not embedded"))})
    }
}

fn user_content(c: &Value) -> Value {
    match c {
        Value::String(s) => json!([{"type": "text", "text": s}]),
        Value::Array(a) => Value::Array(
            a.iter()
                .filter(|b| b["type"] != "tool_result")
                .map(|b| match b["type"].as_str() {
                    Some("text") => json!({"type": "text", "text": b["text"].as_str().unwrap_or("")}),
                    Some("image") => image(b),
                    Some("document") => json!({
                        "type": "text",
                        "text": format!("[document: {}]", b["source"]["media_type"].as_str().unwrap_or("?")),
                    }),
                    _ => json!({"type": "text", "text": serde_json::to_string(b).unwrap_or_default()}),
                })
                .collect(),
        ),
        _ => json!([]),
    }
}

fn result_content(c: &Value) -> Value {
    match c {
        Value::String(s) => json!([{"type": "text", "text": s}]),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|b| match b["type"].as_str() {
                    Some("text") => json!({"type": "text", "text": b["text"].as_str().unwrap_or("")}),
                    Some("image") => image(b),
                    _ => json!({"type": "text", "text": serde_json::to_string(b).unwrap_or_default()}),
                })
                .collect(),
        ),
        Value::Null => json!([]),
        other => json!([{"type": "text", "text": other.to_string()}]),
    }
}

/// A content block of an assistant line as pi writes it (`None`: a tool call already seen).
fn block(blk: &Value, seen_calls: &mut HashSet<String>) -> Option<Value> {
    Some(match blk["type"].as_str() {
        Some("text") => json!({"type": "text", "text": blk["text"].as_str().unwrap_or("")}),
        Some("thinking") => {
            let mut t =
                json!({"type": "thinking", "thinking": blk["thinking"].as_str().unwrap_or("")});
            if let Some(sig) = blk["signature"].as_str() {
                t["thinkingSignature"] = json!(sig);
            }
            t
        }
        Some("redacted_thinking") => json!({
            "type": "thinking",
            "thinking": "",
            "thinkingSignature": blk["data"].as_str().unwrap_or(""),
            "redacted": true,
        }),
        Some("tool_use") => {
            let id = blk["id"].as_str().unwrap_or("").to_owned();
            if !seen_calls.insert(id.clone()) {
                return None;
            }
            json!({
                "type": "toolCall",
                "id": id,
                "name": blk["name"].as_str().unwrap_or(""),
                "arguments": if blk["input"].is_object() { blk["input"].clone() } else { json!({}) },
            })
        }
        _ => json!({"type": "text", "text": serde_json::to_string(blk).unwrap_or_default()}),
    })
}

/// One assistant message from the lines of a streamed message.
fn assistant(lines: &[Map<String, Value>], ms: i64, b: &Builder<'_>) -> Value {
    let mut content: Vec<Value> = Vec::new();
    let mut seen_calls = HashSet::new();
    let mut stop: Option<String> = None;
    let mut best: Option<&Value> = None;
    let mut best_out = 0u64;
    let mut error = false;
    let mut model = String::new();
    let mut msg_id = String::new();
    for l in lines {
        let msg = message(l);
        if let Some(mm) = msg["model"].as_str() {
            model = mm.to_owned();
        }
        if let Some(id) = msg["id"].as_str() {
            msg_id = id.to_owned();
        }
        if l.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
            error = true;
        }
        if let Some(sr) = msg["stop_reason"].as_str() {
            stop = Some(sr.to_owned());
        }
        if let Some(u) = msg.get("usage").filter(|u| u.is_object()) {
            let out = u["output_tokens"].as_u64().unwrap_or(0);
            if best.is_none() || out >= best_out {
                best = Some(u);
                best_out = out;
            }
        }
        let blocks: Vec<Value> = match &msg["content"] {
            Value::Array(a) => a.clone(),
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            _ => Vec::new(),
        };
        for blk in blocks {
            let Some(conv) = block(&blk, &mut seen_calls) else {
                continue;
            };
            // Older versions repeat the blocks so far on each line.
            if !content.contains(&conv) {
                content.push(conv);
            }
        }
    }
    let has_calls = content.iter().any(|c| c["type"] == "toolCall");
    let stop_reason = if error {
        "error"
    } else {
        match stop.as_deref() {
            Some("tool_use") => "toolUse",
            Some("max_tokens") => "length",
            Some("refusal") => "error",
            Some(_) => "stop",
            None if has_calls => "toolUse",
            None => "stop",
        }
    };
    let provider = if msg_id.starts_with("msg_bdrk_") {
        "amazon-bedrock"
    } else if msg_id.starts_with("msg_vrtx_") {
        "google-vertex-anthropic"
    } else {
        "anthropic"
    };
    let mut out = json!({
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": provider,
        "model": model,
    });
    if !msg_id.is_empty() {
        out["responseId"] = json!(msg_id);
    }
    let u = best.cloned().unwrap_or(Value::Null);
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let t = Tokens {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_read: n("cache_read_input_tokens"),
        cache_write: n("cache_creation_input_tokens"),
    };
    out["usage"] = b.usage(provider, &model, &t);
    out["stopReason"] = json!(stop_reason);
    if error {
        out["errorMessage"] = json!(text_of(
            &lines
                .last()
                .map_or(Value::Null, |l| message(l)["content"].clone())
        ));
    }
    out["timestamp"] = json!(ms);
    out
}
