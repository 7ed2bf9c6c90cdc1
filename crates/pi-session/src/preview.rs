//! One-line previews of entries, for the tree view and listings.

use std::borrow::Cow;

use pi_base::json::{self, Kind as JsonKind, Member, RawStr};

/// Longest preview kept, in characters.
pub const MAX: usize = 200;

fn field<'a>(line: &'a [u8], members: &[Member<'_>], key: &str) -> Option<&'a [u8]> {
    json::field(line, members, key)
}

fn string(v: Option<&[u8]>) -> Option<String> {
    v.and_then(RawStr::from_value)
        .map(|s| s.decode().into_owned())
}

/// `raw[..n]` (the inside of a valid JSON string, cut for a preview) without the escape the
/// cut splits, if any: the preview then shows the text up to it, not a stray backslash.
fn cut_raw(raw: &[u8], n: usize) -> &[u8] {
    if n >= raw.len() {
        return raw;
    }
    // An escape split by the cut starts within its last six bytes (`\uXXXX`). The last
    // backslash there starts an escape when the run of backslashes it ends is odd.
    for p in (n.saturating_sub(6)..n).rev() {
        if raw[p] != b'\\' {
            continue;
        }
        let run = raw[..=p].iter().rev().take_while(|&&c| c == b'\\').count();
        if run % 2 == 0 {
            return &raw[..n]; // an escaped backslash: the escape ends at p + 1 <= n
        }
        let len = if raw.get(p + 1) == Some(&b'u') { 6 } else { 2 };
        return if p + len > n { &raw[..p] } else { &raw[..n] };
    }
    &raw[..n]
}

/// The start of a string value, decoded (enough for a preview; long tool outputs are not
/// decoded whole).
fn string_prefix(v: &[u8], max: usize) -> String {
    // Not `RawStr::from_value`: that looks through the whole (maybe long) string.
    if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
        let raw = &v[1..v.len() - 1];
        json::decode_str(cut_raw(raw, max)).into_owned()
    } else {
        String::new()
    }
}

/// Members of an object value, as a key → value lookup.
struct Obj<'a, 'm> {
    v: &'a [u8],
    members: Cow<'m, [Member<'a>]>,
}

impl<'a> Obj<'a, '_> {
    #[cfg(test)]
    fn new(v: &'a [u8]) -> Self {
        Obj {
            v,
            members: Cow::Owned(json::members_valid(v).unwrap_or_default()),
        }
    }
    fn get(&self, key: &str) -> Option<&'a [u8]> {
        self.members
            .iter()
            .rev()
            .find(|m| m.key.eq_str(key))
            .map(|m| &self.v[m.value_start..m.value_end])
    }
    #[cfg(test)]
    fn str(&self, key: &str) -> Option<String> {
        string(self.get(key))
    }
}

/// Collapses whitespace runs (newlines, tabs) to single spaces and trims.
pub fn normalize(s: &str) -> String {
    normalize_max(s, usize::MAX)
}

/// [`normalize`], stopped once it has more than `max` characters: its start, all a preview
/// cut to `max` characters needs.
fn normalize_max(s: &str, max: usize) -> String {
    normalize_at(s, max).0
}

/// [`normalize_max`], and where it stopped when it stopped before the end of `s` (nothing
/// after that point, one character of look-ahead aside, changes the result).
fn normalize_at(s: &str, max: usize) -> (String, Option<usize>) {
    const LIMIT: usize = MAX * 4;
    let mut out = String::with_capacity(s.len().min(LIMIT + 8).min(max.saturating_add(8)));
    let mut chars = 0usize;
    let mut space = false;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii() {
            if matches!(c, b' ' | b'\t'..=b'\r') {
                space = !out.is_empty();
                i += 1;
                continue;
            }
            // A run of other ASCII characters, copied at once: as one by one, it stops
            // after the character that takes the text past the limit.
            // A single space between two of them is kept as it is, so it is part of the run.
            let start = i;
            if space {
                out.push(' ');
                chars += 1;
                space = false;
            }
            // What may still be taken; the run is looked at one character further.
            let room = (LIMIT + 1)
                .saturating_sub(out.len())
                .max(1)
                .min(max.saturating_add(1).saturating_sub(chars).max(1));
            let stop = b.len().min(start.saturating_add(room + 1));
            i = run_end(b, i, stop);
            let mut take = (i - start).min(room);
            if b[start + take - 1] == b' ' {
                take += 1; // a space comes out with the character after it
            }
            out.push_str(&s[start..start + take]);
            chars += take;
        } else {
            let Some(ch) = s[i..].chars().next() else {
                break;
            };
            i += ch.len_utf8();
            if ch.is_whitespace() {
                space = !out.is_empty();
                continue;
            }
            if space {
                out.push(' ');
                chars += 1;
                space = false;
            }
            out.push(ch);
            chars += 1;
        }
        if out.len() > LIMIT || chars > max {
            return (out, Some(i));
        }
    }
    (out, None)
}

