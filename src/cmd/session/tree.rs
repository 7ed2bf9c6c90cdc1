//! `pi session tree`

use crate::error::ExitStatus;
use clap::Args;

use crate::clock;
use crate::cmd::Ctx;
use crate::cmd::args::{FormatArgs, READ_SESSION_HELP, SessionArg};
use crate::json::{self, RawStr};
use crate::output::{Style, escape, term_width, truncate};
use crate::session::id::IdMap;
use crate::session::preview;
use crate::session::scan::Visit;
use crate::session::tree::{self, Cycle, Tree};

#[derive(Debug, Args)]
#[command(mut_arg("session", |a| a.help(READ_SESSION_HELP)))]
pub struct TreeArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Highlight the path to this entry (id or unique prefix) instead of the session's leaf
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    #[command(flatten)]
    pub format: FormatArgs,
}

struct Extra {
    timestamps: Vec<i64>,
    previews: Vec<Box<str>>,
    roles: Vec<Option<Box<str>>>,
    types: Vec<Box<str>>,
}

impl Visit for Extra {
    fn entry(&mut self, _i: u32, line: &[u8], members: &[json::Member<'_>]) {
        let get = |k: &str| json::field(line, members, k);
        let ts = get("timestamp")
            .and_then(RawStr::from_value)
            .and_then(|s| clock::parse_iso(&s.decode()))
            .unwrap_or(0);
        let ty = get("type")
            .and_then(RawStr::from_value)
            .map(|s| s.decode().into_owned())
            .unwrap_or_default();
        self.previews
            .push(preview::preview(&ty, line, members).into_boxed_str());
        self.roles
            .push(preview::role(line, members).map(String::into_boxed_str));
        self.types.push(ty.into_boxed_str());
        self.timestamps.push(ts);
    }
    fn split(&self) -> Self {
        Extra {
            timestamps: Vec::new(),
            previews: Vec::new(),
            roles: Vec::new(),
            types: Vec::new(),
        }
    }
    fn merge(&mut self, next: Self, _offset: u32) {
        self.timestamps.extend(next.timestamps);
        self.previews.extend(next.previews);
        self.roles.extend(next.roles);
        self.types.extend(next.types);
    }
}

pub fn run(args: TreeArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let source = ctx.session_source(args.session.get()?)?;
    let (s, x) = ctx.open_source(
        source,
        Extra {
            timestamps: Vec::new(),
            previews: Vec::new(),
            roles: Vec::new(),
            types: Vec::new(),
        },
    )?;
    let leaf = match &args.leaf {
        Some(l) => Some(s.resolve_entry(l)?),
        None => s.leaf(),
    };
    let t = Tree::build(&s, &x.timestamps);
    let mut active = vec![false; s.entries.len()];
    if let Some(l) = leaf {
        for i in t.path_to(l) {
            active[i as usize] = true;
        }
    }
    let labels: IdMap<(String, String)> = s
        .resolved_labels()
        .into_iter()
        .map(|(id, l, ts)| (id, (l, ts)))
        .collect();
    if !ctx.out.human(args.format.get()) {
        tree::write_nested(&t, &mut ctx.out, |w, i| {
            let r = &s.entries[i as usize];
            let mut b = Vec::with_capacity(256);
            b.extend_from_slice(b"\"id\":");
            json::write_str(&mut b, r.id.as_str());
            b.extend_from_slice(b",\"parentId\":");
            match &r.parent_id {
                Some(p) => json::write_str(&mut b, p.as_str()),
                None => b.extend_from_slice(b"null"),
            }
            b.extend_from_slice(b",\"type\":");
            json::write_str(&mut b, &x.types[i as usize]);
            if let Some(role) = &x.roles[i as usize] {
                b.extend_from_slice(b",\"role\":");
                json::write_str(&mut b, role);
            }
            b.extend_from_slice(b",\"timestamp\":");
            json::write_str(&mut b, &clock::format_iso(x.timestamps[i as usize]));
            b.extend_from_slice(b",\"line\":");
            b.extend_from_slice(r.line.to_string().as_bytes());
            b.extend_from_slice(b",\"preview\":");
            json::write_str(&mut b, &x.previews[i as usize]);
            if let Some((l, ts)) = labels.get(&r.id) {
                b.extend_from_slice(b",\"label\":");
                json::write_str(&mut b, l);
                b.extend_from_slice(b",\"labelTimestamp\":");
                json::write_str(&mut b, ts);
            }
            if t.cycle(&s, i).is_some() {
                b.extend_from_slice(b",\"cycle\":true");
            }
            b.extend_from_slice(b",\"active\":");
            b.extend_from_slice(if active[i as usize] {
                b"true"
            } else {
                b"false"
            });
            b.extend_from_slice(b",\"leaf\":");
            b.extend_from_slice(if leaf == Some(i) { b"true" } else { b"false" });
            w.write_all(&b)
        })?;
        return Ok(ExitStatus::Success);
    }
    let st = Style {
        on: ctx.out.color(),
    };
    let width = if ctx.out.tty {
        term_width()
    } else {
        usize::MAX
    };
    let out = &mut ctx.out;
    tree::layout(&t, &active, |row| {
        let i = row.idx as usize;
        let r = &s.entries[i];
        let on_path = active[i];
        let marker = if on_path { "•" } else { " " };
        let label = labels
            .get(&r.id)
            .map(|(l, _)| format!("[{}] ", escape(l)))
            .unwrap_or_default();
        let cycle = match t.cycle(&s, row.idx) {
            None => String::new(),
            Some(Cycle::SelfParent) => "[cycle: its own parent] ".to_owned(),
            Some(Cycle::Ancestor) => format!(
                "[cycle: parent {} is below] ",
                escape(r.parent_id.as_ref().map_or("", |p| p.as_str()))
            ),
        };
        let leaf_mark = if leaf == Some(row.idx) {
            "  ← leaf"
        } else {
            ""
        };
        let id = escape(r.id.as_str());
        let used = row.prefix.chars().count()
            + 2
            + id.chars().count()
            + 1
            + cycle.chars().count()
            + label.chars().count()
            + leaf_mark.chars().count();
        let text = truncate(&escape(&x.previews[i]), width.saturating_sub(used).max(12));
        let line = format!(
            "{} {}{} {}{}{}{}",
            if on_path {
                st.cyan(marker)
            } else {
                marker.to_owned()
            },
            st.dim(row.prefix),
            st.yellow(&id),
            st.red(&cycle),
            st.magenta(&label),
            if on_path { text } else { st.dim(&text) },
            st.bold(leaf_mark)
        );
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")
    })?;
    Ok(ExitStatus::Success)
}
