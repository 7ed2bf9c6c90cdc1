//! `pi session show`

use clap::{Args, ValueEnum};

use crate::cmd::Ctx;
use crate::cmd::args::{READ_SESSION_HELP, SessionArg, ViewArgs};
use crate::error::ExitStatus;
use crate::output::term_width;
use crate::pager::Pager;
use crate::render;
use crate::render::markdown::MarkdownView;
use crate::render::text::{Terminal, TextView};
use pi_session::scan::NoVisit;

#[derive(Debug, Args)]
#[command(mut_arg("session", |a| a.help(READ_SESSION_HELP)))]
pub struct ShowArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Show the path to this entry (id or unique prefix) instead of the session's leaf
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    #[command(flatten)]
    pub view: ViewArgs,
    /// text: for reading (colours and wrapping on a terminal); md: GitHub-flavoured Markdown
    #[arg(long, value_enum, default_value_t = ShowFormat::Text, value_name = "FORMAT")]
    pub format: ShowFormat,
    /// Print everything at once instead of through $PAGER
    #[arg(long)]
    pub no_pager: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// Text to read: on a terminal in colour, wrapped and paged
    Text,
    /// GitHub-flavoured Markdown
    Md,
}

pub fn run(args: ShowArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let source = ctx.session_source(args.session.get()?)?;
    let (s, _) = ctx.open_source(source, NoVisit)?;
    let leaf = match &args.leaf {
        Some(l) => Some(s.resolve_entry(l)?),
        None => s.leaf(),
    };
    let order = leaf.map(|l| s.path_to(l)).unwrap_or_default();
    let labels = render::labels(&s).with_edits(&s, &order)?;
    let mut summary = render::summary_of(&s, None);
    let opts = args.view.options();
    let tty = ctx.out.tty;
    let term = Terminal {
        color: ctx.out.color() && args.format == ShowFormat::Text,
        escape: tty && args.format == ShowFormat::Text,
        width: if tty && args.format == ShowFormat::Text {
            term_width()
        } else {
            0
        },
    };
    let mut pager = Pager::new(&mut ctx.out, !args.no_pager);
    match args.format {
        ShowFormat::Text => {
            let mut view = TextView::new(&mut pager, opts, term);
            view.header(&summary)?;
            render::for_each_paired(&s, &order, &labels, None, &mut summary, |it| view.item(it))?;
            view.footer(&summary)?;
        }
        ShowFormat::Md => {
            let mut view = MarkdownView::new(&mut pager, opts);
            view.header(&summary)?;
            render::for_each_paired(&s, &order, &labels, None, &mut summary, |it| view.item(it))?;
            view.footer(&summary)?;
        }
    }
    pager.finish()?;
    Ok(ExitStatus::Success)
}
