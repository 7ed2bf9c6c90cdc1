//! The settings a model call needs, read as the reference reads them
//! (`<agent dir>/settings.json`, then `<cwd>/.pi/settings.json` merged over it, objects
//! merged at every depth), and choosing the model.
//!
//! The compaction settings that a context measurement also needs (`compaction.enabled`,
//! `compaction.reserveTokens`, `images.blockImages`) are read by
//! `crate::context::settings`; this reads the others.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::auth::{self, Auth};
use crate::models::Registry;
use crate::request::{Options, RetryPolicy, Target};

/// Settings of model calls, compaction and branch summaries.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub default_provider: Option<String>,
    pub default_model: Option<String>,
    pub default_thinking_level: Option<String>,
    /// `compaction.keepRecentTokens` (default 20000).
    pub keep_recent_tokens: Option<u64>,
    /// `branchSummary.reserveTokens` (default 16384).
    pub branch_reserve_tokens: Option<u64>,
    /// `retry.provider.*` (with `retry.maxDelayMs` migrated as the reference migrates it).
    pub retry: RetryPolicy,
    /// `thinkingBudgets`: level → tokens.
    pub thinking_budgets: Vec<(String, u64)>,
    /// `compaction.modelOverrides`.
    pub compaction_overrides: CompactionOverrides,
}

/// `compaction.modelOverrides` (the reference 1.6): `reserveTokens` and `keepRecentTokens`
/// for one model, keyed by its exact `provider/modelId`. Each value, when set, comes before
/// the ordinary `compaction.*` setting.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompactionOverrides(Vec<(String, Option<u64>, Option<u64>)>);

impl CompactionOverrides {
    /// From merged settings (values that are not non-negative integers are skipped; the
    /// settings check warns of them).
    pub fn from_map(m: &Map<String, Value>) -> CompactionOverrides {
        let int = |v: Option<&Value>| {
            v.and_then(Value::as_u64)
                .filter(|n| *n <= 9_007_199_254_740_991)
        };
        let Some(o) = m
            .get("compaction")
            .and_then(|c| c.get("modelOverrides"))
            .and_then(Value::as_object)
        else {
            return CompactionOverrides::default();
        };
        CompactionOverrides(
            o.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        int(v.get("reserveTokens")),
                        int(v.get("keepRecentTokens")),
                    )
                })
                .collect(),
        )
    }

    fn entry(&self, provider: &str, id: &str) -> Option<&(String, Option<u64>, Option<u64>)> {
        self.0.iter().find(|(k, _, _)| {
            k.strip_prefix(provider)
                .and_then(|r| r.strip_prefix('/'))
                .is_some_and(|r| r == id)
        })
    }

    /// `reserveTokens` for `provider/id`, if its entry sets it.
    pub fn reserve_tokens(&self, provider: &str, id: &str) -> Option<u64> {
        self.entry(provider, id).and_then(|e| e.1)
    }

    /// `keepRecentTokens` for `provider/id`, if its entry sets it.
    pub fn keep_recent_tokens(&self, provider: &str, id: &str) -> Option<u64> {
        self.entry(provider, id).and_then(|e| e.2)
    }
}

pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;
pub const DEFAULT_BRANCH_RESERVE_TOKENS: u64 = 16_384;

/// The merged settings object.
pub fn merged(agent_dir: &Path, cwd: &Path) -> (Map<String, Value>, Vec<String>) {
    pi_base::config::settings(agent_dir, cwd)
}

fn count(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_f64)
        .filter(|f| f.is_finite() && *f >= 0.0)
        .map(|f| f as u64)
}

impl Settings {
    pub fn load(agent_dir: &Path, cwd: &Path) -> Settings {
        let (m, _) = merged(agent_dir, cwd);
        let get = |a: &str, b: &str| m.get(a).and_then(|v| v.get(b));
        let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
        let provider = get("retry", "provider");
        let p = |k: &str| count(provider.and_then(|p| p.get(k)));
        let mut retry = RetryPolicy::default();
        if let Some(n) = p("maxRetries") {
            retry.max_retries = n.min(100) as u32;
        }
        if let Some(n) = p("maxRetryDelayMs").or_else(|| count(get("retry", "maxDelayMs"))) {
            retry.max_delay_ms = n;
        }
        if let Some(n) = p("timeoutMs").filter(|n| *n > 0) {
            retry.timeout_ms = n;
        }
        let thinking_budgets = m
            .get("thinkingBudgets")
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .filter_map(|(k, v)| count(Some(v)).map(|n| (k.clone(), n)))
                    .collect()
            })
            .unwrap_or_default();
        Settings {
            default_provider: s("defaultProvider"),
            default_model: s("defaultModel"),
            default_thinking_level: s("defaultThinkingLevel"),
            keep_recent_tokens: count(get("compaction", "keepRecentTokens")),
            branch_reserve_tokens: count(get("branchSummary", "reserveTokens")),
            retry,
            thinking_budgets,
            compaction_overrides: CompactionOverrides::from_map(&m),
        }
    }
}

/// Why no model could be chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectError {
    /// `--model` or the settings name a model that is not known.
    Unknown { model: String, models_json: PathBuf },
    /// Known, but pi does not speak its API.
    Unsupported { model: String, api: String },
    /// Nothing names a model.
    None,
    /// The session's model is known but has no key, and nothing else names a model.
    SessionNoKey {
        model: String,
        provider: String,
        /// The variable the provider's key is read from, if it has one.
        env: Option<&'static str>,
        models_json: PathBuf,
    },
    /// The session's model is not known, and nothing else names a model.
    SessionUnknown { model: String, models_json: PathBuf },
}