/// [`normalize_at`] of the JSON string inside `raw` as decoded ([`json::decode_str`]),
/// made from the raw bytes in one pass: the text, and whether it stopped before the end.
/// `None` when `raw` holds a byte this pass leaves to the decoder: a non-ASCII byte or a
/// `\u` escape.
fn normalize_raw(raw: &[u8], max: usize) -> Option<(String, bool)> {
    const LIMIT: usize = MAX * 4;
    // All ASCII: characters are bytes, so `out.len()` counts both.
    let mut out = Vec::with_capacity(raw.len().min(LIMIT + 8).min(max.saturating_add(8)));
    let mut space = false;
    let mut i = 0;
    while i < raw.len() {
        let c = match raw[i] {
            b'\\' => {
                // A backslash at the end (the text was cut) decodes as itself.
                let letter = raw.get(i + 1).copied().unwrap_or(b'\\');
                i = (i + 2).min(raw.len());
                json::simple_escape(letter)?
            }
            c if c.is_ascii() => {
                i += 1;
                c
            }
            _ => return None,
        };
        if matches!(c, b' ' | b'\t'..=b'\r') {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(b' ');
            space = false;
        }
        out.push(c);
        // The plain run after it, copied at once, as `normalize_at` copies runs: up to the
        // character that passes a limit, and a space only with the character after it.
        let room = (LIMIT + 1)
            .min(max.saturating_add(1))
            .saturating_sub(out.len());
        if room > 0 {
            let end = plain_run_end(raw, i, raw.len().min(i.saturating_add(room + 1)));
            let mut take = (end - i).min(room);
            if take > 0 && take < end - i && raw[i + take - 1] == b' ' {
                take += 1;
            }
            out.extend_from_slice(&raw[i..i + take]);
            i += take;
        }
        if out.len() > LIMIT || out.len() > max {
            return Some((String::from_utf8(out).ok()?, true));
        }
    }
    Some((String::from_utf8(out).ok()?, false))
}

/// [`run_end`] for raw JSON string bytes: a backslash ends the run too.
fn plain_run_end(raw: &[u8], i: usize, stop: usize) -> usize {
    let end = run_end(raw, i, stop);
    match memchr::memchr(b'\\', &raw[i..end]) {
        Some(k) => {
            // A space kept in the run for the byte after it, when that byte is the
            // backslash, is left to the escape's handling.
            let k = i + k;
            if k > i && raw[k - 1] == b' ' {
                k - 1
            } else {
                k
            }
        }
        None => end,
    }
}

/// Whether `c` is copied as part of a run: ASCII and not whitespace.
fn other(c: u8) -> bool {
    c.is_ascii() && !matches!(c, b' ' | b'\t'..=b'\r')
}

