//! `read {path, offset?, limit?}`: a text file from a 1-based line on, cut at 2000 lines or
//! 50KB with a notice saying where to continue; or an image as an attachment.
//!
//! The file is streamed: memory stays bounded by the output limits whatever its size, while
//! the line counts in the notices still cover the whole file.

use std::fs::File;
use std::io::Read;

use base64::Engine;
use serde::Deserialize;
use serde_json::json;

use super::image;
use super::path::{access, io_message, io_message_no_path, resolve_read_path};
use super::text::Utf8Decoder;
use super::truncate::{DEFAULT_MAX_BYTES, Limits, TruncatedBy, Truncation, format_size};
use super::{CancelToken, Content, ToolContext, ToolError, ToolOutput, js_int};
use pi_base::js;

#[derive(Debug, Clone, Deserialize)]
pub struct ReadArgs {
    pub path: String,
    #[serde(default)]
    pub offset: Option<f64>,
    #[serde(default)]
    pub limit: Option<f64>,
}

/// Images are sent as they are only below these sizes (upstream resizes larger ones; we
/// leave them out with a note, see docs/tools.md).
const MAX_IMAGE_SIDE: u32 = 2000;
const MAX_IMAGE_BASE64: usize = 4_718_592; // 4.5 MiB

const NON_VISION_NOTE: &str =
    "[Current model does not support images. The image will be omitted from this request.]";
const OMITTED_NOTE: &str =
    "[Image omitted: could not be resized below the inline image size limit.]";

/// Reads the file. `cancel` stops a read that would not end by itself (a device or pipe).
pub(crate) fn run(
    ctx: &ToolContext,
    args: &ReadArgs,
    cancel: &CancelToken,
) -> Result<ToolOutput, ToolError> {
    let abs = resolve_read_path(&args.path, &ctx.cwd);
    access(&abs, libc::R_OK).map_err(|e| ToolError(io_message(&e, "access", &abs)))?;
    let mut file = File::open(&abs).map_err(|e| ToolError(io_message(&e, "open", &abs)))?;
    let mut head = Vec::with_capacity(image::SNIFF_BYTES);
    (&mut file)
        .take(image::SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| ToolError(io_message_no_path(&e, "read")))?;
    if let Some(mime) = image::sniff_mime(&head) {
        return read_image(ctx, file, head, mime);
    }
    read_text(args, file, head, cancel)
}

fn read_image(
    ctx: &ToolContext,
    mut file: File,
    mut data: Vec<u8>,
    mime: &str,
) -> Result<ToolOutput, ToolError> {
    let size = file.metadata().map(|m| m.len()).unwrap_or(0) as usize;
    let base64_len = size.div_ceil(3) * 4;
    let mut note = format!("Read image file [{mime}]");
    let vision_note = |note: &mut String| {
        if ctx.model_accepts_images == Some(false) {
            note.push('\n');
            note.push_str(NON_VISION_NOTE);
        }
    };
    if ctx.auto_resize_images && base64_len >= MAX_IMAGE_BASE64 {
        note.push('\n');
        note.push_str(OMITTED_NOTE);
        vision_note(&mut note);
        return Ok(ToolOutput::text(note));
    }
    file.read_to_end(&mut data)
        .map_err(|e| ToolError(io_message_no_path(&e, "read")))?;
    if ctx.auto_resize_images {
        let fits = image::dimensions(&data, mime)
            .is_some_and(|(w, h)| w <= MAX_IMAGE_SIDE && h <= MAX_IMAGE_SIDE)
            && data.len().div_ceil(3) * 4 < MAX_IMAGE_BASE64;
        if !fits {
            note.push('\n');
            note.push_str(OMITTED_NOTE);
            vision_note(&mut note);
            return Ok(ToolOutput::text(note));
        }
    }
    vision_note(&mut note);
    Ok(ToolOutput {
        content: vec![
            Content::text(note),
            Content::Image {
                data: base64::engine::general_purpose::STANDARD.encode(&data),
                mime_type: mime.to_owned(),
            },
        ],
        details: None,
    })
}

