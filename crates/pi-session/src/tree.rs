//! The entry tree: children sorted by timestamp (upstream's `getTree`), and its layout as
//! text, where a single-child chain stays in one column however long it is and only branch
//! points indent.

use std::io::{self, Write};

use super::index::NONE;
use super::store::Session;

pub struct Tree {
    /// Roots in file order: parentless entries, entries whose parent is missing or
    /// themselves, and one entry of every parent cycle (see [`Tree::cycle`]).
    pub roots: Vec<u32>,
    /// The parent of every entry in the tree ([`NONE`] for roots).
    parent: Vec<u32>,
    /// The entries shown as roots because they close a parent cycle, self-parents
    /// included, in file order.
    cycles: Vec<u32>,
    child_start: Vec<u32>,
    child_list: Vec<u32>,
}

/// What makes a root of a cycle one (see [`Tree::cycle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cycle {
    /// The entry names itself as its parent.
    SelfParent,
    /// The entry's parent is one of its descendants: the rest of the cycle, and whatever
    /// hangs under it, is shown under this entry.
    Ancestor,
}

/// The entries that close a parent cycle: for every cycle of two or more entries, the one
/// latest in the file (the one `pi session check` names). Linear in the number of entries.
pub(crate) fn cycle_closers(s: &Session) -> Vec<u32> {
    let n = s.entries.len();
    // 0 = not seen, 1 = on the current walk, 2 = done.
    let mut state = vec![0u8; n];
    let mut found = Vec::new();
    let mut walk = Vec::new();
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        walk.clear();
        let mut cur = start as u32;
        while cur != NONE && state[cur as usize] == 0 {
            state[cur as usize] = 1;
            walk.push(cur);
            cur = s.entries[cur as usize].parent;
        }
        if cur != NONE && state[cur as usize] == 1 {
            // The cycle runs from `cur` to the end of the walk.
            let from = walk.iter().rposition(|&w| w == cur).unwrap_or(0);
            if let Some(&last) = walk[from..].iter().max() {
                found.push(last);
            }
        }
        for &w in &walk {
            state[w as usize] = 2;
        }
    }
    found.sort_unstable();
    found
}

impl Tree {
    /// `timestamps[i]` is the parsed entry timestamp (ms), used to order siblings; entries
    /// with equal (or unparseable) timestamps keep file order. A parent cycle is cut at the
    /// entry that closes it, which becomes a root, so every entry is in the tree once.
    pub fn build(s: &Session, timestamps: &[i64]) -> Tree {
        let n = s.entries.len();
        let closers = cycle_closers(s);
        let mut parent: Vec<u32> = s.entries.iter().map(|r| r.parent).collect();
        for &c in &closers {
            parent[c as usize] = NONE;
        }
        let mut cycles = Vec::new();
        let mut next_closer = closers.iter().copied().peekable();
        let mut counts = vec![0u32; n + 1];
        let mut roots = Vec::new();
        for (i, r) in s.entries.iter().enumerate() {
            let closes = next_closer.next_if_eq(&(i as u32)).is_some();
            if closes || (r.parent == NONE && r.parent_id.as_ref() == Some(&r.id)) {
                cycles.push(i as u32);
            }
            match parent[i] {
                NONE => roots.push(i as u32),
                p => counts[p as usize] += 1,
            }
        }
        let mut child_start = vec![0u32; n + 1];
        for i in 0..n {
            child_start[i + 1] = child_start[i] + counts[i];
        }
        let mut fill = child_start.clone();
        let mut child_list = vec![0u32; child_start[n] as usize];
        for (i, &p) in parent.iter().enumerate() {
            if p != NONE {
                child_list[fill[p as usize] as usize] = i as u32;
                fill[p as usize] += 1;
            }
        }
        for i in 0..n {
            let (a, b) = (child_start[i] as usize, child_start[i + 1] as usize);
            if b - a > 1 {
                child_list[a..b]
                    .sort_by_key(|&c| (timestamps.get(c as usize).copied().unwrap_or(0), c));
            }
        }
        Tree {
            roots,
            parent,
            cycles,
            child_start,
            child_list,
        }
    }

