//! `pi session tree`

use crate::error::ExitStatus;
use clap::Args;

use crate::cmd::Ctx;
use crate::cmd::args::{FormatArgs, READ_SESSION_HELP, SessionArg};
use pi_base::clock;
use pi_base::json::{self, RawStr};
use std::borrow::Cow;
use std::io::Write;

use crate::output::{Style, escape, term_width};
use crate::pager::Pager;
use pi_base::text::{truncate, width as width_of};
use pi_session::id::IdMap;
use pi_session::rows;
use pi_session::scan::Visit;
use pi_session::store::NONE;
use pi_session::tree::{self, Cycle, Tree};
use pi_session::{Session, preview};

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
    /// Text view: show side branches nested at most N deep (0: the active path and the
    /// roots only); deeper branches are folded into one line
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Text view: only user messages, labelled entries, branch points and their first
    /// entries, or compactions and branch summaries
    #[arg(long, value_enum, value_name = "WHAT")]
    pub only: Option<Only>,
    /// Text view: only the rows around this entry (id or unique prefix)
    #[arg(long, value_name = "ID")]
    pub around: Option<String>,
    /// With --around: how many rows before and after it
    #[arg(long, value_name = "N", default_value_t = 10, requires = "around")]
    pub context: usize,
    /// Print everything at once instead of through $PAGER
    #[arg(long)]
    pub no_pager: bool,
    /// JSON: one object per root with its children nested inside (the reference's
    /// getTree shape) instead of one line per entry
    #[arg(long)]
    pub nested: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Only {
    /// User messages
    User,
    /// Labelled entries
    Labels,
    /// Branch points and the first entry of each of their branches
    Branches,
    /// Compactions and branch summaries
    Compactions,
}

/// A row of the text view, kept until the rows to print are known.
struct Line {
    idx: u32,
    prefix: String,
    /// A folded branch: the number of entries it holds.
    folded: Option<u32>,
}

struct Extra {
    timestamps: Vec<i64>,
    previews: Vec<Box<str>>,
    roles: Vec<Option<Box<str>>>,
    types: Vec<Box<str>>,
}

