//! `pi session export`

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};

use crate::cmd::Ctx;
use crate::cmd::args::{READ_SESSION_HELP, SessionArg, ViewArgs};
use crate::error::{Exit, ExitStatus, usage};
use crate::render;
use crate::render::markdown::MarkdownView;
use crate::render::redact::{self, Redactor};
use pi_session::Session;
use pi_session::scan::NoVisit;
use pi_session::store::Source;

#[derive(Debug, Args)]
#[command(mut_arg("session", |a| a.help(READ_SESSION_HELP)))]
pub struct ExportArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Write to FILE (created private, 0600) instead of stdout; `-` is stdout, also for an
    /// HTML page on a terminal
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// html: a self-contained page; md: Markdown; jsonl: a session file [default: from the
    /// extension of -o, else html]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<ExportFormat>,
    /// html: open the page on the branch of this entry; md: the path to it
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// md: every branch, not only the active path
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub view: ViewArgs,
    /// Replace secrets with [redacted]: known API keys, token shapes, KEY=value lines
    #[arg(long)]
    pub redact: bool,
    /// Also redact what REGEX matches (repeatable; implies --redact)
    #[arg(long, value_name = "REGEX")]
    pub redact_pattern: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// One self-contained HTML page with every branch
    Html,
    /// GitHub-flavoured Markdown of the active path (every branch with --all)
    Md,
    /// A session file with the same ids and tree
    Jsonl,
}

fn format_of(args: &ExportArgs) -> ExportFormat {
    if let Some(f) = args.format {
        return f;
    }
    let ext = args
        .output
        .as_deref()
        .and_then(Path::extension)
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => ExportFormat::Md,
        Some("jsonl") => ExportFormat::Jsonl,
        _ => ExportFormat::Html,
    }
}

/// Whether `path` is an existing file whose first line is a session header.
fn is_session_file(path: &Path) -> bool {
    use std::io::Read;
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::new();
    if f.take(1 << 16).read_to_end(&mut head).is_err() {
        return false;
    }
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    pi_base::json::to_value(first)
        .ok()
        .is_some_and(|v| v.get("type").and_then(|t| t.as_str()) == Some("session"))
}

/// Where the export goes: a temporary file renamed into place when done, or stdout.
enum Sink {
    File(pi_base::fs::AtomicFile),
    Stdout,
}

impl Sink {
    fn open(dest: Option<&Path>, ctx: &Ctx) -> anyhow::Result<Sink> {
        let Some(dest) = dest.filter(|d| *d != Path::new("-")) else {
            return Ok(Sink::Stdout);
        };
        let dest = ctx.cwd.join(dest);
        let f = pi_base::fs::AtomicFile::create(&dest)
            .with_context(|| format!("cannot create a file beside {}", dest.display()))?;
        Ok(Sink::File(f))
    }

    fn writer<'a>(&'a mut self, ctx: &'a mut Ctx) -> &'a mut dyn Write {
        match self {
            Sink::File(f) => f,
            Sink::Stdout => &mut ctx.out,
        }
    }

    fn commit(self, ctx: &mut Ctx) -> anyhow::Result<()> {
        match self {
            Sink::File(f) => {
                let dest = f.dest().to_owned();
                f.commit()
                    .with_context(|| format!("cannot write {}", dest.display()))
            }
            Sink::Stdout => Ok(ctx.out.flush()?),
        }
    }

    /// Leaves the destination as it was (the temporary file is removed).
    fn abandon(self) {}
}

