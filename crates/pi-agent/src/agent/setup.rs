//! What a run is set up from, decided as the reference decides it at startup: the prompt's
//! template or skill expansion, and the thinking level (the system prompt is
//! `pi_prompt::system::Sources`).

use std::path::PathBuf;

use pi_ai::models::{Details, Model, clamp_thinking_level};
use pi_prompt::resources::Resources;
use pi_prompt::skills::{self, ExpandError};
use pi_prompt::templates;

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
    use pi_ai::models::Source;

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
