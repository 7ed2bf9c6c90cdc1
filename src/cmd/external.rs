//! `pi foo …` runs `pi-foo` from PATH when `foo` is not built in, as git and cargo do.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use crate::cmd::help;
use crate::error::{Exit, ExitStatus};

pub fn run(args: Vec<OsString>) -> anyhow::Result<ExitStatus> {
    let Some((name, rest)) = args.split_first() else {
        return Err(crate::error::usage("no command given"));
    };
    let name = name.to_string_lossy();
    let program = format!("pi-{name}");
    let Some(path) = help::find_in_path(&program) else {
        let mut top = crate::cmd::command();
        top.build();
        let builtin = help::command_names(&top);
        let extensions = help::extensions_on_path();
        let near = help::similar(&name, builtin.iter().chain(&extensions).map(String::as_str));
        let hint = help::did_you_mean(&near).unwrap_or_else(|| {
            format!(
                "the commands are {}; `{program}` was not found on PATH either",
                builtin.join(", ")
            )
        });
        return Err(Exit::new(
            ExitStatus::Usage,
            anyhow::anyhow!("unknown command '{name}'"),
        )
        .hint(hint)
        .into());
    };
    // Only returns on failure.
    let err = std::process::Command::new(&path).args(rest).exec();
    Err(anyhow::Error::new(err).context(format!("cannot run {}", path.display())))
}