/// Where the run of `b` that starts at `i` ends, looking no further than `stop`: the first
/// byte that is not [`other`] and is not a single space before an [`other`] byte.
fn run_end(b: &[u8], mut i: usize, stop: usize) -> usize {
    // Eight bytes at a time, the class of each in its high bit (no carry crosses a byte:
    // every sum below stays under 0x100 per byte).
    const HI: u64 = u64::from_ne_bytes([0x80; 8]);
    const LOW: u64 = u64::from_ne_bytes([0x7f; 8]);
    let splat = |c: u8| u64::from_ne_bytes([c; 8]);
    while i + 8 <= stop {
        let Some(chunk) = b.get(i..).and_then(|r| r.first_chunk::<8>()) else {
            break;
        };
        let v = u64::from_le_bytes(*chunk);
        let low = v & LOW;
        let non_ascii = v & HI;
        let from_tab = (low + splat(0x80 - b'\t')) & HI;
        let past_cr = (low + splat(0x80 - b'\r' - 1)) & HI;
        let x = low ^ splat(b' ');
        let space = !((x + LOW) | x) & HI & !non_ascii;
        let other_bits = !(non_ascii | space | (from_tab & !past_cr)) & HI;
        let next_other = (other_bits >> 8)
            | if b.get(i + 8).is_some_and(|&c| other(c)) {
                0x80 << 56
            } else {
                0
            };
        let ends = !(other_bits | (space & next_other)) & HI;
        if ends != 0 {
            return i + (ends.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < stop && (other(b[i]) || (b[i] == b' ' && b.get(i + 1).is_some_and(|&n| other(n)))) {
        i += 1;
    }
    i
}

/// The text of a content value: a string, or the `text` blocks joined with `sep`.
pub(crate) fn content_text(content: &[u8], sep: &str, limit: usize) -> String {
    match JsonKind::of(content) {
        Some(JsonKind::String) => string_prefix(content, limit.saturating_mul(4)),
        Some(JsonKind::Array) => {
            let mut out = String::new();
            let mut first = true;
            let _ = json::for_each_element_members_valid(content, |block| {
                if out.len() > limit {
                    return;
                }
                let b = Obj {
                    v: content,
                    members: Cow::Borrowed(block.unwrap_or_default()),
                };
                if b.get("type") == Some(b"\"text\"")
                    && let Some(t) = b.get("text")
                {
                    if !first {
                        out.push_str(sep);
                    }
                    first = false;
                    out.push_str(&string_prefix(t, limit.saturating_mul(4)));
                }
            });
            out
        }
        _ => String::new(),
    }
}

/// The arguments of a tool call that tell most about it: the first one present is shown.
const MAIN_ARGS: [&str; 6] = ["path", "command", "pattern", "file_path", "query", "url"];

/// A message's role, if the entry is a message.
pub fn role(line: &[u8], members: &[Member<'_>]) -> Option<String> {
    field(line, members, "message").and_then(|m| json::get_str(m, "role").map(|r| r.into_owned()))
}

/// The preview of a message value (its text, not yet cut to [`MAX`]) and its role.
fn message_text(msg: &[u8]) -> (String, Option<String>) {
    let mut recipe = Vec::new();
    gather_value(msg, 0, &mut recipe);
    render(msg, &recipe)
}

/// Appends the recipe of the message value at `base[at..]` (offsets into `base`), scanning
/// it.
pub fn gather_value(base: &[u8], at: usize, out: &mut Vec<u32>) {
    let (mut members, mut elements, mut subs) = (Vec::new(), Vec::new(), Vec::new());
    let scanned = json::deep_members_valid(base, at, DEEP, &mut |depth, at, m| match depth {
        json::Depth::Inner => members.push(m),
        json::Depth::Element => elements.push((at, m)),
        json::Depth::Sub => subs.push((at, m)),
    });
    if scanned.is_err() {
        (members, elements, subs) = (Vec::new(), Vec::new(), Vec::new());
    }
    gather(base, &members, &elements, &subs, out);
}

/// What a preview needs below an entry's top level: the members of its `message`, of that
/// message's `content` blocks, and of the blocks' `arguments`.
pub const DEEP: json::Deep = json::Deep {
    key: "message",
    list: "content",
    sub: "arguments",
};

// A recipe: where the parts of a message's preview are, as offsets into the text that holds
// the message (its line), so that the preview can be made later from that text without
// parsing it again. Words: a head (role code, flags), the span of one more value the role
// needs, then the parts in order: [`TEXT`] and a span, or [`CALL`] and two spans (the name,
// the argument shown). A span is a value's start and end; (0, 0) when there is none.
const ROLE_NONE: u32 = 0;
const ROLE_USER: u32 = 1;
const ROLE_ASSISTANT: u32 = 2;
const ROLE_TOOL: u32 = 3;
const ROLE_BASH: u32 = 4;
const ROLE_CUSTOM: u32 = 5;
const ROLE_OTHER: u32 = 6;
const IS_ERROR: u32 = 1 << 8;
const ABORTED: u32 = 1 << 9;
const TEXT: u32 = 0;
const CALL: u32 = 1;
/// Tool calls past this many cannot reach the shown part of a preview (each adds at least
/// its `, ` separator).
const MAX_CALLS: usize = MAX;

/// Appends the recipe of the message whose `members` (offsets into `base`) are given, with
/// the members below them (see [`DEEP`]: `elements` and `subs`, each with the offset of the
/// object that holds it).
pub fn gather(
    base: &[u8],
    members: &[Member<'_>],
    elements: &[(usize, Member<'_>)],
    subs: &[(usize, Member<'_>)],
    out: &mut Vec<u32>,
) {
    let last = |k: &str| members.iter().rev().find(|m| m.key.eq_str(k));
    let span =
        |m: Option<&Member<'_>>| m.map_or([0, 0], |m| [m.value_start as u32, m.value_end as u32]);
    let value = |k: &str| last(k).map(|m| &base[m.value_start..m.value_end]);
    let role_member = last("role");
    let role = role_member
        .and_then(|m| RawStr::from_value(&base[m.value_start..m.value_end]))
        .map(|r| r.decode());
    let mut head = match role.as_deref() {
        None => ROLE_NONE,
        Some("user") => ROLE_USER,
        Some("assistant") => ROLE_ASSISTANT,
        Some("toolResult") => ROLE_TOOL,
        Some("bashExecution") => ROLE_BASH,
        Some("custom") => ROLE_CUSTOM,
        Some(_) => ROLE_OTHER,
    };
    let aux = match head {
        ROLE_OTHER => span(role_member),
        ROLE_TOOL => {
            if value("isError") == Some(b"true") {
                head |= IS_ERROR;
            }
            span(last("toolName"))
        }
        ROLE_BASH => span(last("command")),
        ROLE_CUSTOM => span(last("customType")),
        ROLE_ASSISTANT => {
            if value("stopReason") == Some(b"\"aborted\"") {
                head |= ABORTED;
            }
            span(last("errorMessage"))
        }
        _ => [0, 0],
    };
    out.extend([head, aux[0], aux[1]]);
    if matches!(
        head & 0xff,
        ROLE_USER | ROLE_ASSISTANT | ROLE_TOOL | ROLE_CUSTOM
    ) && let Some(c) = last("content")
    {
        let calls = head & 0xff == ROLE_ASSISTANT;
        gather_parts(
            base,
            (c.value_start, c.value_end),
            calls,
            (elements, subs),
            out,
        );
    }
}

/// The members of `list` whose object starts in `span`, object by object: (its offset, its
/// members). `list` is in file order, so an object's members are adjacent.
fn objects_in<'l, 'a>(
    list: &'l [(usize, Member<'a>)],
    span: (usize, usize),
) -> impl Iterator<Item = (usize, &'l [(usize, Member<'a>)])> {
    let from = list.partition_point(|(o, _)| *o < span.0);
    let to = list.partition_point(|(o, _)| *o < span.1);
    let mut rest = &list[from..to.max(from)];
    std::iter::from_fn(move || {
        let &(at, _) = rest.first()?;
        let n = rest.iter().take_while(|(o, _)| *o == at).count();
        let (one, more) = rest.split_at(n);
        rest = more;
        Some((at, one))
    })
}

/// The parts of the content value `base[span]` (see [`content_parts`]): its text blocks as
/// long as they can still be shown, and with `calls` its tool calls. `deep` holds the
/// members of the blocks and of their arguments.
type DeepLists<'l, 'a> = (&'l [(usize, Member<'a>)], &'l [(usize, Member<'a>)]);

fn gather_parts(
    base: &[u8],
    (start, end): (usize, usize),
    calls: bool,
    (elements, subs): DeepLists<'_, '_>,
    out: &mut Vec<u32>,
) {
    const LIMIT: usize = MAX * 4;
    let span = |m: &Member<'_>| [m.value_start as u32, m.value_end as u32];
    let value = |m: &Member<'_>| &base[m.value_start..m.value_end];
    match JsonKind::of(&base[start..end]) {
        Some(JsonKind::String) => out.extend([TEXT, start as u32, end as u32]),
        Some(JsonKind::Array) => {
            // Text decoded from a part is at least a sixth of the raw bytes taken (`\uXXXX`
            // gives one byte or more), so past this bound no later text part is used.
            let mut least = 0usize;
            let mut n_calls = 0usize;
            for (_, block) in objects_in(elements, (start, end)) {
                let last = |k: &str| block.iter().rev().map(|(_, m)| m).find(|m| m.key.eq_str(k));
                let ty = last("type");
                if least <= LIMIT
                    && ty.is_some_and(|t| value(t) == b"\"text\"")
                    && let Some(t) = last("text")
                {
                    let [s, e] = span(t);
                    out.extend([TEXT, s, e]);
                    let v = value(t);
                    if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
                        let raw = (v.len() - 2).min(LIMIT * 4);
                        least += raw.saturating_sub(6) / 6;
                    }
                }
                if calls
                    && n_calls < MAX_CALLS
                    && ty
                        .and_then(|t| RawStr::from_value(value(t)))
                        .is_some_and(|t| t.eq_str("toolCall"))
                {
                    n_calls += 1;
                    let [ns, ne] = last("name").map_or([0, 0], span);
                    // The argument the preview shows (see `args_summary`).
                    let main = last("arguments").and_then(|a| {
                        let args = objects_in(subs, (a.value_start, a.value_start + 1))
                            .next()
                            .map_or(&[][..], |(_, m)| m);
                        MAIN_ARGS.iter().find_map(|k| {
                            args.iter().rev().map(|(_, m)| m).find(|m| m.key.eq_str(k))
                        })
                    });
                    let [a_s, a_e] = main.map_or([0, 0], span);
                    out.extend([CALL, ns, ne, a_s, a_e]);
                }
            }
        }
        _ => {}
    }
}

