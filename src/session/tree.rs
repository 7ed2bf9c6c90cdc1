//! The entry tree: children sorted by timestamp (upstream's `getTree`), and its layout as
//! text, where a single-child chain stays in one column however long it is and only branch
//! points indent.

use std::io::{self, Write};
use std::rc::Rc;

use super::store::{NONE, Session};

pub struct Tree {
    /// Roots in file order (parentless entries, and entries whose parent is missing or
    /// themselves).
    pub roots: Vec<u32>,
    child_start: Vec<u32>,
    child_list: Vec<u32>,
}

impl Tree {
    /// `timestamps[i]` is the parsed entry timestamp (ms), used to order siblings; entries
    /// with equal (or unparseable) timestamps keep file order.
    pub fn build(s: &Session, timestamps: &[i64]) -> Tree {
        let n = s.entries.len();
        let mut counts = vec![0u32; n + 1];
        let mut roots = Vec::new();
        for (i, r) in s.entries.iter().enumerate() {
            if r.parent == NONE {
                roots.push(i as u32);
            } else {
                counts[r.parent as usize] += 1;
            }
        }
        let mut child_start = vec![0u32; n + 1];
        for i in 0..n {
            child_start[i + 1] = child_start[i] + counts[i];
        }
        let mut fill = child_start.clone();
        let mut child_list = vec![0u32; child_start[n] as usize];
        for (i, r) in s.entries.iter().enumerate() {
            if r.parent != NONE {
                let p = r.parent as usize;
                child_list[fill[p] as usize] = i as u32;
                fill[p] += 1;
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
            child_start,
            child_list,
        }
    }

    pub fn children(&self, i: u32) -> &[u32] {
        let (a, b) = (
            self.child_start[i as usize] as usize,
            self.child_start[i as usize + 1] as usize,
        );
        &self.child_list[a..b]
    }
}

/// A row of the text layout.
pub struct Row<'a> {
    pub idx: u32,
    /// Box-drawing prefix (gutters and connector).
    pub prefix: &'a str,
}

struct Item {
    idx: u32,
    indent: usize,
    just_branched: bool,
    connector: bool,
    last: bool,
    gutters: Rc<Vec<(usize, bool)>>,
}

/// Lays the tree out in display order: at every branch point the child leading to the active
/// leaf comes first (then the rest by timestamp), and so do roots.
pub fn layout(
    tree: &Tree,
    active: &[bool],
    mut f: impl FnMut(Row<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let multiple_roots = tree.roots.len() > 1;
    let order = |list: &[u32]| -> Vec<u32> {
        let mut v: Vec<u32> = list
            .iter()
            .copied()
            .filter(|&c| active[c as usize])
            .collect();
        v.extend(list.iter().copied().filter(|&c| !active[c as usize]));
        v
    };
    let mut stack: Vec<Item> = Vec::new();
    let roots = order(&tree.roots);
    let empty = Rc::new(Vec::new());
    for (k, &r) in roots.iter().enumerate().rev() {
        stack.push(Item {
            idx: r,
            indent: usize::from(multiple_roots),
            just_branched: multiple_roots,
            connector: false,
            last: k + 1 == roots.len(),
            gutters: empty.clone(),
        });
    }
    let mut prefix = String::new();
    while let Some(item) = stack.pop() {
        let display = if multiple_roots {
            item.indent.saturating_sub(1)
        } else {
            item.indent
        };
        let connector_at = if item.connector {
            Some(display.saturating_sub(1))
        } else {
            None
        };
        prefix.clear();
        for level in 0..display {
            if let Some(&(_, show)) = item.gutters.iter().find(|(p, _)| *p == level) {
                prefix.push_str(if show { "│  " } else { "   " });
            } else if connector_at == Some(level) {
                prefix.push_str(if item.last { "└─ " } else { "├─ " });
            } else {
                prefix.push_str("   ");
            }
        }
        f(Row {
            idx: item.idx,
            prefix: &prefix,
        })?;
        let children = tree.children(item.idx);
        let branching = children.len() > 1;
        let child_indent = if branching || (item.just_branched && item.indent > 0) {
            item.indent + 1
        } else {
            item.indent
        };
        let gutters = match connector_at {
            Some(at) => {
                let mut g = (*item.gutters).clone();
                g.push((at, !item.last));
                Rc::new(g)
            }
            None => item.gutters.clone(),
        };
        let ordered = order(children);
        for (k, &c) in ordered.iter().enumerate().rev() {
            stack.push(Item {
                idx: c,
                indent: child_indent,
                just_branched: branching,
                connector: branching,
                last: k + 1 == ordered.len(),
                gutters: gutters.clone(),
            });
        }
    }
    Ok(())
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
