//! Markdown to HTML for the page, with pulldown-cmark's parser and our own writer: every
//! piece of text is escaped, raw HTML in the Markdown is shown as text, links keep only
//! safe destinations (`http`, `https`, `mailto`, fragments), images become links (the page
//! loads nothing), and fenced code is highlighted.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::{escape_into, escape_text_into};
use crate::render::highlight::{self, Lang};

/// Longest Markdown text rendered as Markdown; longer text is shown as preformatted text.
pub const MAX: usize = 512 * 1024;

fn safe_url(url: &str) -> Option<&str> {
    let u = url.trim();
    let lower = u.to_ascii_lowercase();
    let ok = lower.starts_with("http://")
        || lower.starts_with("https://")
        || lower.starts_with("mailto:")
        || lower.starts_with('#');
    ok.then_some(u)
}

/// Appends the HTML of Markdown `text` to `out`.
pub fn render(text: &str, out: &mut String) {
    if text.len() > MAX {
        out.push_str("<pre class=\"plain\">");
        escape_text_into(text, out);
        out.push_str("</pre>");
        return;
    }
    let opts = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let mut code: Option<(Lang, String)> = None;
    // Whether the cells being written are in the table's head, and the columns' alignment.
    let mut in_head = false;
    let mut aligns: Vec<Alignment> = Vec::new();
    let mut cell = 0;
    // Inside an image: its alt text is written as the link's text.
    let mut image_depth = 0usize;
    for ev in Parser::new_ext(text, opts) {
        if let Some((_, buf)) = &mut code {
            match ev {
                Event::Text(t) => {
                    buf.push_str(&t);
                    continue;
                }
                Event::End(TagEnd::CodeBlock) => {}
                _ => continue,
            }
        }
        match ev {
            Event::Start(tag) => match tag {
                Tag::Paragraph => out.push_str("<p>"),
                Tag::Heading { level, .. } => {
                    // Headings inside a message are kept below the page's own.
                    let n = match level {
                        HeadingLevel::H1 | HeadingLevel::H2 => 3,
                        HeadingLevel::H3 => 4,
                        HeadingLevel::H4 => 5,
                        _ => 6,
                    };
                    out.push_str(&format!("<h{n}>"));
                }
                Tag::BlockQuote(_) => out.push_str("<blockquote>"),
                Tag::CodeBlock(kind) => {
                    let lang = match &kind {
                        CodeBlockKind::Fenced(info) => {
                            highlight::lang_of(info.split([' ', ',', '{']).next().unwrap_or(""))
                        }
                        CodeBlockKind::Indented => Lang::Plain,
                    };
                    code = Some((lang, String::new()));
                }
                Tag::HtmlBlock => out.push_str("<pre class=\"html\">"),
                Tag::List(Some(start)) => {
                    if start == 1 {
                        out.push_str("<ol>");
                    } else {
                        out.push_str(&format!("<ol start=\"{start}\">"));
                    }
                }
                Tag::List(None) => out.push_str("<ul>"),
                Tag::Item => out.push_str("<li>"),
                Tag::FootnoteDefinition(_) => out.push_str("<div class=\"fn\">"),
                Tag::DefinitionList => out.push_str("<dl>"),
                Tag::DefinitionListTitle => out.push_str("<dt>"),
                Tag::DefinitionListDefinition => out.push_str("<dd>"),
                Tag::Table(a) => {
                    aligns = a;
                    out.push_str("<table>");
                }
                Tag::TableHead => {
                    in_head = true;
                    cell = 0;
                    out.push_str("<thead><tr>");
                }
                Tag::TableRow => {
                    cell = 0;
                    out.push_str("<tr>");
                }
                Tag::TableCell => {
                    let t = if in_head { "th" } else { "td" };
                    let class = match aligns.get(cell) {
                        Some(Alignment::Left) => " class=\"al\"",
                        Some(Alignment::Center) => " class=\"ac\"",
                        Some(Alignment::Right) => " class=\"ar\"",
                        _ => "",
                    };
                    out.push_str(&format!("<{t}{class}>"));
                }
                Tag::Emphasis => out.push_str("<em>"),
                Tag::Strong => out.push_str("<strong>"),
                Tag::Strikethrough => out.push_str("<del>"),
                Tag::Superscript => out.push_str("<sup>"),
                Tag::Subscript => out.push_str("<sub>"),
                Tag::Link { dest_url, .. } => match safe_url(&dest_url) {
                    Some(u) => {
                        out.push_str("<a rel=\"noopener noreferrer\" href=\"");
                        escape_into(u, out);
                        out.push_str("\">");
                    }
                    None => out.push_str("<a>"),
                },
                Tag::Image { dest_url, .. } => {
                    image_depth += 1;
                    match safe_url(&dest_url) {
                        Some(u) => {
                            out.push_str("<a class=\"img\" rel=\"noopener noreferrer\" href=\"");
                            escape_into(u, out);
                            out.push_str("\">[image: ");
                        }
                        None => out.push_str("<a class=\"img\">[image: "),
                    }
                }
                Tag::MetadataBlock(_) => out.push_str("<pre class=\"meta\">"),
            },
            Event::End(end) => match end {
                TagEnd::Paragraph => out.push_str("</p>\n"),
                TagEnd::Heading(level) => {
                    let n = match level {
                        HeadingLevel::H1 | HeadingLevel::H2 => 3,
                        HeadingLevel::H3 => 4,
                        HeadingLevel::H4 => 5,
                        _ => 6,
                    };
                    out.push_str(&format!("</h{n}>\n"));
                }
                TagEnd::BlockQuote(_) => out.push_str("</blockquote>\n"),
                TagEnd::CodeBlock => {
                    if let Some((lang, buf)) = code.take() {
                        out.push_str("<pre class=\"code\"><code>");
                        highlight::highlight(&buf, lang, out);
                        out.push_str("</code></pre>\n");
                    }
                }
                TagEnd::HtmlBlock => out.push_str("</pre>\n"),
                TagEnd::List(true) => out.push_str("</ol>\n"),
                TagEnd::List(false) => out.push_str("</ul>\n"),
                TagEnd::Item => out.push_str("</li>\n"),
                TagEnd::FootnoteDefinition => out.push_str("</div>\n"),
                TagEnd::DefinitionList => out.push_str("</dl>\n"),
                TagEnd::DefinitionListTitle => out.push_str("</dt>\n"),
                TagEnd::DefinitionListDefinition => out.push_str("</dd>\n"),
                TagEnd::Table => out.push_str("</tbody></table>\n"),
                TagEnd::TableHead => {
                    in_head = false;
                    out.push_str("</tr></thead><tbody>");
                }
                TagEnd::TableRow => out.push_str("</tr>\n"),
                TagEnd::TableCell => {
                    out.push_str(if in_head { "</th>" } else { "</td>" });
                    cell += 1;
                }
                TagEnd::Emphasis => out.push_str("</em>"),
                TagEnd::Strong => out.push_str("</strong>"),
                TagEnd::Strikethrough => out.push_str("</del>"),
                TagEnd::Superscript => out.push_str("</sup>"),
                TagEnd::Subscript => out.push_str("</sub>"),
                TagEnd::Link => out.push_str("</a>"),
                TagEnd::Image => {
                    image_depth = image_depth.saturating_sub(1);
                    out.push_str("]</a>");
                }
                TagEnd::MetadataBlock(_) => out.push_str("</pre>\n"),
            },
            Event::Text(t) => escape_text_into(&t, out),
            Event::Code(t) => {
                out.push_str("<code>");
                escape_text_into(&t, out);
                out.push_str("</code>");
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                out.push_str("<code class=\"math\">");
                escape_into(&t, out);
                out.push_str("</code>");
            }
            // Raw HTML is text here: it is shown, never interpreted.
            Event::Html(t) | Event::InlineHtml(t) => {
                out.push_str("<span class=\"raw\">");
                escape_text_into(&t, out);
                out.push_str("</span>");
            }
            Event::FootnoteReference(t) => {
                out.push_str("<sup>[");
                escape_into(&t, out);
                out.push_str("]</sup>");
            }
            Event::SoftBreak => out.push('\n'),
            Event::HardBreak => out.push_str("<br>\n"),
            Event::Rule => out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => out.push_str(if done {
                "<input type=\"checkbox\" disabled checked> "
            } else {
                "<input type=\"checkbox\" disabled> "
            }),
        }
    }
    // An unterminated code block (cannot happen with a balanced parser, but cheap to cover).
    if let Some((lang, buf)) = code.take() {
        out.push_str("<pre class=\"code\"><code>");
        highlight::highlight(&buf, lang, out);
        out.push_str("</code></pre>");
    }
    let _ = image_depth;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(s: &str) -> String {
        let mut out = String::new();
        render(s, &mut out);
        out
    }

    #[test]
    fn markup_is_rendered_and_html_is_text() {
        assert_eq!(
            md("**a** `b`"),
            "<p><strong>a</strong> <code>b</code></p>\n"
        );
        let x = md("<script>alert(1)</script>\n\nx <img src=x onerror=alert(1)> y");
        assert!(!x.contains("<script") && !x.contains("<img"), "{x}");
        assert!(x.contains("&lt;script&gt;"), "{x}");
        let l = md("[a](javascript:alert(1)) [b](https://e.com/?a=\"x\") ![c](http://e.com/i.png)");
        assert!(!l.contains("javascript"), "{l}");
        assert!(l.contains("href=\"https://e.com/?a=&quot;x&quot;\""), "{l}");
        assert!(l.contains("[image: c]") && !l.contains("<img"), "{l}");
        let c = md("```rust\nfn x() {}\n```");
        assert!(c.contains("<hk>fn</hk>"), "{c}");
        let t = md("| a | b |\n|:-|-:|\n| 1 | 2 |");
        assert!(
            t.contains("<th class=\"al\">a</th>") && t.contains("<td class=\"ar\">2</td>"),
            "{t}"
        );
    }
}
