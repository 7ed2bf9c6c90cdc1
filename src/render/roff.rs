//! A Markdown page as a manual page: pulldown-cmark reads the Markdown, the `roff` crate
//! writes (and escapes) the page. `#` is the name line, `##` sections, `###` subsections;
//! paragraphs, bulleted lists, code blocks (a `console` block's `? N` line reads as the exit
//! status), and tables, whose rows become tagged paragraphs (the first cell as the tag, the
//! others as `header: cell`). Links to other pages name the manual page (`pi-run-rpc(7)`);
//! links within the page keep their text only; web links show their address.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use roff::{Inline, Roff, bold, italic, roman};

/// The page `name(section)` from the Markdown `md`; `section_of` tells whether a linked
/// page (`pi-run`) is a manual page, and in which section.
pub fn page(
    name: &str,
    section: u8,
    version: &str,
    md: &str,
    section_of: &dyn Fn(&str) -> Option<u8>,
) -> String {
    let mut w = Writer::new(name, section_of, false);
    let section = section.to_string();
    let footer = format!("pi {version}");
    w.roff
        .control("TH", [name, section.as_str(), "\"\"", footer.as_str()]);
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        w.event(event);
    }
    w.flush();
    w.roff.render()
}

/// Sections of a page (`## Input` …) as manual page sections, to follow those a page
/// already has: no title line, and no DESCRIPTION heading of its own.
pub fn sections(name: &str, md: &str, section_of: &dyn Fn(&str) -> Option<u8>) -> String {
    let mut w = Writer::new(name, section_of, true);
    // `[..]` stands for what differs from run to run in the tested examples.
    let md = md.replace("[..]", "…");
    for event in Parser::new_ext(&md, Options::ENABLE_TABLES) {
        w.event(event);
    }
    w.flush();
    w.roff.to_roff()
}

/// A table being read: its header cells, the row being read, and the cell being read.
#[derive(Default)]
struct Table {
    header: Vec<Vec<Inline>>,
    row: Vec<Vec<Inline>>,
    in_head: bool,
}

struct Writer<'a> {
    roff: Roff,
    section_of: &'a dyn Fn(&str) -> Option<u8>,
    name: &'a str,
    /// The text line being collected.
    line: Vec<Inline>,
    bold: u32,
    italic: u32,
    /// The targets of the links being read.
    links: Vec<String>,
    /// In a code block: whether it is a `console` block.
    code: Option<bool>,
    /// In a heading: its level and text.
    heading: Option<(HeadingLevel, String)>,
    table: Option<Table>,
    /// How deep in list items.
    items: u32,
    /// Whether the name and description headings are out.
    started: bool,
}