/// What one pass over the file learns about the selected lines.
struct Scan {
    total_lines: i64,
    /// Selected lines and their bytes when joined with `\n`.
    sel_lines: usize,
    sel_bytes: usize,
    /// Byte length of the first selected line.
    first_len: usize,
    /// The lines kept so far (those that fit the limits), joined with `\n`.
    kept: String,
    kept_lines: usize,
    keeping: bool,
    by: TruncatedBy,
    // The line being read.
    line_len: usize,
    line: String,
    line_fits: bool,
    decoder: Utf8Decoder,
}

/// The lines asked for: from `start` (0-based) up to `end` (exclusive), or to the end.
#[derive(Clone, Copy)]
struct Selection {
    start: i64,
    end: Option<i64>,
}

impl Selection {
    fn contains(self, i: i64) -> bool {
        i >= self.start && self.end.is_none_or(|e| i < e)
    }
}

fn read_text(
    args: &ReadArgs,
    file: File,
    head: Vec<u8>,
    cancel: &CancelToken,
) -> Result<ToolOutput, ToolError> {
    let limits = Limits::default();
    let offset = args.offset.filter(|o| *o != 0.0 && !o.is_nan());
    let start: i64 = offset.map_or(0, |o| (js_int(o) - 1).max(0));
    let end: Option<i64> = args.limit.map(|l| start.saturating_add(js_int(l)));
    let sel = Selection { start, end };
    let s = scan(file, head, cancel, sel, limits)?;
    let total = s.total_lines;
    if start >= total {
        let shown = offset.map_or_else(|| "undefined".to_owned(), js::number);
        return Err(ToolError(format!(
            "Offset {shown} is beyond end of file ({total} lines total)"
        )));
    }
    if s.sel_lines <= limits.max_lines && s.sel_bytes <= limits.max_bytes {
        return Ok(ToolOutput::text(whole(s.kept, sel, total)));
    }
    Ok(truncated(args, s, start, limits))
}

/// Streams the file (its first bytes, `head`, already read) through a [`Scan`] of the
/// selected lines.
fn scan(
    mut file: File,
    head: Vec<u8>,
    cancel: &CancelToken,
    sel: Selection,
    limits: Limits,
) -> Result<Scan, ToolError> {
    let mut s = Scan {
        total_lines: 0,
        sel_lines: 0,
        sel_bytes: 0,
        first_len: 0,
        kept: String::new(),
        kept_lines: 0,
        keeping: true,
        by: TruncatedBy::Lines,
        line_len: 0,
        line: String::new(),
        line_fits: true,
        decoder: Utf8Decoder::new(),
    };
    let mut chunk = head;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let mut rest: &[u8] = &chunk;
        while !rest.is_empty() {
            let (piece, done) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], Some(i + 1)),
                None => (rest, None),
            };
            if sel.contains(s.total_lines) {
                feed(&mut s, piece, limits);
            }
            match done {
                Some(n) => {
                    let was = sel.contains(s.total_lines);
                    end_line(&mut s, was, limits);
                    rest = &rest[n..];
                }
                None => rest = &[],
            }
        }
        let n = file
            .read(&mut buf)
            .map_err(|e| ToolError(io_message_no_path(&e, "read")))?;
        if n == 0 {
            break;
        }
        if cancel.is_cancelled() {
            return Err(ToolError::new("Operation aborted"));
        }
        chunk.clear();
        chunk.extend_from_slice(&buf[..n]);
    }
    let was = sel.contains(s.total_lines);
    end_line(&mut s, was, limits);
    Ok(s)
}

