//! `pi foo …` runs `pi-foo` from PATH when `foo` is not built in, as git and cargo do.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use crate::error::{Exit, ExitStatus};

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

pub fn run(args: Vec<OsString>) -> anyhow::Result<ExitStatus> {
    let Some((name, rest)) = args.split_first() else {
        return Err(crate::error::usage("no command given"));
    };
    let name = name.to_string_lossy();
    let program = format!("pi-{name}");
    let Some(path) = find_in_path(&program) else {
        return Err(
            Exit::new(ExitStatus::Usage, anyhow::anyhow!("unknown command '{name}'"))
                .hint(format!(
                    "built-in commands: session, prompt, context, compact, models, run; `{program}` was not found on PATH either"
                ))
                .into(),
        );
    };
    // Only returns on failure.
    let err = std::process::Command::new(&path).args(rest).exec();
    Err(anyhow::Error::new(err).context(format!("cannot run {}", path.display())))
}