/// What is missing for a model without a key: `ANTHROPIC_API_KEY is not set`, or that
/// nothing configures one.
fn missing_key(provider: &str, env: Option<&str>) -> String {
    match env {
        Some(v) => format!("{v} is not set"),
        None => format!("no key is configured for provider \"{provider}\""),
    }
}

impl std::fmt::Display for SelectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SelectError::Unknown { model, .. } => {
                write!(
                    f,
                    "unknown model {model} (not in models.json or the built-in table)"
                )
            }
            SelectError::Unsupported { model, api } => write!(
                f,
                "model {model} speaks the {api} API, which pi does not support"
            ),
            SelectError::None => write!(
                f,
                "no model to use: the session names none, and settings.json has no \
                 defaultProvider/defaultModel"
            ),
            SelectError::SessionNoKey {
                model,
                provider,
                env,
                ..
            } => write!(
                f,
                "no API key for the session's model {model}: {}",
                missing_key(provider, *env)
            ),
            SelectError::SessionUnknown { model, .. } => write!(
                f,
                "the session's model {model} is not in models.json or the built-in table"
            ),
        }
    }
}

impl std::error::Error for SelectError {}

/// Where the chosen model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chosen {
    Flag,
    Session,
    Default,
}

/// Chooses the model of a call: `--model`, else the session's model when it is known and
/// has a key configured (the reference's rule on resume), else `defaultProvider` and
/// `defaultModel` from settings.
pub fn select(
    registry: &Registry,
    agent_dir: &Path,
    settings: &Settings,
    flag: Option<&(String, String)>,
    session: Option<&(String, String)>,
) -> Result<(Target, Chosen), SelectError> {
    let models_json = agent_dir.join("models.json");
    let target = |p: &str, id: &str| -> Result<Target, SelectError> {
        let m = registry.find(p, id).ok_or_else(|| SelectError::Unknown {
            model: format!("{p}/{id}"),
            models_json: models_json.clone(),
        })?;
        Target::new(m.clone(), registry.details_of(p, id)).ok_or_else(|| SelectError::Unsupported {
            model: format!("{p}/{id}"),
            api: m.api.clone(),
        })
    };
    if let Some((p, id)) = flag {
        return Ok((target(p, id)?, Chosen::Flag));
    }
    if let Some((p, id)) = session
        && registry.find(p, id).is_some()
        && auth::source(agent_dir, registry, p).is_some()
        && let Ok(t) = target(p, id)
    {
        return Ok((t, Chosen::Session));
    }
    let chosen = match (&settings.default_provider, &settings.default_model) {
        (Some(p), Some(id)) => Ok((target(p, id)?, Chosen::Default)),
        (None, Some(id)) => {
            let found: Vec<_> = registry
                .models
                .iter()
                .filter(|m| &m.id == id && auth::source(agent_dir, registry, &m.provider).is_some())
                .collect();
            match found.as_slice() {
                [m] => Ok((target(&m.provider, &m.id)?, Chosen::Default)),
                _ => Err(SelectError::None),
            }
        }
        _ => Err(SelectError::None),
    };
    match (chosen, session) {
        // Nothing else names a model: say what the session's model lacks.
        (Err(SelectError::None), Some((p, id))) => Err(match registry.find(p, id) {
            Some(m) if auth::source(agent_dir, registry, p).is_some() => SelectError::Unsupported {
                model: format!("{p}/{id}"),
                api: m.api.clone(),
            },
            Some(_) => SelectError::SessionNoKey {
                model: format!("{p}/{id}"),
                provider: p.clone(),
                env: auth::key_var(p),
                models_json,
            },
            None => SelectError::SessionUnknown {
                model: format!("{p}/{id}"),
                models_json,
            },
        }),
        (chosen, _) => chosen,
    }
}

/// Why a model cannot be called.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Select(#[from] SelectError),
    /// The key or a header could not be resolved (a failing `!command`, an expired login).
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
    /// No key anywhere; `env` is the variable the provider's key is read from, if any.
    #[error("no API key for {model}: {}", missing_key(provider, *env))]
    NoKey {
        model: String,
        provider: String,
        env: Option<&'static str>,
        models_json: PathBuf,
    },
}

/// The model of a call and its key and headers (see [`select`]); a model without a key is
/// an error.
pub fn resolve(
    registry: &Registry,
    agent_dir: &Path,
    settings: &Settings,
    flag: Option<&(String, String)>,
    session: Option<&(String, String)>,
) -> Result<(Target, Auth), ModelError> {
    let (target, _) = select(registry, agent_dir, settings, flag, session)?;
    let a = auth::resolve(agent_dir, registry, &target.model, &target.details)?;
    if a.api_key.is_none() {
        let provider = target.model.provider.clone();
        return Err(ModelError::NoKey {
            model: format!("{provider}/{}", target.model.id),
            env: auth::key_var(&provider),
            provider,
            models_json: agent_dir.join("models.json"),
        });
    }
    Ok((target, a))
}

impl Settings {
    /// The options of a call with key `a`: retries and thinking budgets from the settings.
    pub fn call_options(&self, a: Auth) -> Options {
        Options {
            api_key: a.api_key,
            headers: a.headers,
            retry: self.retry,
            thinking_budgets: self.thinking_budgets.clone(),
            secrets: a.secrets,
            ..Options::default()
        }
    }
}
