//! `find {pattern, path?, limit?}`: files and directories whose name matches a glob, found
//! with ripgrep's walker the way upstream's `fd --glob --hidden --no-require-git` finds them:
//! hidden entries included, `.gitignore` (also outside git repositories), `.ignore` and
//! `.fdignore` respected, symbolic links not followed. A pattern without `/` is matched
//! against the entry's name; one with `/` against its absolute path, with `**/` put in
//! front unless it starts with `/` or `**/`. Matching ignores case unless the pattern has an
//! upper-case letter (fd's "smart case"). Results are relative to the search directory,
//! directories end in `/`, in path order (fd's order varies from run to run).

use globset::GlobBuilder;
use ignore::WalkBuilder;
use serde::Deserialize;

use super::path::search_root;
use super::{CancelToken, ToolContext, ToolError, ToolOutput};
use pi_base::js;

pub(crate) const DEFAULT_LIMIT: usize = 1000;

#[derive(Debug, Clone, Deserialize)]
pub struct FindArgs {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub limit: Option<f64>,
}

const FD_HELP: &str = "\n\nFor more information, try '--help'.";

/// The result count as fd parses `--max-results` (upstream passes the number as text).
fn max_results(limit: f64) -> Result<usize, ToolError> {
    let text = js::number(limit);
    if text.starts_with('-') {
        return Err(ToolError(format!(
            "error: a value is required for '--max-results <count>' but none was supplied{FD_HELP}"
        )));
    }
    text.parse::<usize>().map_err(|e| {
        ToolError(format!(
            "error: invalid value '{text}' for '--max-results <count>': {e}{FD_HELP}"
        ))
    })
}

pub(crate) fn run(
    ctx: &ToolContext,
    args: &FindArgs,
    cancel: &CancelToken,
) -> Result<ToolOutput, ToolError> {
    let search = search_root(args.path.as_deref(), &ctx.cwd);
    let limit_value = args.limit.unwrap_or(DEFAULT_LIMIT as f64);
    let limit = max_results(limit_value)?;

    let full_path = args.pattern.contains('/');
    let pattern = if full_path
        && !args.pattern.starts_with('/')
        && !args.pattern.starts_with("**/")
        && args.pattern != "**"
    {
        format!("**/{}", args.pattern)
    } else {
        args.pattern.clone()
    };
    let case_sensitive = pattern.chars().any(char::is_uppercase);
    let matcher = if pattern.is_empty() {
        None
    } else {
        Some(
            GlobBuilder::new(&pattern)
                .literal_separator(true)
                .case_insensitive(!case_sensitive)
                .build()
                .map_err(|e| ToolError(format!("[fd error]: {e}")))?
                .compile_matcher(),
        )
    };

    if !std::fs::metadata(&search).is_ok_and(|m| m.is_dir()) {
        return Err(ToolError(format!(
            "[fd error]: Search path '{}' is not a directory.\n[fd error]: No valid search paths given.",
            search.display()
        )));
    }

    // fd takes `--max-results 0` as no limit.
    let limit = if limit == 0 { usize::MAX } else { limit };
    let mut results: Vec<String> = Vec::new();
    {
        let mut walk = WalkBuilder::new(&search);
        walk.hidden(false)
            .require_git(false)
            .add_custom_ignore_filename(".fdignore")
            .sort_by_file_name(|a, b| a.cmp(b));
        for entry in walk.build() {
            if cancel.is_cancelled() {
                return Err(ToolError::new("Operation aborted"));
            }
            let Ok(entry) = entry else { continue };
            if entry.depth() == 0 {
                continue;
            }
            let path = entry.path();
            let matched = match &matcher {
                None => true,
                Some(m) if full_path => m.is_match(path),
                Some(m) => path.file_name().is_some_and(|n| m.is_match(n)),
            };
            if !matched {
                continue;
            }
            let mut rel = path
                .strip_prefix(&search)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_else(|_| path.to_string_lossy().into_owned());
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                rel.push('/');
            }
            results.push(rel);
            if results.len() >= limit {
                break;
            }
        }
    }
    if results.is_empty() {
        return Ok(ToolOutput::text("No files found matching pattern"));
    }
    let limit_reached = results.len() as f64 >= limit_value;
    Ok(super::truncate::listing_output(
        &results,
        limit_reached.then_some((
            "results",
            ", or refine pattern",
            "resultLimitReached",
            limit_value,
        )),
        Vec::new(),
    ))
}
