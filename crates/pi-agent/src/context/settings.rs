//! The settings that change a context or its measurement, read as the reference reads them:
//! `<agent dir>/settings.json`, then `<cwd>/.pi/settings.json` merged over it (nested objects
//! at every depth, as the reference 1.6 merges them).

use std::path::Path;

use serde_json::Value;

/// `compaction.*` and `images.blockImages`.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub compaction_enabled: bool,
    /// `None` when no settings file sets it (the default is [`DEFAULT_RESERVE_TOKENS`]).
    pub reserve_tokens: Option<u64>,
    pub block_images: bool,
    /// Files that could not be read or parsed (they are ignored).
    pub warnings: Vec<String>,
}

pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            compaction_enabled: true,
            reserve_tokens: None,
            block_images: false,
            warnings: Vec::new(),
        }
    }
}

impl Settings {
    pub fn load(agent_dir: &Path, cwd: &Path) -> Settings {
        let mut s = Settings::default();
        let (merged, warnings) = pi_base::config::settings(agent_dir, cwd);
        s.warnings = warnings;
        let get = |a: &str, b: &str| merged.get(a).and_then(|v| v.get(b));
        if let Some(b) = get("compaction", "enabled").and_then(Value::as_bool) {
            s.compaction_enabled = b;
        }
        s.reserve_tokens = get("compaction", "reserveTokens")
            .and_then(Value::as_f64)
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64);
        s.block_images = get("images", "blockImages").and_then(Value::as_bool) == Some(true);
        s
    }
}