/// The parts of a recipe, read from the text the recipe was made from.
struct Parts<'a, 'r> {
    base: &'a [u8],
    recipe: &'r [u32],
}

impl<'a> Parts<'a, '_> {
    fn slice(&self, k: usize) -> Option<&'a [u8]> {
        let (s, e) = (*self.recipe.get(k)?, *self.recipe.get(k + 1)?);
        (e > s)
            .then(|| self.base.get(s as usize..e as usize))
            .flatten()
    }

    /// The parts after the head: (kind, index of its first span).
    fn each(&self) -> impl Iterator<Item = (u32, usize)> + '_ {
        let mut k = 3;
        std::iter::from_fn(move || {
            let kind = *self.recipe.get(k)?;
            let at = k + 1;
            k += if kind == TEXT { 3 } else { 5 };
            Some((kind, at))
        })
    }

    /// The text parts joined with `sep` as `content_parts` joins the blocks, normalized and
    /// cut as a preview shows it ([`normalize_max`] to [`MAX`] characters).
    fn text(&self, sep: &str) -> String {
        const LIMIT: usize = MAX * 4;
        // Most previews end inside the first part: it is decoded a little at a time until
        // normalizing stops before the end of what was decoded (a cut escape or character
        // only changes the last few bytes), which is then the whole answer.
        if let Some(v) = self
            .each()
            .find_map(|(kind, at)| (kind == TEXT).then(|| self.slice(at)).flatten())
            && v.len() >= 2
            && v[0] == b'"'
            && v[v.len() - 1] == b'"'
        {
            let raw = &v[1..v.len() - 1];
            let cut = cut_raw(raw, LIMIT * 4);
            let full = cut.len();
            match normalize_raw(cut, MAX) {
                Some((t, true)) => return t,
                // The whole part was taken: the other parts may follow it.
                Some((_, false)) => return self.joined(sep),
                None => {}
            }
            let mut n = full.min(512);
            loop {
                let decoded = json::decode_str(cut_raw(raw, n));
                match normalize_at(&decoded, MAX) {
                    (t, Some(stop)) if n == full || stop + 8 <= decoded.len() => return t,
                    _ if n == full => break,
                    _ => n = full.min(n * 4),
                }
            }
        }
        self.joined(sep)
    }

    /// The text parts decoded, joined with `sep` and normalized ([`Parts::text`] when the
    /// first part does not settle it alone).
    fn joined(&self, sep: &str) -> String {
        const LIMIT: usize = MAX * 4;
        let mut out = String::new();
        let mut first = true;
        for (kind, at) in self.each() {
            if kind != TEXT || out.len() > LIMIT {
                continue;
            }
            if let Some(t) = self.slice(at) {
                if !first {
                    out.push_str(sep);
                }
                first = false;
                out.push_str(&string_prefix(t, LIMIT * 4));
            }
        }
        normalize_max(&out, MAX)
    }

    /// The tool calls, `name main-argument` joined with `, `.
    fn calls(&self) -> String {
        let mut found: Vec<String> = Vec::new();
        for (kind, at) in self.each() {
            if kind != CALL {
                continue;
            }
            let name = self
                .slice(at)
                .and_then(RawStr::from_value)
                .map(|r| r.decode().into_owned())
                .unwrap_or_default();
            let args = self
                .slice(at + 2)
                .map(|v| normalize_max(&string_prefix(v, MAX * 4), MAX))
                .unwrap_or_default();
            found.push(if args.is_empty() {
                name
            } else {
                format!("{name} {args}")
            });
        }
        found.join(", ")
    }
}

