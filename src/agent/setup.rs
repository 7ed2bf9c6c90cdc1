//! What a run is set up from, decided as the reference decides it at startup: the system
//! prompt (with the active tools, context files, skills, date and directory), the prompt's
//! template or skill expansion, and the thinking level.

use std::path::{Path, PathBuf};

use crate::models::{Details, Model, clamp_thinking_level};
use crate::prompt::resources::Resources;
use crate::prompt::skills::{self, ExpandError};
use crate::prompt::{context, discover, file_or_literal, system, templates};
use crate::tools::Tool;

/// What the system prompt is built from.
pub struct SystemPrompt<'a> {
    /// The session's working directory.
    pub cwd: &'a Path,
    pub agent_dir: &'a Path,
    /// Where relative `--append-system-prompt` file names are taken from.
    pub launch_dir: &'a Path,
    /// The contents of `--system-prompt-file` (replaces the default text and `SYSTEM.md`).
    pub custom: Option<String>,
    /// `--append-system-prompt` values (files or text); when given, `APPEND_SYSTEM.md` is
    /// not used.
    pub append: &'a [String],
    pub context_files: bool,
    /// The active tools (built-in and program tools), in order.
    pub tools: &'a [Tool],
    pub resources: &'a Resources,
    pub now_ms: i64,
}

impl SystemPrompt<'_> {
    /// The system prompt, as `pi prompt system` prints it for the same choices, and the
    /// warnings met.
    pub fn build(&self) -> (String, Vec<String>) {
        let mut warnings = Vec::new();
        let custom = self
            .custom
            .clone()
            .or_else(|| discover(self.cwd, self.agent_dir, "SYSTEM.md", &mut warnings));
        let append: Vec<String> = if self.append.is_empty() {
            discover(self.cwd, self.agent_dir, "APPEND_SYSTEM.md", &mut warnings)
                .into_iter()
                .collect()
        } else {
            self.append
                .iter()
                .filter_map(|v| file_or_literal(v, self.launch_dir, &mut warnings))
                .collect()
        };
        let files = if self.context_files {
            context::load(self.cwd, self.agent_dir, &mut warnings)
        } else {
            Vec::new()
        };
        let tools: Vec<system::Tool> = self.tools.iter().map(|t| t.prompt()).collect();
        let text = system::build(&system::Options {
            custom_prompt: custom,
            append: (!append.is_empty()).then(|| append.join("\n\n")),
            tools: &tools,
            context_files: &files,
            skills: &self.resources.skills,
            date: crate::clock::local_date(self.now_ms),
            cwd: self.cwd.to_string_lossy().into_owned(),
        });
        (text, warnings)
    }
}

/// Why a prompt could not be expanded.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("unknown skill '{name}'")]
    UnknownSkill { name: String, known: Vec<String> },
    #[error("cannot read skill {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Expands `/skill:name args` or `/template args` as the agent does (skills first); other
/// text is returned as it is. The second value is a warning (unbalanced quotes).
pub fn expand_prompt(
    text: &str,
    resources: &Resources,
) -> Result<(String, Option<String>), PromptError> {
    match skills::expand(text, &resources.skills) {
        Ok(Some((out, _))) => return Ok((out, None)),
        Ok(None) => {}
        Err(ExpandError::Unknown(name)) => {
            return Err(PromptError::UnknownSkill {
                name,
                known: resources.skills.iter().map(|s| s.name.clone()).collect(),
            });
        }
        Err(ExpandError::Read(path, source)) => return Err(PromptError::Read { path, source }),
    }
    Ok(match templates::expand(text, &resources.templates, None) {
        Some(x) => (x.text, x.warning),
        None => (text.to_owned(), None),
    })
}

/// The thinking level of a run (upstream's startup rule): the flag, else the session's
/// latest `thinking_level_change` (when it has one), else `defaultThinkingLevel`, else
/// `medium`; then clamped to what the model supports.
pub fn thinking_level(
    flag: Option<&str>,
    session: Option<&str>,
    default: Option<&str>,
    model: &Model,
    details: &Details,
) -> &'static str {
    let wanted = flag.or(session).or(default).unwrap_or("medium");
    clamp_thinking_level(model, details, wanted)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::models::Source;

    fn model(reasoning: bool) -> Model {
        Model {
            provider: "p".into(),
            id: "m".into(),
            api: "openai-completions".into(),
            base_url: String::new(),
            reasoning,
            input: vec!["text".into()],
            context_window: 1000,
            max_tokens: 100,
            compat: serde_json::Map::new(),
            source: Source::Custom,
        }
    }

    #[test]
    fn thinking_level_rules() {
        let d = Details::default();
        assert_eq!(thinking_level(None, None, None, &model(true), &d), "medium");
        assert_eq!(
            thinking_level(Some("high"), Some("low"), None, &model(true), &d),
            "high"
        );
        assert_eq!(
            thinking_level(None, Some("low"), Some("high"), &model(true), &d),
            "low"
        );
        assert_eq!(
            thinking_level(Some("high"), None, None, &model(false), &d),
            "off"
        );
        assert_eq!(
            thinking_level(Some("xhigh"), None, None, &model(true), &d),
            "high"
        );
    }

    #[test]
    fn expansion_passes_plain_text() {
        let r = Resources::default();
        assert_eq!(expand_prompt("hello", &r).unwrap().0, "hello");
        assert!(matches!(
            expand_prompt("/skill:nope x", &r),
            Err(PromptError::UnknownSkill { .. })
        ));
    }
}