    /// The number of entries in the subtree of every entry (itself included).
    pub fn subtree_sizes(&self) -> Vec<u32> {
        let n = self.parent.len();
        let mut order = Vec::with_capacity(n);
        let mut stack: Vec<u32> = self.roots.clone();
        while let Some(i) = stack.pop() {
            order.push(i);
            stack.extend_from_slice(self.children(i));
        }
        let mut size = vec![1u32; n];
        for &i in order.iter().rev() {
            let p = self.parent[i as usize];
            if p != NONE {
                size[p as usize] += size[i as usize];
            }
        }
        size
    }

    pub fn children(&self, i: u32) -> &[u32] {
        let (a, b) = (
            self.child_start[i as usize] as usize,
            self.child_start[i as usize + 1] as usize,
        );
        &self.child_list[a..b]
    }

    /// Whether entry `i` is a root because of a parent cycle, and which kind.
    pub fn cycle(&self, s: &Session, i: u32) -> Option<Cycle> {
        self.cycles.binary_search(&i).ok()?;
        Some(if s.entries[i as usize].parent == NONE {
            Cycle::SelfParent
        } else {
            Cycle::Ancestor
        })
    }

    /// The entries from a root of the tree to `leaf` (inclusive): the session's path, cut
    /// where the tree cuts a cycle.
    pub fn path_to(&self, leaf: u32) -> Vec<u32> {
        let mut path = Vec::new();
        let mut cur = leaf;
        while cur != NONE && (cur as usize) < self.parent.len() {
            path.push(cur);
            cur = self.parent[cur as usize];
        }
        path.reverse();
        path
    }
}

/// A row of the text layout.
pub struct Row<'a> {
    pub idx: u32,
    /// Box-drawing prefix (gutters and connector).
    pub prefix: &'a str,
    /// Levels of side branches the row is in (0 for the main line).
    pub depth: usize,
    /// Whether the row starts a side branch (it has a connector).
    pub starts_branch: bool,
}

/// How many levels of side branches the text layout draws. A row deeper than that starts
/// with a depth marker, `⋮N ` (N: its level), followed by the gutters of its innermost
/// [`MAX_INDENT`] − 1 levels, so that a prefix never grows past a fixed width and the
/// output stays linear in the entries however deeply branches nest.
pub const MAX_INDENT: usize = 16;

struct Item {
    idx: u32,
    /// The innermost level of side branches the row is in: an index into the gutters
    /// ([`NONE`] for the main line).
    gutter: u32,
    /// Levels of side branches.
    depth: usize,
    /// For the first row of a side branch: whether it is the last side branch here.
    connector: Option<bool>,
}

/// A level of side branches: whether its gutter line continues below, and the level
/// around it ([`NONE`] for the main line). Levels are shared by every row in them, so the
/// layout keeps one per side branch, not one per row and level.
struct Gutter {
    more: bool,
    up: u32,
}