/// The preview (not yet cut to [`MAX`]) and role of a message from its recipe (made by
/// [`gather`] from `base`).
pub fn render(base: &[u8], recipe: &[u32]) -> (String, Option<String>) {
    let (text, role) = render_cow(base, recipe);
    (text, role.map(Cow::into_owned))
}

/// `parts` joined into one string allocated once.
fn cat(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        s.push_str(p);
    }
    s
}

/// [`render`] with the usual roles as static strings (nothing allocated for them).
pub fn render_cow(base: &[u8], recipe: &[u32]) -> (String, Option<Cow<'static, str>>) {
    let word = |k: usize| recipe.get(k).copied().unwrap_or(0);
    let slice = |s: u32, e: u32| -> Option<&[u8]> {
        (e > s).then(|| base.get(s as usize..e as usize)).flatten()
    };
    let head = word(0);
    let aux = slice(word(1), word(2));
    let aux_str = || {
        aux.and_then(RawStr::from_value)
            .map(|r| r.decode().into_owned())
    };
    let role = match head & 0xff {
        ROLE_NONE => None,
        ROLE_USER => Some(Cow::Borrowed("user")),
        ROLE_ASSISTANT => Some(Cow::Borrowed("assistant")),
        ROLE_TOOL => Some(Cow::Borrowed("toolResult")),
        ROLE_BASH => Some(Cow::Borrowed("bashExecution")),
        ROLE_CUSTOM => Some(Cow::Borrowed("custom")),
        _ => aux_str().map(Cow::Owned),
    };
    let parts = Parts { base, recipe };
    let text = match head & 0xff {
        ROLE_USER => cat(&["user: ", &parts.text("")]),
        ROLE_ASSISTANT => {
            let (t, calls) = (parts.text(" "), parts.calls());
            match (t.is_empty(), calls.is_empty()) {
                (false, true) => cat(&["assistant: ", &t]),
                (false, false) => cat(&["assistant: ", &t, " → ", &calls]),
                (true, false) => cat(&["assistant: → ", &calls]),
                (true, true) if head & ABORTED != 0 => "assistant: (aborted)".into(),
                (true, true) => match aux_str() {
                    Some(e) => cat(&["assistant: error: ", &normalize_max(&e, MAX)]),
                    None => "assistant: (no content)".into(),
                },
            }
        }
        ROLE_TOOL => {
            let name = aux_str().unwrap_or_default();
            let err = if head & IS_ERROR != 0 { " error:" } else { "" };
            cat(&["[", &name, "]", err, " ", &parts.text(" ")])
        }
        ROLE_BASH => cat(&[
            "[bash]: ",
            &normalize_max(
                &aux.map(|c| string_prefix(c, MAX * 4)).unwrap_or_default(),
                MAX,
            ),
        ]),
        ROLE_CUSTOM => cat(&["[", &aux_str().unwrap_or_default(), "]: ", &parts.text("")]),
        _ => cat(&["[", role.as_deref().unwrap_or_default(), "]"]),
    };
    (text, role)
}