fn timestamp(line: &[u8], members: &[json::Member<'_>]) -> i64 {
    json::field(line, members, "timestamp")
        .and_then(RawStr::from_value)
        .and_then(|s| clock::parse_iso(&s.decode()))
        .unwrap_or(0)
}

/// What the views show of an entry: its type, its preview and (for a message) its role.
fn shown(line: &[u8], members: &[json::Member<'_>]) -> (String, String, Option<String>) {
    let ty = json::field(line, members, "type")
        .and_then(RawStr::from_value)
        .map(|s| s.decode().into_owned())
        .unwrap_or_default();
    let (preview, role) = preview::preview_and_role(&ty, line, members);
    (ty, preview, role)
}

/// What a row shows of an entry: its type, its preview and (for a message) its role.
type Shown<'a> = (Cow<'a, str>, Cow<'a, str>, Option<Cow<'a, str>>);

/// [`shown`] for a line read again (the members are not at hand).
pub(crate) fn shown_line(line: &[u8]) -> (String, String, Option<String>) {
    let mut members = Vec::new();
    let start = json::skip_ws(line, 0);
    match json::scan_object_valid(line, start, |m| members.push(m)) {
        Ok(_) => shown(line, &members),
        Err(_) => (String::new(), String::new(), None),
    }
}

impl Visit for Extra {
    fn entry(&mut self, _i: u32, line: &[u8], members: &[json::Member<'_>]) {
        self.timestamps.push(timestamp(line, members));
        let (ty, preview, role) = shown(line, members);
        self.previews.push(preview.into_boxed_str());
        self.roles.push(role.map(String::into_boxed_str));
        self.types.push(ty.into_boxed_str());
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

/// What the whole views need before they write: the timestamps (sibling order) and what
/// each row shows. While a memory budget lasts, the type, role and preview of an entry are
/// made in the first pass, where its line is at hand, and kept; past it, a `message`
/// entry keeps where the parts of its preview are in its line (a recipe, see
/// [`preview::gather`]), and the rows of the entries not kept are made from their lines
/// read again.
#[derive(Default)]
struct Times {
    ts: Vec<i64>,
    /// Entry `i`'s recipe is `recipes[starts[i]..starts[i + 1]]` (empty: not a message).
    starts: Vec<usize>,
    recipes: Vec<u32>,
    kept: Kept,
    /// A message's recipe while its row is made.
    scratch: Vec<u32>,
    /// Bytes this part may still keep before it asks `budget` for more.
    room: usize,
    /// Set once the budget is spent: the rest of the entries are read again.
    spent: bool,
    budget: Budget,
}

/// The shared budget of the bytes kept (see [`Times`]), handed out in chunks.
#[derive(Clone)]
struct Budget(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Default for Budget {
    fn default() -> Budget {
        Budget(std::sync::Arc::new(KEEP_BUDGET.into()))
    }
}

/// The bytes of rows kept from the first pass. A preview is at most [`preview::MAX`]
/// characters, about 200 bytes in a session of tool outputs: this keeps every row of a
/// session of 100k entries (20 MB), and a fifth of a session of a million, whose other
/// rows are read again, so that its tree stays in bounded memory.
const KEEP_BUDGET: usize = 40 << 20;
const KEEP_CHUNK: usize = 256 << 10;
/// `Kept::at` of an entry not kept.
const NOT_KEPT: u32 = u32::MAX;

/// Rows kept from the first pass, in parts (one per chunk of the file, not copied into
/// one when the chunks are merged): the type, role and preview of every entry kept, one
/// after another in its part's `text`.
#[derive(Default)]
struct Kept {
    rows: Vec<KeptRow>,
    text: String,
    /// The earlier parts: the first entry of each, and its text.
    earlier: Vec<(usize, String)>,
    /// The first entry of the part `text` holds.
    first: usize,
}

/// Where an entry's row is in its part's text: the type at `at`, then the role (none when
/// its length is `u16::MAX`), then the preview. `at == NOT_KEPT`: not kept.
#[derive(Clone, Copy)]
struct KeptRow {
    at: u32,
    ty: u16,
    role: u16,
    preview: u32,
}

impl Kept {
    /// Keeps the next entry's row, unless a part is too long for its length field.
    fn push(&mut self, ty: &str, role: Option<&str>, preview: &str) -> bool {
        let role_len = role.map_or(Some(u16::MAX), |r| {
            u16::try_from(r.len()).ok().filter(|&n| n < u16::MAX)
        });
        let (Ok(ty_len), Some(role_len), Ok(preview_len), Ok(at)) = (
            u16::try_from(ty.len()),
            role_len,
            u32::try_from(preview.len()),
            u32::try_from(self.text.len()),
        ) else {
            self.skip();
            return false;
        };
        if at == NOT_KEPT {
            self.skip();
            return false;
        }
        self.rows.push(KeptRow {
            at,
            ty: ty_len,
            role: role_len,
            preview: preview_len,
        });
        self.text.push_str(ty);
        self.text.push_str(role.unwrap_or_default());
        self.text.push_str(preview);
        true
    }

    /// Notes that the next entry's row is not kept.
    fn skip(&mut self) {
        self.rows.push(KeptRow {
            at: NOT_KEPT,
            ty: 0,
            role: 0,
            preview: 0,
        });
    }

    /// Appends the rows of the next chunk.
    fn append(&mut self, next: Kept) {
        let text = std::mem::replace(&mut self.text, next.text);
        self.earlier.push((self.first, text));
        self.earlier.extend(
            next.earlier
                .into_iter()
                .map(|(f, d)| (f + self.rows.len(), d)),
        );
        self.first = next.first + self.rows.len();
        self.rows.extend(next.rows);
    }

    /// Entry `i`'s row, if it was kept: its type, role and preview.
    fn get(&self, i: usize) -> Option<(&str, Option<&str>, &str)> {
        let r = *self.rows.get(i)?;
        if r.at == NOT_KEPT {
            return None;
        }
        let text = if i >= self.first {
            &self.text
        } else {
            let k = self.earlier.partition_point(|&(f, _)| f <= i);
            &self.earlier.get(k.checked_sub(1)?)?.1
        };
        let at = r.at as usize;
        let role_at = at + usize::from(r.ty);
        let role_len = if r.role == u16::MAX { 0 } else { r.role };
        let preview_at = role_at + usize::from(role_len);
        let ty = text.get(at..role_at)?;
        let role = match r.role {
            u16::MAX => None,
            _ => Some(text.get(role_at..preview_at)?),
        };
        let preview = text.get(preview_at..preview_at + r.preview as usize)?;
        Some((ty, role, preview))
    }
}

impl Visit for Times {
    fn entry(&mut self, _i: u32, line: &[u8], members: &[json::Member<'_>]) {
        // Only reached without the line's pass collecting the members below the top level.
        self.timestamp_and_start(line, members);
        let mut recipe = std::mem::take(&mut self.scratch);
        recipe.clear();
        if let Some(m) = Self::message(line, members) {
            preview::gather_value(line, m.value_start, &mut recipe);
        }
        self.keep_or_note(line, members, &recipe);
        self.scratch = recipe;
    }

    const NESTED: Option<&'static str> = Some(preview::DEEP.key);
    const DEEP: Option<json::Deep> = Some(preview::DEEP);

    fn entry_deep(
        &mut self,
        _i: u32,
        line: &[u8],
        members: &[json::Member<'_>],
        nested: &[json::Member<'_>],
        elements: &[(usize, json::Member<'_>)],
        subs: &[(usize, json::Member<'_>)],
    ) {
        self.timestamp_and_start(line, members);
        let mut recipe = std::mem::take(&mut self.scratch);
        recipe.clear();
        if Self::message(line, members).is_some() {
            preview::gather(line, nested, elements, subs, &mut recipe);
        }
        self.keep_or_note(line, members, &recipe);
        self.scratch = recipe;
    }

    fn split(&self) -> Self {
        Times {
            budget: self.budget.clone(),
            ..Times::default()
        }
    }
    fn merge(&mut self, next: Self, _offset: u32) {
        if self.ts.is_empty() {
            // Nothing to shift by: the first chunk is taken as it is, not copied.
            *self = next;
            return;
        }
        self.ts.extend(next.ts);
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let base = self.recipes.len();
        self.starts
            .extend(next.starts.iter().skip(1).map(|&s| s + base));
        self.recipes.extend(next.recipes);
        self.kept.append(next.kept);
    }
}

impl Times {
    fn timestamp_and_start(&mut self, line: &[u8], members: &[json::Member<'_>]) {
        self.ts.push(timestamp(line, members));
        if self.starts.is_empty() {
            self.starts.push(0);
        }
    }

    /// The `message` member of a `message` entry (the last one).
    fn message<'m, 'a>(
        line: &[u8],
        members: &'m [json::Member<'a>],
    ) -> Option<&'m json::Member<'a>> {
        let is_message = json::field(line, members, "type")
            .and_then(RawStr::from_value)
            .is_some_and(|t| !t.escaped && t.raw == b"message");
        is_message
            .then(|| members.iter().rev().find(|m| m.key.eq_str("message")))
            .flatten()
    }

    /// Keeps the row of the entry on `line` while the budget lasts, else notes its
    /// `recipe` (empty unless it is a message) for the row made when the line is read
    /// again.
    fn keep_or_note(&mut self, line: &[u8], members: &[json::Member<'_>], recipe: &[u32]) {
        if self.has_room() {
            let (ty, preview, role) = Self::row(line, recipe, || shown(line, members));
            let before = self.kept.text.len();
            if self.kept.push(&ty, role.as_deref(), &preview) {
                self.room = self.room.saturating_sub(self.kept.text.len() - before);
                self.starts.push(self.recipes.len());
                return;
            }
        } else {
            self.kept.skip();
        }
        self.recipes.extend_from_slice(recipe);
        self.starts.push(self.recipes.len());
    }

    /// Whether the budget still allows a row to be kept, taking a chunk of it if this part
    /// has no room left.
    fn has_room(&mut self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        if self.room > 0 {
            return true;
        }
        if self.spent {
            return false;
        }
        let took = self
            .budget
            .0
            .fetch_update(Relaxed, Relaxed, |b| b.checked_sub(KEEP_CHUNK))
            .is_ok();
        if took {
            self.room = KEEP_CHUNK;
        } else {
            self.spent = true;
        }
        took
    }

    /// The type, preview and role of an entry: a message's from its recipe, anything
    /// else's (or a message whose parts were not found) from `fallback`.
    fn row(
        line: &[u8],
        recipe: &[u32],
        fallback: impl FnOnce() -> (String, String, Option<String>),
    ) -> Shown<'static> {
        if recipe.is_empty() {
            let (ty, preview, role) = fallback();
            return (ty.into(), preview.into(), role.map(Cow::Owned));
        }
        let (text, role) = preview::render_cow(line, recipe);
        (
            Cow::Borrowed("message"),
            pi_base::text::truncate_owned(text, preview::MAX).into(),
            role,
        )
    }

    /// Whether entry `i`'s row is made from its line read again.
    fn needs_line(&self, i: u32) -> bool {
        self.kept
            .rows
            .get(i as usize)
            .is_none_or(|r| r.at == NOT_KEPT)
    }

    /// [`shown`] for entry `i`: kept, or made from its line read again.
    fn shown(&self, i: u32, line: &[u8]) -> Shown<'_> {
        if let Some((ty, role, preview)) = self.kept.get(i as usize) {
            return (ty.into(), preview.into(), role.map(Cow::Borrowed));
        }
        let i = i as usize;
        let recipe = match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) if b > a => &self.recipes[a..b],
            _ => &[],
        };
        Self::row(line, recipe, || shown_line(line))
    }
}

/// Appends `n` in decimal.
fn write_u32(b: &mut Vec<u8>, n: u32) {
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    b.extend_from_slice(&digits[at..]);
}

/// The tree and what marks its rows.
struct View {
    s: Session,
    t: Tree,
    active: Vec<bool>,
    leaf: Option<u32>,
    labels: IdMap<(String, String)>,
}

impl View {
    fn new(s: Session, timestamps: &[i64], leaf: Option<&str>) -> anyhow::Result<View> {
        let leaf = match leaf {
            Some(l) => Some(s.resolve_entry(l)?),
            None => s.leaf(),
        };
        let t = Tree::build(&s, timestamps);
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
        Ok(View {
            s,
            t,
            active,
            leaf,
            labels,
        })
    }

    /// The members of node `i` in `--json` (without braces and `children`).
    fn json_node(
        &self,
        i: u32,
        ts: i64,
        ty: &str,
        role: Option<&str>,
        preview: &str,
        b: &mut Vec<u8>,
    ) {
        let r = &self.s.entries[i as usize];
        b.extend_from_slice(b"\"id\":");
        json::write_str(b, r.id.as_str());
        b.extend_from_slice(b",\"parentId\":");
        match &r.parent_id {
            Some(p) => json::write_str(b, p.as_str()),
            None => b.extend_from_slice(b"null"),
        }
        b.extend_from_slice(b",\"type\":");
        json::write_str(b, ty);
        if let Some(role) = role {
            b.extend_from_slice(b",\"role\":");
            json::write_str(b, role);
        }
        b.extend_from_slice(b",\"timestamp\":");
        b.push(b'"');
        clock::write_iso(b, ts);
        b.extend_from_slice(b"\",\"line\":");
        write_u32(b, r.line);
        b.extend_from_slice(b",\"preview\":");
        json::write_str(b, preview);
        if let Some((l, ts)) = self.labels.get(&r.id) {
            b.extend_from_slice(b",\"label\":");
            json::write_str(b, l);
            b.extend_from_slice(b",\"labelTimestamp\":");
            json::write_str(b, ts);
        }
        if self.t.cycle(&self.s, i).is_some() {
            b.extend_from_slice(b",\"cycle\":true");
        }
        b.extend_from_slice(b",\"active\":");
        b.extend_from_slice(if self.active[i as usize] {
            b"true"
        } else {
            b"false"
        });
        b.extend_from_slice(b",\"leaf\":");
        b.extend_from_slice(if self.leaf == Some(i) {
            b"true"
        } else {
            b"false"
        });
    }

    /// Appends a row of the text view to `out`; `text` is the escaped preview.
    fn human_row(
        &self,
        st: &Style,
        width: usize,
        (idx, prefix): (u32, &str),
        text: &str,
        out: &mut String,
    ) {
        let r = &self.s.entries[idx as usize];
        let on_path = self.active[idx as usize];
        let marker = if on_path { "•" } else { " " };
        let label = self
            .labels
            .get(&r.id)
            .map(|(l, _)| format!("[{}] ", escape(l)));
        let label = label.as_deref().unwrap_or_default();
        let cycle: Cow<'_, str> = match self.t.cycle(&self.s, idx) {
            None => "".into(),
            Some(Cycle::SelfParent) => "[cycle: its own parent] ".into(),
            Some(Cycle::Ancestor) => format!(
                "[cycle: parent {} is below] ",
                escape(r.parent_id.as_ref().map_or("", |p| p.as_str()))
            )
            .into(),
        };
        let leaf_mark = if self.leaf == Some(idx) {
            "  ← leaf"
        } else {
            ""
        };
        let id = escape(r.id.as_str());
        let used = width_of(prefix)
            + 2
            + width_of(&id)
            + 1
            + width_of(&cycle)
            + width_of(label)
            + width_of(leaf_mark);
        let room = width.saturating_sub(used).max(12);
        // No more characters than bytes: a text this short is not cut.
        let text: Cow<'_, str> = if text.len() <= room {
            text.into()
        } else {
            truncate(text, room).into()
        };
        let plain = anstyle::Style::new();
        let (dim, bold) = (plain.dimmed(), plain.bold());
        st.paint_to(out, if on_path { Style::CYAN } else { plain }, marker);
        out.push(' ');
        st.paint_to(out, dim, prefix);
        st.paint_to(out, Style::YELLOW, &id);
        out.push(' ');
        st.paint_to(out, Style::RED, &cycle);
        st.paint_to(out, Style::MAGENTA, label);
        st.paint_to(out, if on_path { plain } else { dim }, &text);
        st.paint_to(out, bold, leaf_mark);
    }
}

/// The style and width of the text view: colours when the output takes them, the
/// terminal's width on a terminal (else no limit).
fn text_look(ctx: &Ctx) -> (Style, usize) {
    let st = Style {
        on: ctx.out.color(),
    };
    let width = if ctx.out.tty {
        term_width()
    } else {
        usize::MAX
    };
    (st, width)
}

pub fn run(args: TreeArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let source = ctx.session_source(args.session.get()?)?;
    let shaped = args.depth.is_some() || args.only.is_some() || args.around.is_some();
    if shaped {
        return run_shaped(args, ctx, source);
    }
    let (s, times) = ctx.open_source(source, Times::default())?;
    let v = View::new(s, &times.ts, args.leaf.as_deref())?;
    let ts = &times.ts;
    if args.nested && args.format.get() == crate::output::Format::Human {
        return Err(crate::error::usage(
            "--nested shapes the JSON output; it cannot go with --format human",
        ));
    }
    if args.nested || !ctx.out.human(args.format.get()) {
        let render = |i: u32, line: &[u8], b: &mut Vec<u8>| {
            let (ty, preview, role) = times.shown(i, line);
            v.json_node(i, ts[i as usize], &ty, role.as_deref(), &preview, b);
        };
        let out = &mut ctx.out;
        let needs_line = |i| times.needs_line(i);
        if args.nested {
            let order = tree::preorder(&v.t);
            rows::stream(&v.s, &order, needs_line, render, |rows| {
                tree::write_nested(&v.t, out, |w, i| w.write_all(rows.next(i)?))
            })?;
            return Ok(ExitStatus::Success);
        }
        let (order, depth) = tree::preorder_depths(&v.t);
        let flat = |i: u32, line: &[u8], b: &mut Vec<u8>| {
            b.push(b'{');
            render(i, line, b);
            b.extend_from_slice(b",\"depth\":");
            write_u32(b, depth[i as usize]);
            b.extend_from_slice(b",\"children\":");
            write_u32(b, v.t.children(i).len() as u32);
            b.extend_from_slice(b"}\n");
        };
        rows::stream(&v.s, &order, needs_line, flat, |rows| {
            for &i in &order {
                out.write_all(rows.next(i)?)?;
            }
            Ok(())
        })?;
        return Ok(ExitStatus::Success);
    }
    let (st, width) = text_look(ctx);
    let mut order = Vec::with_capacity(v.s.entries.len());
    tree::layout(&v.t, &v.active, |row| {
        order.push(row.idx);
        Ok(())
    })?;
    let render = |i: u32, line: &[u8], b: &mut Vec<u8>| {
        b.extend_from_slice(escape(&times.shown(i, line).1).as_bytes());
    };
    let mut out = Pager::new(&mut ctx.out, !args.no_pager);
    let mut line = String::new();
    let needs_line = |i| times.needs_line(i);
    rows::stream(&v.s, &order, needs_line, render, |rows| {
        tree::layout(&v.t, &v.active, |row| {
            let text = rows.next(row.idx)?;
            // Escaped text: valid UTF-8 unless something went wrong.
            let text = match std::str::from_utf8(text) {
                Ok(t) => Cow::Borrowed(t),
                Err(_) => String::from_utf8_lossy(text),
            };
            line.clear();
            v.human_row(&st, width, (row.idx, row.prefix), &text, &mut line);
            line.push('\n');
            out.write_all(line.as_bytes())
        })
    })?;
    out.finish()?;
    Ok(ExitStatus::Success)
}

/// The text view with `--depth`, `--only` or `--around`: every row is known before any is
/// written.
fn run_shaped(
    args: TreeArgs,
    ctx: &mut Ctx,
    source: pi_session::store::Source,
) -> anyhow::Result<ExitStatus> {
    let (s, x) = ctx.open_source(
        source,
        Extra {
            timestamps: Vec::new(),
            previews: Vec::new(),
            roles: Vec::new(),
            types: Vec::new(),
        },
    )?;
    let v = View::new(s, &x.timestamps, args.leaf.as_deref())?;
    if args.nested || args.format.get() == crate::output::Format::Json {
        return Err(crate::error::usage(
            "--depth, --only and --around shape the text view; --json is always the whole tree",
        ));
    }
    let around = match &args.around {
        Some(a) => Some(v.s.resolve_entry(a)?),
        None => None,
    };
    let (st, width) = text_look(ctx);
    let lines = shape(&v.s, &v.t, &v.active, &x, &v.labels, &args, around)?;
    let mut out = Pager::new(&mut ctx.out, !args.no_pager);
    for line in &lines {
        let (i, prefix) = (line.idx as usize, line.prefix.as_str());
        if let Line {
            folded: Some(n), ..
        } = line
        {
            let text = format!(
                "… {n} {} in this branch (--depth shows more)",
                if *n == 1 { "entry" } else { "entries" }
            );
            writeln!(out, "  {}{}", st.dim(prefix), st.dim(&text))?;
            continue;
        }
        if line.idx == NONE {
            writeln!(out, "{}", st.dim(prefix))?;
            continue;
        }
        let mut row = String::new();
        let text = escape(&x.previews[i]);
        v.human_row(&st, width, (line.idx, prefix), &text, &mut row);
        row.push('\n');
        out.write_all(row.as_bytes())?;
    }
    out.finish()?;
    Ok(ExitStatus::Success)
}

/// The rows of the text view: the layout, with deep branches folded (`--depth`), filtered
/// (`--only`) and cut to a window (`--around`, with a line for what is left out).
fn shape(
    s: &Session,
    t: &Tree,
    active: &[bool],
    x: &Extra,
    labels: &IdMap<(String, String)>,
    args: &TreeArgs,
    around: Option<u32>,
) -> std::io::Result<Vec<Line>> {
    let sizes = args.depth.map(|_| t.subtree_sizes());
    let mut lines: Vec<Line> = Vec::new();
    // Laid out no deeper than shown, so that `--depth` costs what it prints.
    tree::layout_to(t, active, args.depth, |row| {
        if let (Some(max), Some(sizes)) = (args.depth, &sizes)
            && row.depth > max
        {
            if row.depth == max + 1 && row.starts_branch && args.only.is_none() {
                lines.push(Line {
                    idx: row.idx,
                    prefix: row.prefix.to_owned(),
                    folded: Some(sizes[row.idx as usize]),
                });
            }
            return Ok(());
        }
        let i = row.idx as usize;
        let keep = match args.only {
            None => true,
            Some(Only::User) => x.roles[i].as_deref() == Some("user"),
            Some(Only::Labels) => labels.contains_key(&s.entries[i].id),
            Some(Only::Branches) => {
                let parent = s.entries[i].parent;
                t.children(row.idx).len() > 1 || (parent != NONE && t.children(parent).len() > 1)
            }
            Some(Only::Compactions) => {
                matches!(&*x.types[i], "compaction" | "branch_summary")
            }
        };
        if keep {
            lines.push(Line {
                idx: row.idx,
                prefix: row.prefix.to_owned(),
                folded: None,
            });
        }
        Ok(())
    })?;
    let Some(target) = around else {
        return Ok(lines);
    };
    // The rows around the entry: it may be filtered out or folded away, then the nearest
    // row in layout order stands for it.
    let pos = lines
        .iter()
        .position(|l| l.idx == target && l.folded.is_none())
        .or_else(|| {
            let mut order = Vec::new();
            let _ = tree::layout(t, active, |row| {
                order.push(row.idx);
                Ok(())
            });
            let at = order.iter().position(|&i| i == target)?;
            let rank: std::collections::HashMap<u32, usize> =
                order.iter().enumerate().map(|(k, &i)| (i, k)).collect();
            lines
                .iter()
                .position(|l| rank.get(&l.idx).is_some_and(|&k| k >= at))
                .or(lines.len().checked_sub(1))
        })
        .unwrap_or(0);
    let from = pos.saturating_sub(args.context);
    let to = (pos + args.context + 1).min(lines.len());
    let (before, after) = (from, lines.len() - to);
    let mut window: Vec<Line> = Vec::with_capacity(to - from + 2);
    let gap = |n: usize, dir: &str| Line {
        idx: NONE,
        prefix: format!("  ⋮ {n} row{} {dir}", if n == 1 { "" } else { "s" }),
        folded: None,
    };
    if before > 0 {
        window.push(gap(before, "above"));
    }
    window.extend(lines.drain(from..to));
    if after > 0 {
        window.push(gap(after, "below"));
    }
    Ok(window)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    /// A session whose entries take every way a row is made: messages of each role, long
    /// and escaped texts, non-ASCII and `\u` escapes, and entries that are not messages.
    fn session_file(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
        let mut lines = vec![serde_json::json!({
            "type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z",
            "cwd": "/w"
        })];
        let mut parent = serde_json::Value::Null;
        for i in 0..n {
            let id = format!("e{i:05}");
            let ts = format!("2026-01-01T00:{:02}:{:02}Z", i / 60 % 60, i % 60);
            let long = format!(
                "line {i}\n\t  indented   text \"quoted\" {}\n",
                "word ".repeat(i % 90)
            );
            let message = match i % 7 {
                0 => serde_json::json!({"role": "user", "content": long}),
                1 => serde_json::json!({"role": "assistant", "content": [
                    {"type": "text", "text": long},
                    {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "/a b"}}
                ], "stopReason": "toolUse"}),
                2 => {
                    serde_json::json!({"role": "toolResult", "toolName": "bash", "isError": i % 2 == 0,
                    "content": [{"type": "text", "text": long.repeat(8)}]})
                }
                3 => serde_json::json!({"role": "user", "content": format!("é → {long}")}),
                4 => serde_json::json!({"role": "custom", "customType": "note", "content": "x"}),
                5 => serde_json::json!({"role": "bashExecution", "command": long, "output": ""}),
                _ => serde_json::Value::Null,
            };
            let entry = if message.is_null() {
                serde_json::json!({"type": "model_change", "id": id, "parentId": parent,
                    "timestamp": ts, "provider": "p", "modelId": "m"})
            } else {
                serde_json::json!({"type": "message", "id": id, "parentId": parent,
                    "timestamp": ts, "message": message})
            };
            lines.push(entry);
            parent = serde_json::Value::String(id);
        }
        let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        // A `\u` escape as the reference writes it for control characters.
        text = text.replacen("indented", "in\\u0001dented", 3);
        let path = dir.join("s.jsonl");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Every row, kept or made from its line read again, is what a full parse of its line
    /// shows, whatever the budget leaves to each way.
    #[test]
    fn rows_kept_and_rows_read_again_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = session_file(dir.path(), 3000);
        for budget in [0, KEEP_CHUNK, usize::MAX] {
            let times = Times {
                budget: Budget(std::sync::Arc::new(budget.into())),
                ..Times::default()
            };
            let (s, times) = Session::open_with(&path, times).unwrap();
            let mut kept = 0;
            for (i, r) in s.entries.iter().enumerate() {
                let mut line = vec![0u8; r.len as usize];
                s.file().read_exact_at(&mut line, r.offset).unwrap();
                let i = i as u32;
                let read_again = times.needs_line(i);
                kept += usize::from(!read_again);
                let got = times.shown(i, if read_again { &line } else { b"" });
                let (ty, preview, role) = shown_line(&line);
                if read_again && ty == "message" {
                    // Made from the recipe noted in the first pass, not a parse.
                    let k = i as usize;
                    assert!(times.starts[k + 1] > times.starts[k], "entry {i}");
                }
                assert_eq!(
                    (got.0.as_ref(), got.1.as_ref(), got.2.as_deref()),
                    (ty.as_str(), preview.as_str(), role.as_deref()),
                    "entry {i} with a budget of {budget}"
                );
            }
            let all = s.entries.len();
            match budget {
                0 => assert_eq!(kept, 0),
                KEEP_CHUNK => assert!(kept > 0 && kept < all, "{kept} of {all}"),
                _ => assert_eq!(kept, all),
            }
        }
    }

    /// Rows kept in parts (one per chunk of a file scanned in parallel) are found in the
    /// part that holds them.
    #[test]
    fn kept_parts_are_joined_in_order() {
        let part = |rows: &[(&str, Option<&str>, &str)], skip_first: bool| {
            let mut k = Kept::default();
            if skip_first {
                k.skip();
            }
            for (ty, role, preview) in rows {
                assert!(k.push(ty, *role, preview));
            }
            k
        };
        let mut all = part(&[("message", Some("user"), "user: hi")], false);
        all.append(part(&[("label", None, "[label]")], true));
        all.append(part(&[("message", Some(""), ""), ("x", None, "é")], false));
        assert_eq!(all.get(0), Some(("message", Some("user"), "user: hi")));
        assert_eq!(all.get(1), None);
        assert_eq!(all.get(2), Some(("label", None, "[label]")));
        assert_eq!(all.get(3), Some(("message", Some(""), "")));
        assert_eq!(all.get(4), Some(("x", None, "é")));
        assert_eq!(all.get(5), None);
        // A part too long for its length field is not kept.
        let mut k = Kept::default();
        assert!(!k.push(&"t".repeat(70_000), None, ""));
        assert_eq!(k.get(0), None);
    }
}