/// The text of a selection that fits the limits, with a notice where a `limit` stopped it
/// before the end of the file.
fn whole(mut text: String, sel: Selection, total: i64) -> String {
    let start = sel.start;
    if let Some(n) = sel.end.map(|e| e.min(total) - start)
        && start + n < total
    {
        let remaining = total - (start + n);
        let next = start + n + 1;
        text.push_str(&format!(
            "\n\n[{remaining} more lines in file. Use offset={next} to continue.]"
        ));
    }
    text
}

/// The output for a selection over the limits: the lines kept and a notice saying where to
/// continue, or only a notice when the first line alone is over the byte limit.
fn truncated(args: &ReadArgs, s: Scan, start: i64, limits: Limits) -> ToolOutput {
    let total = s.total_lines;
    let start_display = start + 1;
    let first_exceeds = s.first_len > limits.max_bytes;
    let (content, output_lines, by) = if first_exceeds {
        (String::new(), 0, TruncatedBy::Bytes)
    } else {
        let mut by = s.by;
        if s.kept_lines >= limits.max_lines && s.kept.len() <= limits.max_bytes {
            by = TruncatedBy::Lines;
        }
        (s.kept, s.kept_lines, by)
    };
    let truncation = Truncation {
        output_bytes: content.len(),
        content,
        truncated: true,
        truncated_by: Some(by),
        total_lines: s.sel_lines,
        total_bytes: s.sel_bytes,
        output_lines,
        last_line_partial: false,
        first_line_exceeds_limit: first_exceeds,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
    };
    let text = if first_exceeds {
        format!(
            "[Line {start_display} is {}, exceeds {} limit. Use bash: sed -n '{start_display}p' {} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(s.first_len),
            format_size(DEFAULT_MAX_BYTES),
            args.path
        )
    } else {
        let end_display = start_display + output_lines as i64 - 1;
        let next = end_display + 1;
        let range = format!("{start_display}-{end_display} of {total}");
        let notice = match by {
            TruncatedBy::Lines => {
                format!("[Showing lines {range}. Use offset={next} to continue.]")
            }
            TruncatedBy::Bytes => format!(
                "[Showing lines {range} ({} limit). Use offset={next} to continue.]",
                format_size(DEFAULT_MAX_BYTES)
            ),
        };
        format!("{}\n\n{notice}", truncation.content)
    };
    ToolOutput {
        content: vec![Content::text(text)],
        details: Some(json!({ "truncation": truncation.to_json() })),
    }
}

/// Adds a piece of the current (selected) line.
fn feed(s: &mut Scan, piece: &[u8], limits: Limits) {
    let mut decoded = String::new();
    s.decoder.decode(piece, &mut decoded);
    add_decoded(s, &decoded, limits);
}

fn add_decoded(s: &mut Scan, decoded: &str, limits: Limits) {
    s.line_len += decoded.len();
    if s.line_fits && s.keeping {
        if s.line.len() + decoded.len() <= limits.max_bytes + 1 {
            s.line.push_str(decoded);
        } else {
            s.line_fits = false;
            s.line.clear();
        }
    }
}

/// Ends the current line (at a newline or at the end of the file).
fn end_line(s: &mut Scan, was_selected: bool, limits: Limits) {
    if was_selected {
        let mut tail = String::new();
        s.decoder.finish(&mut tail);
        add_decoded(s, &tail, limits);
        let i = s.sel_lines;
        let cost = s.line_len + usize::from(i > 0);
        if i == 0 {
            s.first_len = s.line_len;
        }
        s.sel_lines += 1;
        s.sel_bytes += cost;
        if s.keeping {
            if i >= limits.max_lines {
                s.keeping = false;
            } else if !s.line_fits || s.kept.len() + cost > limits.max_bytes {
                s.keeping = false;
                s.by = TruncatedBy::Bytes;
            } else {
                if i > 0 {
                    s.kept.push('\n');
                }
                s.kept.push_str(&s.line);
                s.kept_lines += 1;
            }
        }
    }
    s.decoder = Utf8Decoder::new();
    s.line.clear();
    s.line_len = 0;
    s.line_fits = true;
    s.total_lines += 1;
}