/// A one-line description of an entry: `user: …`, `assistant: …`, `[compaction: 12k tokens]`.
pub fn preview(ty: &str, line: &[u8], members: &[Member<'_>]) -> String {
    preview_and_role(ty, line, members).0
}

/// [`preview`] and, for a message, its role ([`role`]), reading the message once.
pub fn preview_and_role(ty: &str, line: &[u8], members: &[Member<'_>]) -> (String, Option<String>) {
    let mut message_role = None;
    let text = match ty {
        "message" => {
            let Some(msg) = field(line, members, "message") else {
                return ("[message]".into(), role(line, members));
            };
            let (text, role) = message_text(msg);
            message_role = role;
            text
        }
        "custom_message" => format!(
            "[{}]: {}",
            string(field(line, members, "customType")).unwrap_or_default(),
            normalize_max(
                &content_text(
                    field(line, members, "content").unwrap_or(b"null"),
                    "",
                    MAX * 4
                ),
                MAX
            )
        ),
        "compaction" => {
            let t = field(line, members, "tokensBefore")
                .and_then(json::number)
                .unwrap_or(0.0);
            format!("[compaction: {}k tokens]", (t / 1000.0).round())
        }
        "branch_summary" => format!(
            "[branch summary]: {}",
            normalize_max(
                &string(field(line, members, "summary")).unwrap_or_default(),
                MAX
            )
        ),
        "model_change" => format!(
            "[model: {}]",
            string(field(line, members, "modelId")).unwrap_or_default()
        ),
        "thinking_level_change" => format!(
            "[thinking: {}]",
            string(field(line, members, "thinkingLevel")).unwrap_or_default()
        ),
        "custom" => format!(
            "[custom: {}]",
            string(field(line, members, "customType")).unwrap_or_default()
        ),
        "label" => match string(field(line, members, "label")).filter(|l| !l.is_empty()) {
            Some(l) => format!("[label: {l}]"),
            None => "[label: (cleared)]".into(),
        },
        "session_info" => match string(field(line, members, "name")).map(|n| n.trim().to_owned()) {
            Some(n) if !n.is_empty() => format!("[title: {n}]"),
            _ => "[title: (cleared)]".into(),
        },
        other => format!("[{other}]"),
    };
    let role = if ty == "message" {
        message_role
    } else {
        role(line, members)
    };
    (pi_base::text::truncate(&text, MAX), role)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `normalize` one character at a time, as it was before the ASCII runs.
    fn normalize_chars(s: &str) -> String {
        let mut out = String::new();
        let mut space = false;
        for c in s.chars() {
            if c.is_whitespace() {
                space = !out.is_empty();
            } else {
                if space {
                    out.push(' ');
                    space = false;
                }
                out.push(c);
                if out.len() > MAX * 4 {
                    break;
                }
            }
        }
        out
    }

    /// The preview of a message value as it was made before recipes: every value looked up
    /// in the message as parsed again, the text cut only once it is all decoded.
    fn old_message_text(msg: &[u8]) -> (String, Option<String>) {
        let m = Obj::new(msg);
        let role = m.str("role");
        let name = role.clone().unwrap_or_default();
        let content = m.get("content").unwrap_or(b"null");
        let calls = || {
            let mut found: Vec<String> = Vec::new();
            if JsonKind::of(content) == Some(JsonKind::Array) {
                let _ = json::for_each_element_members_valid(content, |block| {
                    let b = Obj {
                        v: content,
                        members: Cow::Borrowed(block.unwrap_or_default()),
                    };
                    if b.str("type").as_deref() == Some("toolCall") {
                        let name = b.str("name").unwrap_or_default();
                        let args = b
                            .get("arguments")
                            .map(|args| {
                                let a = Obj::new(args);
                                MAIN_ARGS
                                    .iter()
                                    .find_map(|k| a.get(k))
                                    .map(|v| normalize_max(&string_prefix(v, MAX * 4), MAX))
                                    .unwrap_or_default()
                            })
                            .unwrap_or_default();
                        found.push(if args.is_empty() {
                            name
                        } else {
                            format!("{name} {args}")
                        });
                    }
                });
            }
            found.join(", ")
        };
        let text = |sep| normalize_max(&content_text(content, sep, MAX * 4), MAX);
        let text = match name.as_str() {
            "user" => format!("user: {}", text("")),
            "assistant" => {
                let (t, calls) = (text(" "), calls());
                let body = match (t.is_empty(), calls.is_empty()) {
                    (false, true) => t,
                    (false, false) => format!("{t} → {calls}"),
                    (true, false) => format!("→ {calls}"),
                    (true, true) if m.get("stopReason") == Some(b"\"aborted\"") => {
                        "(aborted)".into()
                    }
                    (true, true) => match m.str("errorMessage") {
                        Some(e) => format!("error: {}", normalize_max(&e, MAX)),
                        None => "(no content)".into(),
                    },
                };
                format!("assistant: {body}")
            }
            "toolResult" => {
                let name = m.str("toolName").unwrap_or_default();
                let err = m.get("isError") == Some(b"true");
                format!("[{name}]{} {}", if err { " error:" } else { "" }, text(" "))
            }
            "bashExecution" => format!(
                "[bash]: {}",
                normalize_max(
                    &m.get("command")
                        .map(|c| string_prefix(c, MAX * 4))
                        .unwrap_or_default(),
                    MAX
                )
            ),
            "custom" => format!(
                "[{}]: {}",
                m.str("customType").unwrap_or_default(),
                text("")
            ),
            r => format!("[{r}]"),
        };
        (text, role)
    }

    /// Message values of every role, with text blocks long and short, escapes, whitespace
    /// runs, repeated keys, values of the wrong type and many tool calls.
    fn message_value() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            4 => "[a-z]{1,12}".prop_map(|s| s),
            2 => Just(" ".to_owned()),
            1 => Just("\\n\\n   \\t".to_owned()),
            1 => Just("\\\"q\\\"".to_owned()),
            1 => Just("\\u00e9\\ud83d\\ude00".to_owned()),
            1 => Just("é→ \u{3000}".to_owned()),
            1 => Just(" ".repeat(300)),
        ];
        let text =
            proptest::collection::vec(piece, 0..400).prop_map(|v| format!("\"{}\"", v.concat()));
        let block = prop_oneof![
            text.clone().prop_map(|t| format!(r#"{{"type":"text","text":{t}}}"#)),
            text.clone().prop_map(|t| format!(r#"{{"text":{t},"type":"text","text":"second"}}"#)),
            text.clone().prop_map(|t| format!(r#"{{"type":"thinking","thinking":{t}}}"#)),
            Just(r#"{"type":"text","text":42}"#.to_owned()),
            Just(r#"{"type":"tool\u0043all","name":"bash","arguments":{"command":"ls -la","path":7}}"#.to_owned()),
            text.clone().prop_map(|t| format!(r#"{{"type":"toolCall","name":"edit","arguments":{{"x":1,"path":{t},"path":"b.rs"}}}}"#)),
            Just(r#"{"type":"toolCall","arguments":[1],"name":null}"#.to_owned()),
            Just(r#"{"type":"toolCall","name":"","arguments":{}}"#.to_owned()),
            Just(r#""loose""#.to_owned()),
            Just("{}".to_owned()),
        ];
        let content = prop_oneof![
            text.clone(),
            proptest::collection::vec(block, 0..6).prop_map(|b| format!("[{}]", b.join(","))),
            (1usize..300).prop_map(|n| format!(
                "[{}]",
                vec![r#"{"type":"toolCall","name":"","arguments":{}}"#; n].join(",")
            )),
            Just("null".to_owned()),
        ];
        let role = prop_oneof![
            Just(r#""user""#),
            Just(r#""assistant""#),
            Just(r#""toolResult""#),
            Just(r#""bashExecution""#),
            Just(r#""custom""#),
            Just(r#""branchSummary""#),
            Just(r#""us\u0065r""#),
            Just("5"),
        ];
        let extra = prop_oneof![
            Just(""),
            Just(r#","isError":true,"toolName":"read""#),
            Just(r#","stopReason":"aborted""#),
            Just(r#","errorMessage":"boom\n  went","toolName":3"#),
            Just(r#","command":"cargo   test","customType":"note""#),
        ];
        (role, content.clone(), extra, content)
            .prop_map(|(r, c, e, c2)| format!(r#"{{"role":{r},"content":{c2},"content":{c}{e}}}"#))
    }

    /// [`preview`] of a `message` entry from its `message` value, and the message's role.
    fn message_preview(msg: &[u8]) -> (String, Option<String>) {
        let (text, role) = message_text(msg);
        (pi_base::text::truncate(&text, MAX), role)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        #[test]
        fn recipes_give_the_previews_of_a_full_parse(msg in message_value()) {
            let line = format!(r#"{{"type":"message","id":"a","message":{msg}}}"#);
            // Previews are cut to `MAX` characters: only that much has to agree.
            let cut = |(t, r): (String, Option<String>)| (pi_base::text::truncate(&t, MAX), r);
            let want = cut(old_message_text(msg.as_bytes()));
            // From the message value alone, as other callers make it ...
            proptest::prop_assert_eq!(&message_preview(msg.as_bytes()), &want);
            // ... and from what the index pass collects in the line.
            let (mut nested, mut elements, mut subs) = (Vec::new(), Vec::new(), Vec::new());
            let scanned = json::scan_object_deep(line.as_bytes(), 0, DEEP, |_| {}, &mut |d, at, m| {
                match d {
                    json::Depth::Inner => nested.push(m),
                    json::Depth::Element => elements.push((at, m)),
                    json::Depth::Sub => subs.push((at, m)),
                }
            });
            proptest::prop_assert!(scanned.is_ok(), "{line}");
            let mut recipe = Vec::new();
            gather(line.as_bytes(), &nested, &elements, &subs, &mut recipe);
            proptest::prop_assert_eq!(cut(render(line.as_bytes(), &recipe)), want);
        }
    }

    proptest::proptest! {
        #[test]
        fn raw_normalizing_matches_decoding_first(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["a", "bc", " ", "  ", "\\n", "\\t", "\\r", "\\f",
                    "\\b", "\\\"", "\\\\", "\\/", "\\u0041", "é", "xyz ", "\t", "\u{1}", " \\n",
                    "word word "]),
                0..300,
            ),
            cut in 0usize..4000,
            max in proptest::sample::select(vec![0usize, 1, 2, 3, 4, 5, 7, 199, 200, 201, 800]),
        ) {
            let raw = parts.concat();
            // Cut anywhere, as the preview cuts long texts (maybe inside an escape).
            let raw = &raw.as_bytes()[..cut.min(raw.len())];
            let want = normalize_at(&json::decode_str(raw), max);
            match normalize_raw(raw, max) {
                Some((text, stopped)) => {
                    proptest::prop_assert_eq!(&text, &want.0, "{:?}", String::from_utf8_lossy(raw));
                    proptest::prop_assert_eq!(stopped, want.1.is_some());
                }
                None => proptest::prop_assert!(
                    raw.iter().any(|&b| !b.is_ascii()) || raw.windows(2).any(|w| w == b"\\u")
                ),
            }
        }

        #[test]
        fn a_cut_text_decodes_to_the_start_of_the_whole(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["a", " ", "\\n", "\\\\", "\\\"", "\\/",
                    "\\u0041", "\\u00e9", "xyz"]),
                0..60,
            ),
            n in 0usize..400,
        ) {
            let raw = parts.concat();
            let raw = raw.as_bytes();
            let cut = cut_raw(raw, n);
            proptest::prop_assert!(raw.starts_with(cut));
            proptest::prop_assert!(cut.len() <= n && cut.len() + 6 > n.min(raw.len()));
            let whole = json::decode_str(raw);
            let start = json::decode_str(cut);
            proptest::prop_assert!(whole.starts_with(&*start), "{:?} cut at {}", whole, n);
        }

        #[test]
        fn run_ends_match_a_byte_loop(
            text in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b' ', b'\t', b'\n', b'\r', 0x0b, 0x0c, 0x08,
                    0x0e, 0x1f, 0x7f, 0x80, 0xc3, 0xa0, 0xa9, 0xe9, b'~', b'!']),
                0..40,
            ),
            from in 0usize..40,
            to in 0usize..48,
        ) {
            let from = from.min(text.len());
            let stop = to.clamp(from, text.len());
            let mut want = from;
            while want < stop
                && (other(text[want])
                    || (text[want] == b' ' && text.get(want + 1).is_some_and(|&n| other(n))))
            {
                want += 1;
            }
            proptest::prop_assert_eq!(run_end(&text, from, stop), want);
        }

        #[test]
        fn normalize_matches_one_character_at_a_time_on_any_text(
            text in proptest::collection::vec(
                proptest::sample::select(vec!["a", "bc", " ", "  ", "\t", "\n", "\u{b}", "é",
                    "\u{3000}", "\u{85}", "\u{1}", "xyz ", "\r\n"]),
                0..400,
            ),
            max in proptest::sample::select(vec![0usize, 1, 7, 199, 200, 201, 800]),
        ) {
            let text = text.concat();
            proptest::prop_assert_eq!(normalize(&text), normalize_chars(&text));
            let full = pi_base::text::truncate(&normalize(&text), max);
            proptest::prop_assert_eq!(pi_base::text::truncate(&normalize_max(&text, max), max), full);
        }
    }

    #[test]
    fn normalize_matches_one_character_at_a_time() {
        let long = "word ".repeat(400);
        let wide = "é\u{3000}→ x\u{2028}".repeat(300);
        let cases = [
            "",
            "  a\tb\n\nc  ",
            "\u{1c}x\u{0b}y\u{0c}z\u{85}w\u{a0}v",
            long.as_str(),
            wide.as_str(),
            &"a".repeat(2000),
            &format!("{} {}", "a".repeat(800), "b".repeat(10)),
            &format!("{}é{}", "a".repeat(799), "b".repeat(10)),
            &format!("{} é", "a".repeat(799)),
            &"ab cd ".repeat(300),
            &"a b".repeat(400),
            &format!("{} b c", "a".repeat(799)),
            &format!("{} b", "a".repeat(798)),
            &format!("x{}", " y".repeat(500)),
            " a  b \t c ",
            &format!("{} b c", "a".repeat(800)),
        ];
        for c in cases {
            assert_eq!(normalize(c), normalize_chars(c), "{c:?}");
            for max in [0, 1, 5, 199, 200, 201, 799, 800] {
                let full = pi_base::text::truncate(&normalize(c), max);
                assert_eq!(
                    pi_base::text::truncate(&normalize_max(c, max), max),
                    full,
                    "{c:?} {max}"
                );
            }
        }
    }
}