/// Lays the tree out in display order. Every node is followed by its side branches, each
/// indented one level with a `├─`/`└─` connector, and then by its main continuation in the
/// same column: the child on the active path, or else the earliest. So the active path runs
/// down the first column however long or branched it is, a linear run never indents, and
/// the indentation only counts branches of branches. Siblings are in timestamp order.
/// Prefixes are capped at [`MAX_INDENT`] levels.
pub fn layout(
    tree: &Tree,
    active: &[bool],
    f: impl FnMut(Row<'_>) -> io::Result<()>,
) -> io::Result<()> {
    layout_to(tree, active, None, f)
}

/// [`layout`] down to `max_depth` levels of side branches: the first row of each branch
/// one level deeper is still laid out (to be folded), nothing inside it. The work is in
/// proportion to the rows laid out.
pub fn layout_to(
    tree: &Tree,
    active: &[bool],
    max_depth: Option<usize>,
    mut f: impl FnMut(Row<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut stack: Vec<Item> = Vec::new();
    let mut gutters: Vec<Gutter> = Vec::new();
    let mut roots: Vec<u32> = tree
        .roots
        .iter()
        .copied()
        .filter(|&r| active[r as usize])
        .collect();
    roots.extend(tree.roots.iter().copied().filter(|&r| !active[r as usize]));
    for &r in roots.iter().rev() {
        stack.push(Item {
            idx: r,
            gutter: NONE,
            depth: 0,
            connector: None,
        });
    }
    let mut prefix = String::new();
    // The innermost levels of a row, deepest first.
    let mut levels: Vec<bool> = Vec::with_capacity(MAX_INDENT);
    while let Some(item) = stack.pop() {
        let depth = item.depth;
        let drawn = if depth > MAX_INDENT {
            MAX_INDENT - 1
        } else {
            depth
        };
        levels.clear();
        let mut g = item.gutter;
        while levels.len() < drawn && g != NONE {
            let level = &gutters[g as usize];
            levels.push(level.more);
            g = level.up;
        }
        prefix.clear();
        if depth > drawn {
            prefix.push_str(&format!("⋮{depth} "));
        }
        for (k, &more) in levels.iter().rev().enumerate() {
            let last_level = k + 1 == levels.len();
            prefix.push_str(match (last_level, item.connector) {
                (true, Some(false)) => "├─ ",
                (true, Some(true)) => "└─ ",
                _ if more => "│  ",
                _ => "   ",
            });
        }
        f(Row {
            idx: item.idx,
            prefix: &prefix,
            depth,
            starts_branch: item.connector.is_some(),
        })?;
        if max_depth.is_some_and(|max| depth > max) {
            continue;
        }
        let children = tree.children(item.idx);
        if children.is_empty() {
            continue;
        }
        let main = children
            .iter()
            .copied()
            .find(|&c| active[c as usize])
            .unwrap_or(children[0]);
        // Pushed in reverse: the main continuation comes out last.
        stack.push(Item {
            idx: main,
            gutter: item.gutter,
            depth,
            connector: None,
        });
        let sides: Vec<u32> = children.iter().copied().filter(|&c| c != main).collect();
        for (k, &c) in sides.iter().enumerate().rev() {
            let last = k + 1 == sides.len();
            gutters.push(Gutter {
                more: !last,
                up: item.gutter,
            });
            stack.push(Item {
                idx: c,
                gutter: (gutters.len() - 1) as u32,
                depth: depth + 1,
                connector: Some(last),
            });
        }
    }
    Ok(())
}

/// The entries in the order [`write_nested`] writes them: each root, then depth first.
pub fn preorder(tree: &Tree) -> Vec<u32> {
    let mut order = Vec::with_capacity(tree.parent.len());
    let mut stack: Vec<u32> = Vec::new();
    for &root in &tree.roots {
        stack.push(root);
        while let Some(i) = stack.pop() {
            order.push(i);
            stack.extend(tree.children(i).iter().rev());
        }
    }
    order
}

/// The entries in [`preorder`], and each entry's depth (a root is 0), indexed by entry.
pub fn preorder_depths(tree: &Tree) -> (Vec<u32>, Vec<u32>) {
    let mut order = Vec::with_capacity(tree.parent.len());
    let mut depth = vec![0u32; tree.parent.len()];
    let mut stack: Vec<(u32, u32)> = Vec::new();
    for &root in &tree.roots {
        stack.push((root, 0));
        while let Some((i, d)) = stack.pop() {
            order.push(i);
            depth[i as usize] = d;
            stack.extend(tree.children(i).iter().rev().map(|&c| (c, d + 1)));
        }
    }
    (order, depth)
}

/// Writes the tree as nested JSON nodes, one root per line, without recursion.
/// `node(w, i)` writes the members of node `i` (without braces and `children`).
pub fn write_nested(
    tree: &Tree,
    w: &mut dyn Write,
    mut node: impl FnMut(&mut dyn Write, u32) -> io::Result<()>,
) -> io::Result<()> {
    for &root in &tree.roots {
        // (node, index of the next child to write)
        let mut stack: Vec<(u32, usize)> = vec![(root, 0)];
        w.write_all(b"{")?;
        node(w, root)?;
        w.write_all(b",\"children\":[")?;
        while let Some(top) = stack.last_mut() {
            let (i, next) = *top;
            let children = tree.children(i);
            if next < children.len() {
                top.1 += 1;
                if next > 0 {
                    w.write_all(b",")?;
                }
                let c = children[next];
                w.write_all(b"{")?;
                node(w, c)?;
                w.write_all(b",\"children\":[")?;
                stack.push((c, 0));
            } else {
                w.write_all(b"]}")?;
                stack.pop();
            }
        }
        w.write_all(b"\n")?;
    }
    Ok(())
}
