//! `write {path, content}`: creates missing parent directories and replaces the file.

use serde::Deserialize;

use super::path::{io_message, resolve_to_cwd};
use super::{ToolContext, ToolError, ToolOutput};
use pi_base::js;

#[derive(Debug, Clone, Deserialize)]
pub struct WriteArgs {
    pub path: String,
    pub content: String,
}

/// The result says `Successfully wrote <n> bytes to <path>` with upstream's count (UTF-16
/// code units of the content) and the path as the model gave it.
pub(crate) fn run(ctx: &ToolContext, args: &WriteArgs) -> Result<ToolOutput, ToolError> {
    let abs = resolve_to_cwd(&args.path, &ctx.cwd);
    if let Some(dir) = abs.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ToolError(io_message(&e, "mkdir", dir)))?;
    }
    std::fs::write(&abs, args.content.as_bytes())
        .map_err(|e| ToolError(io_message(&e, "open", &abs)))?;
    Ok(ToolOutput::text(format!(
        "Successfully wrote {} bytes to {}",
        js::utf16_len(&args.content),
        args.path
    )))
}