pub fn run(args: ExportArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let source = ctx.session_source(args.session.get()?)?;
    let format = format_of(&args);
    if format == ExportFormat::Jsonl && (args.leaf.is_some() || args.all) {
        return Err(usage(
            "--leaf and --all do not apply to --format jsonl: it is the whole session",
        ));
    }
    if args.all && format != ExportFormat::Md {
        return Err(usage(
            "--all applies to --format md (a page has every branch)",
        ));
    }
    if args.output.is_none() && format == ExportFormat::Html && ctx.out.tty {
        return Err(usage(
            "an HTML page is not for a terminal: write it to a file with -o FILE \
             (or print it anyway with -o -)",
        ));
    }
    if let Some(o) = args.output.as_deref().filter(|o| *o != Path::new("-")) {
        let same = std::fs::canonicalize(ctx.cwd.join(o))
            .ok()
            .zip(match &source {
                Source::File(p) => std::fs::canonicalize(p).ok(),
                Source::Spooled { .. } => None,
            })
            .is_some_and(|(a, b)| a == b);
        if same {
            return Err(usage(format!(
                "{} is the session itself; a session file is never overwritten",
                o.display()
            )));
        }
        if is_session_file(&ctx.cwd.join(o)) {
            return Err(usage(format!(
                "{} is a session file; a session file is never overwritten",
                o.display()
            )));
        }
    }
    let mut redactor = if args.redact || !args.redact_pattern.is_empty() {
        let secrets = redact::known_secrets(&ctx.dirs.agent_dir);
        Some(Redactor::new(secrets, &args.redact_pattern).map_err(usage)?)
    } else {
        None
    };
    let (s, _) = ctx.open_source(source, NoVisit)?;
    let leaf = match &args.leaf {
        Some(l) => Some(s.resolve_entry(l)?),
        None => s.leaf(),
    };
    let mut sink = Sink::open(args.output.as_deref(), ctx)?;
    let result = write(&s, leaf, format, &args, redactor.as_mut(), sink.writer(ctx));
    match result {
        Ok(()) => sink.commit(ctx)?,
        Err(e) => {
            sink.abandon();
            return Err(e);
        }
    }
    if let Some(r) = &redactor {
        crate::error::note(&r.report());
    }
    Ok(ExitStatus::Success)
}

fn write(
    s: &Session,
    leaf: Option<u32>,
    format: ExportFormat,
    args: &ExportArgs,
    mut redactor: Option<&mut Redactor>,
    w: &mut dyn Write,
) -> anyhow::Result<()> {
    let labels = render::labels(s);
    match format {
        ExportFormat::Html => {
            render::html::write_page(s, leaf, &labels, redactor, w)?;
        }
        ExportFormat::Jsonl => {
            let header = s.header_line().unwrap_or_default();
            let all: Vec<u32> = (0..s.entries.len() as u32).collect();
            match redactor {
                None => {
                    w.write_all(&header)?;
                    w.write_all(b"\n")?;
                    s.for_each_line(&all, |_, bytes| {
                        w.write_all(bytes)?;
                        w.write_all(b"\n")
                    })?;
                }
                Some(r) => {
                    let unreadable = |e| Exit::new(ExitStatus::Usage, e);
                    let line = s.header.as_ref().map_or(1, |h| h.line as usize);
                    let lines = vec![(line, header)];
                    w.write_all(&redact::redact_lines(lines, r).map_err(unreadable)?)?;
                    for batch in all.chunks(4096) {
                        let mut lines = Vec::with_capacity(batch.len());
                        s.for_each_line(batch, |i, bytes| {
                            lines.push((s.entries[i as usize].line as usize, bytes.to_vec()));
                            Ok(())
                        })?;
                        w.write_all(&redact::redact_lines(lines, r).map_err(unreadable)?)?;
                    }
                }
            }
        }
        ExportFormat::Md => {
            let mut summary = render::summary_of(s, redactor.as_deref_mut());
            let parts = if args.all {
                render::branches(s, leaf)
            } else {
                vec![(None, leaf.map(|l| s.path_to(l)).unwrap_or_default())]
            };
            let mut view = MarkdownView::new(w, args.view.options());
            view.header(&summary)?;
            for (k, (point, order)) in parts.iter().enumerate() {
                if args.all && k > 0 {
                    let from = point.map_or_else(
                        || "a new root".to_owned(),
                        |p| format!("entry {}", s.entries[p as usize].id),
                    );
                    view.section(&format!("Branch from {from}"))?;
                }
                render::for_each_paired(
                    s,
                    order,
                    &labels,
                    redactor.as_deref_mut(),
                    &mut summary,
                    |it| view.item(it),
                )?;
            }
            view.footer(&summary)?;
        }
    }
    Ok(())
}