impl<'a> Writer<'a> {
    /// A writer of page `name`; `started`: its DESCRIPTION heading is taken as written.
    fn new(name: &'a str, section_of: &'a dyn Fn(&str) -> Option<u8>, started: bool) -> Self {
        Writer {
            roff: Roff::new(),
            section_of,
            name,
            line: Vec::new(),
            bold: 0,
            italic: 0,
            links: Vec::new(),
            code: None,
            heading: None,
            table: None,
            items: 0,
            started,
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => self.inline(bold(t.to_string())),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.line.push(roff::line_break()),
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.flush();
                self.heading = Some((level, String::new()));
            }
            Tag::Paragraph if self.items == 0 && self.table.is_none() => {
                self.begin_text();
                self.roff.control("PP", []);
            }
            Tag::Item => {
                self.begin_text();
                self.items += 1;
                self.roff.control("IP", ["\\(bu", "2"]);
            }
            Tag::CodeBlock(kind) => {
                self.begin_text();
                let console =
                    matches!(&kind, CodeBlockKind::Fenced(info) if info.as_ref() == "console");
                self.code = Some(console);
                self.roff
                    .control("PP", [])
                    .control("RS", ["4"])
                    .control("nf", []);
            }
            Tag::Table(_) => {
                self.begin_text();
                self.table = Some(Table::default());
            }
            Tag::TableHead => {
                if let Some(t) = &mut self.table {
                    t.in_head = true;
                }
            }
            Tag::TableCell => self.line.clear(),
            Tag::Strong => self.bold += 1,
            Tag::Emphasis => self.italic += 1,
            Tag::Link { dest_url, .. } => self.links.push(dest_url.to_string()),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => self.heading_done(),
            TagEnd::Paragraph if self.table.is_none() => self.flush(),
            TagEnd::Item => {
                self.flush();
                self.items = self.items.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                self.code = None;
                self.roff.control("fi", []).control("RE", []);
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.line);
                if let Some(t) = &mut self.table {
                    t.row.push(cell);
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.header = std::mem::take(&mut t.row);
                    t.in_head = false;
                }
            }
            TagEnd::TableRow => self.row_done(),
            TagEnd::Table => self.table = None,
            TagEnd::Strong => self.bold = self.bold.saturating_sub(1),
            TagEnd::Emphasis => self.italic = self.italic.saturating_sub(1),
            TagEnd::Link => self.link_done(),
            _ => {}
        }
    }

    /// Text: a line of a code block, a heading's words, or running text in the current font.
    fn text(&mut self, t: &str) {
        if let Some((_, h)) = &mut self.heading {
            h.push_str(t);
            return;
        }
        if let Some(console) = self.code {
            for l in t.lines() {
                let l = match l.strip_prefix("? ") {
                    Some(code) if console => format!("[exit status {}]", code.trim()),
                    _ => l.to_owned(),
                };
                self.roff.text([roman(l)]);
            }
            return;
        }
        let inline = if self.bold > 0 {
            bold(t)
        } else if self.italic > 0 {
            italic(t)
        } else {
            roman(t)
        };
        self.inline(inline);
    }

    fn inline(&mut self, i: Inline) {
        self.line.push(i);
    }

    /// The NAME and DESCRIPTION headings come before the first text of the page.
    fn begin_text(&mut self) {
        self.flush();
        if !self.started {
            self.started = true;
            self.roff.control("SH", ["DESCRIPTION"]);
        }
    }

    /// Writes the collected line, if any.
    fn flush(&mut self) {
        if !self.line.is_empty() {
            self.roff.text(std::mem::take(&mut self.line));
        }
    }

    fn heading_done(&mut self) {
        let Some((level, text)) = self.heading.take() else {
            return;
        };
        match level {
            HeadingLevel::H1 => {
                self.roff.control("SH", ["NAME"]);
                self.roff.text([roman(format!("{} - {text}", self.name))]);
            }
            HeadingLevel::H2 => {
                self.begin_text();
                self.roff.control("SH", [text.to_uppercase().as_str()]);
            }
            _ => {
                self.begin_text();
                self.roff.control("SS", [text.as_str()]);
            }
        }
    }

    /// After a link's text: the page it names, or the address of a web link.
    fn link_done(&mut self) {
        let Some(target) = self.links.pop() else {
            return;
        };
        let page = target
            .split('#')
            .next()
            .unwrap_or("")
            .strip_suffix(".md")
            .unwrap_or("");
        if let Some(section) = (self.section_of)(page) {
            self.line.push(roman(" ("));
            self.line.push(bold(page));
            self.line.push(roman(format!("({section}))")));
        } else if target.starts_with("http") {
            self.line.push(roman(format!(" <{target}>")));
        }
    }

    /// A body row of a table: a tagged paragraph.
    fn row_done(&mut self) {
        let Some(t) = &mut self.table else {
            return;
        };
        if t.in_head {
            return;
        }
        let mut row = std::mem::take(&mut t.row).into_iter();
        let tag = row.next().unwrap_or_default();
        let mut body: Vec<Inline> = Vec::new();
        for (k, cell) in row.enumerate() {
            if cell.is_empty() {
                continue;
            }
            if !body.is_empty() {
                body.push(roman("; "));
            }
            if let Some(h) = t.header.get(k + 1).filter(|h| !h.is_empty()) {
                body.extend(h.iter().cloned());
                body.push(roman(": "));
            }
            body.extend(cell);
        }
        self.roff.control("TP", []).text(tag).text(body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections(page: &str) -> Option<u8> {
        match page {
            "pi-run" => Some(1),
            "pi-run-rpc" => Some(7),
            _ => None,
        }
    }

    #[test]
    fn inline_markdown() {
        let md = "# T\n\nsee [`pi run`](pi-run.md#x) and **this** *too*; [below](#trust), `a\\b`, \
                  [its page](pi-run-rpc.md), `*.md` [..] 2 * 3, [site](https://example.com)\n";
        let page = page("pi-t", 7, "1.0", md, &sections);
        assert!(
            page.contains(
                "see \\fBpi run\\fR (\\fBpi\\-run\\fR(1)) and \\fBthis\\fR \\fItoo\\fR; below, \\fBa\\\\b\\fR, \
                 its page (\\fBpi\\-run\\-rpc\\fR(7)), \\fB*.md\\fR [..] 2 * 3, site <https://example.com>\n"
            ),
            "{page}"
        );
    }

    #[test]
    fn tables_and_code() {
        let md = "# T\n\nIntro `x`.\n\n## Fields\n\n| field | meaning |\n|---|---|\n| `a` | the a |\n\n\
                  - one\n- two\n\n```console\n$ pi x\n.dot\n? 2\n```\n";
        let page = page("pi-t", 7, "1.0", md, &sections);
        assert!(page.contains(".TH pi-t 7 \"\" \"pi 1.0\"\n"), "{page}");
        assert!(
            page.contains(".SH NAME\npi\\-t \\- T\n.SH DESCRIPTION\n.PP\nIntro \\fBx\\fR.\n"),
            "{page}"
        );
        assert!(
            page.contains(".SH FIELDS\n.TP\n\\fBa\\fR\nmeaning: the a\n"),
            "{page}"
        );
        assert!(
            page.contains(".IP \\(bu 2\none\n.IP \\(bu 2\ntwo\n"),
            "{page}"
        );
        assert!(
            page.contains(".nf\n$ pi x\n\\&.dot\n[exit status 2]\n.fi\n.RE\n"),
            "{page}"
        );
    }
}
