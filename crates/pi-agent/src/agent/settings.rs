//! The settings of a run, read as the reference reads them (`<agent dir>/settings.json`, then
//! the session directory's `.pi/settings.json` over it): automatic retries and compaction,
//! and what the tools need.

use std::path::Path;

use serde_json::Value;

/// Settings of the agent loop and its session.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `retry.enabled` (true): try a turn again after a transient provider error.
    pub retry_enabled: bool,
    /// `retry.maxRetries` (3).
    pub max_retries: u32,
    /// `retry.baseDelayMs` (2000): the first wait; it doubles with every attempt.
    pub base_delay_ms: u64,
    /// `compaction.enabled` (true).
    pub compaction_enabled: bool,
    /// `compaction.reserveTokens` (16384).
    pub reserve_tokens: u64,
    /// `compaction.keepRecentTokens` (20000).
    pub keep_recent_tokens: u64,
    /// `compaction.modelOverrides`: the two above for one model (see [`Settings::reserves_for`]).
    pub compaction_overrides: pi_ai::config::CompactionOverrides,
    /// `images.blockImages` (false).
    pub block_images: bool,
    /// `images.autoResize` (true).
    pub auto_resize_images: bool,
    /// `shellPath`.
    pub shell_path: Option<String>,
    /// `shellCommandPrefix`.
    pub shell_command_prefix: Option<String>,
    /// `steeringMode` / `followUpMode` = `all`.
    pub steering_all: bool,
    pub follow_up_all: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            retry_enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
            compaction_enabled: true,
            reserve_tokens: crate::context::settings::DEFAULT_RESERVE_TOKENS,
            keep_recent_tokens: pi_ai::config::DEFAULT_KEEP_RECENT_TOKENS,
            compaction_overrides: Default::default(),
            block_images: false,
            auto_resize_images: true,
            shell_path: None,
            shell_command_prefix: None,
            steering_all: false,
            follow_up_all: false,
        }
    }
}

fn count(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_f64)
        .filter(|f| f.is_finite() && *f >= 0.0)
        .map(|f| f.min(u64::MAX as f64) as u64)
}

impl Settings {
    /// The settings in effect for `cwd`; problems with the files are returned as warnings
    /// (the files are then ignored).
    pub fn load(agent_dir: &Path, cwd: &Path) -> (Settings, Vec<String>) {
        let (m, warnings) = pi_ai::config::merged(agent_dir, cwd);
        (Settings::from_map(&m), warnings)
    }

    pub fn from_map(m: &serde_json::Map<String, Value>) -> Settings {
        let mut s = Settings::default();
        let get = |a: &str, b: &str| m.get(a).and_then(|v| v.get(b));
        if let Some(b) = get("retry", "enabled").and_then(Value::as_bool) {
            s.retry_enabled = b;
        }
        if let Some(n) = count(get("retry", "maxRetries")) {
            s.max_retries = n.min(1000) as u32;
        }
        if let Some(n) = count(get("retry", "baseDelayMs")) {
            s.base_delay_ms = n.min(3_600_000);
        }
        if let Some(b) = get("compaction", "enabled").and_then(Value::as_bool) {
            s.compaction_enabled = b;
        }
        if let Some(n) = count(get("compaction", "reserveTokens")) {
            s.reserve_tokens = n;
        }
        if let Some(n) = count(get("compaction", "keepRecentTokens")) {
            s.keep_recent_tokens = n;
        }
        s.compaction_overrides = pi_ai::config::CompactionOverrides::from_map(m);
        if let Some(b) = get("images", "blockImages").and_then(Value::as_bool) {
            s.block_images = b;
        }
        if let Some(b) = get("images", "autoResize").and_then(Value::as_bool) {
            s.auto_resize_images = b;
        }
        let text = |k: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        s.shell_path = text("shellPath");
        s.shell_command_prefix = text("shellCommandPrefix");
        s.steering_all = m.get("steeringMode").and_then(Value::as_str) == Some("all");
        s.follow_up_all = m.get("followUpMode").and_then(Value::as_str) == Some("all");
        s
    }

    /// `reserveTokens` and `keepRecentTokens` for model `provider/id`: each from its
    /// `compaction.modelOverrides` entry when that sets it, else the ordinary setting (the
    /// reference 1.6's `getCompactionSettings(model)`).
    pub fn reserves_for(&self, provider: &str, id: &str) -> crate::context::tokens::Reserves {
        let o = &self.compaction_overrides;
        crate::context::tokens::Reserves {
            reserve_tokens: o
                .reserve_tokens(provider, id)
                .unwrap_or(self.reserve_tokens),
            keep_recent_tokens: o
                .keep_recent_tokens(provider, id)
                .unwrap_or(self.keep_recent_tokens),
        }
    }

    /// The wait before retry `attempt` (1-based): `baseDelayMs × 2^(attempt−1)`.
    pub(crate) fn retry_delay_ms(&self, attempt: u32) -> u64 {
        let shift = attempt.saturating_sub(1).min(40);
        self.base_delay_ms.saturating_mul(1u64 << shift)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let d = Settings::default();
        assert_eq!(
            (d.max_retries, d.base_delay_ms, d.reserve_tokens),
            (3, 2000, 16384)
        );
        assert_eq!([1, 2, 3].map(|a| d.retry_delay_ms(a)), [2000, 4000, 8000]);
        let m: serde_json::Map<String, Value> = serde_json::from_str(
            r#"{"retry":{"enabled":false,"maxRetries":1,"baseDelayMs":5},
                "compaction":{"enabled":false,"reserveTokens":100,"keepRecentTokens":50},
                "shellPath":"/bin/sh","steeringMode":"all"}"#,
        )
        .unwrap();
        let s = Settings::from_map(&m);
        assert!(!s.retry_enabled && !s.compaction_enabled && s.steering_all);
        assert_eq!((s.max_retries, s.base_delay_ms), (1, 5));
        assert_eq!((s.reserve_tokens, s.keep_recent_tokens), (100, 50));
        assert_eq!(s.shell_path.as_deref(), Some("/bin/sh"));
    }
}
