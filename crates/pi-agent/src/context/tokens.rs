//! Token arithmetic, as the reference does it: a character estimate (UTF-16 code units / 4,
//! rounded up, with per-role rules), the context size derived from the last reported usage,
//! and the compaction threshold.

use pi_ai::value::Value;

/// Characters counted for an image in custom messages and tool results (≈ 1200 tokens).
const IMAGE_CHARS: usize = 4800;

fn text_len(v: Option<&Value>) -> usize {
    v.and_then(Value::as_jstr).map_or(0, |s| s.utf16_len())
}

/// Characters of text or image content: a string's length, or its text blocks' lengths
/// and [`IMAGE_CHARS`] per image.
fn content_chars(content: Option<&Value>) -> usize {
    match content {
        Some(Value::Str(s)) => s.utf16_len(),
        Some(Value::Arr(blocks)) => blocks
            .iter()
            .map(|b| {
                let t = b.get("type");
                if t.is_some_and(|t| t.is_str("text")) && b.get("text").is_some_and(Value::truthy) {
                    text_len(b.get("text"))
                } else if t.is_some_and(|t| t.is_str("image")) {
                    IMAGE_CHARS
                } else {
                    0
                }
            })
            .sum(),
        _ => 0,
    }
}

/// Upstream's `estimateTokens(message)` (the reference 1.6's: images in user messages
/// count, and system messages count their text, sections and declared tools).
pub fn estimate(message: &Value) -> u64 {
    let role = message.get("role");
    let is = |r: &str| role.is_some_and(|x| x.is_str(r));
    let content = message.get("content");
    let mut chars = 0usize;
    if is("system") {
        chars = content_chars(content);
        if let Some(Value::Obj(secs)) = message.get("sections") {
            for (_, v) in secs.iter() {
                chars += text_len(Some(v));
            }
        }
        if let Some(tools) = message.get("toolsAdded").filter(|t| t.truthy()) {
            chars += tools.json_utf16_len();
        }
    } else if is("user") {
        chars = content_chars(content);
    } else if is("assistant") {
        for b in content.and_then(Value::as_arr).unwrap_or_default() {
            let t = b.get("type");
            if t.is_some_and(|t| t.is_str("text")) {
                chars += text_len(b.get("text"));
            } else if t.is_some_and(|t| t.is_str("thinking")) {
                chars += text_len(b.get("thinking"));
            } else if t.is_some_and(|t| t.is_str("toolCall")) {
                chars += text_len(b.get("name"));
                chars += b.get("arguments").map_or(0, Value::json_utf16_len);
            }
        }
    } else if is("custom") || is("toolResult") {
        chars = content_chars(content);
    } else if is("bashExecution") {
        chars = text_len(message.get("command")) + text_len(message.get("output"));
    } else if is("branchSummary") || is("compactionSummary") {
        chars = text_len(message.get("summary"));
    }
    chars.div_ceil(4) as u64
}

fn num(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(0.0)
}

/// How the context size was derived from a usage record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageRule {
    /// `totalTokens`, as reported.
    Total,
    /// `input + output + cacheRead + cacheWrite` (no or zero `totalTokens`).
    Sum,
}

impl UsageRule {
    pub fn as_str(self) -> &'static str {
        match self {
            UsageRule::Total => "totalTokens",
            UsageRule::Sum => "input+output+cacheRead+cacheWrite",
        }
    }
}

/// Upstream's `calculateContextTokens(usage)`: `totalTokens`, or the sum of the four
/// counts when it is missing or zero (missing counts are 0).
pub fn context_tokens(usage: &Value) -> (f64, UsageRule) {
    let total = num(usage.get("totalTokens"));
    if total != 0.0 && !total.is_nan() {
        return (total, UsageRule::Total);
    }
    let sum = ["input", "output", "cacheRead", "cacheWrite"]
        .iter()
        .map(|k| num(usage.get(k)))
        .sum();
    (sum, UsageRule::Sum)
}

/// The usage of an assistant message that can be trusted: not aborted, not failed.
pub fn usable_usage(message: &Value) -> Option<&Value> {
    if !message.get("role").is_some_and(|r| r.is_str("assistant")) {
        return None;
    }
    let stop = message.get("stopReason");
    if stop.is_some_and(|s| s.is_str("aborted") || s.is_str("error")) {
        return None;
    }
    message.get("usage").filter(|u| u.truthy())
}

/// Upstream's `estimateContextTokens(messages)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub tokens: f64,
    pub usage_tokens: f64,
    pub trailing_tokens: u64,
    pub last_usage_index: Option<usize>,
    pub rule: Option<UsageRule>,
}

pub fn estimate_context(messages: &[Value]) -> Estimate {
    let mut m = Meter::default();
    for msg in messages {
        m.add(msg, false);
    }
    m.estimate()
}

/// Measures a context one message at a time.
#[derive(Debug, Default)]
pub struct Meter {
    pub messages: usize,
    /// The sum of the estimates of all messages.
    pub estimated: u64,
    /// The last usable usage: (message index, usage, the entry it comes from).
    last: Option<(usize, Value, Option<u32>)>,
    /// Estimates of the messages after it.
    trailing: u64,
    /// Whether an assistant after the latest compaction, neither aborted nor failed,
    /// reported a context size above 0.
    reported_after: bool,
    /// The system messages (few), replayed for the estimate of a context whose reported
    /// usage no longer holds.
    system: Vec<Value>,
    /// Estimates of the other messages.
    others: u64,
}

/// Usage an assistant reported that describes its context: neither aborted nor failed, and
/// above 0 (the reference 1.6's `getAssistantUsage`).
pub fn reported(m: &Value) -> Option<&Value> {
    usable_usage(m).filter(|u| context_tokens(u).0 > 0.0)
}

impl Meter {
    pub fn add(&mut self, m: &Value, after_compaction: bool) {
        self.add_entry(m, None, after_compaction);
    }

    /// [`Meter::add`] of a message that comes from session entry `entry`.
    pub fn add_entry(&mut self, m: &Value, entry: Option<u32>, after_compaction: bool) {
        let e = estimate(m);
        self.estimated += e;
        if m.get("role").is_some_and(|r| r.is_str("system")) {
            self.system.push(m.clone());
        } else {
            self.others += e;
        }
        match reported(m) {
            Some(u) => {
                self.last = Some((self.messages, u.clone(), entry));
                self.trailing = 0;
                self.reported_after |= after_compaction;
            }
            None => self.trailing += e,
        }
        self.messages += 1;
    }

    /// Upstream's `estimateContextTokens` of the messages added.
    pub fn estimate(&self) -> Estimate {
        match &self.last {
            None => Estimate {
                tokens: self.estimated as f64,
                usage_tokens: 0.0,
                trailing_tokens: self.estimated,
                last_usage_index: None,
                rule: None,
            },
            Some((k, usage, _)) => {
                let (u, rule) = context_tokens(usage);
                Estimate {
                    tokens: u + self.trailing as f64,
                    usage_tokens: u,
                    trailing_tokens: self.trailing,
                    last_usage_index: Some(*k),
                    rule: Some(rule),
                }
            }
        }
    }

    /// The reference 1.6's `estimateProjectedContextTokens`: [`Meter::estimate`] when the
    /// reported usage still describes the context (`valid(entry)`: no context edit or
    /// compaction came after the reply that reported it); otherwise the estimate of every
    /// message, the system messages replayed into one.
    pub fn projected(&self, valid: impl Fn(u32) -> bool) -> Estimate {
        if let Some((_, _, Some(entry))) = &self.last
            && valid(*entry)
        {
            return self.estimate();
        }
        let system = crate::context::current_system(&self.system).map_or(0, |m| estimate(&m));
        let t = system + self.others;
        Estimate {
            tokens: t as f64,
            usage_tokens: 0.0,
            trailing_tokens: t,
            last_usage_index: None,
            rule: None,
        }
    }

    /// The system messages added, replayed into one (the reference 1.6's
    /// `getCurrentSystemMessage`).
    pub fn current_system(&self) -> Option<Value> {
        crate::context::current_system(&self.system)
    }

    /// The usage the estimate rests on.
    pub fn usage(&self) -> Option<&Value> {
        self.last.as_ref().map(|(_, u, _)| u)
    }

    /// Whether, after the latest compaction, an assistant has reported a usable context size
    /// (upstream shows no context size until one has: the kept messages' usage describes the
    /// context before the compaction). Messages must have been added with their
    /// `after_compaction` flag.
    pub(crate) fn reported_after_compaction(&self) -> bool {
        self.reported_after
    }
}

/// Whether the reply in entry `usage_entry` came after the latest context edit or
/// compaction on `path` (its reported usage then still describes the context).
pub fn usage_holds(s: &pi_session::Session, path: &[u32], usage_entry: u32) -> bool {
    use pi_session::Kind;
    let at = path.iter().position(|&i| i == usage_entry);
    let invalid = path.iter().rposition(|&i| {
        matches!(
            s.entries[i as usize].kind,
            Kind::ContextEdit | Kind::Compaction
        )
    });
    at.is_some_and(|a| invalid.is_none_or(|v| a > v))
}

/// Whether a context should be compacted: the one rule `pi compact --if-needed`,
/// `pi context stats` and the agent's automatic compaction share (upstream's
/// `shouldCompact`, plus its rule that usage reported before the latest compaction says
/// nothing about the context after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// `compaction.enabled` is false.
    Disabled,
    /// No reply since the latest compaction: the reported usage describes the context
    /// before it.
    UsagePredatesCompaction,
    /// At or below `window − reserve`.
    Below,
    /// Strictly above `window − reserve`.
    Above,
}

impl Need {
    /// Upstream's `shouldCompact`, with the rules above: enabled, usage not stale, and
    /// strictly above `window − reserve`.
    pub(crate) fn judge(
        tokens: f64,
        window: u64,
        reserve: u64,
        enabled: bool,
        stale: bool,
    ) -> Need {
        if !enabled {
            Need::Disabled
        } else if stale {
            Need::UsagePredatesCompaction
        } else if tokens > threshold(window, reserve) {
            Need::Above
        } else {
            Need::Below
        }
    }

    pub fn compact(self) -> bool {
        self == Need::Above
    }
}

/// `window − reserve`: compaction starts above it.
pub fn threshold(window: u64, reserve: u64) -> f64 {
    window as f64 - reserve as f64
}

/// `compaction.reserveTokens` and `compaction.keepRecentTokens`, as configured or as used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserves {
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
}

/// The reserves used with a context window: those configured, unless the reserve does not
/// fit the window (see [`Reserves::fit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fitted {
    pub used: Reserves,
    /// The reserves configured, when they were replaced.
    pub configured: Option<Reserves>,
    pub window: u64,
}

impl Reserves {
    /// pi's rule for small windows (the reference's defaults assume a large one): when
    /// `reserveTokens` is not below the window, the threshold `window − reserve` would be
    /// zero or negative and every turn would compact, so a quarter of the window is reserved
    /// instead, and at most an eighth of it is kept as recent messages. The agent
    /// (`pi run`), `pi compact` and `pi context stats` all judge by this; a window of 0
    /// (unknown) changes nothing.
    pub fn fit(self, window: u64) -> Fitted {
        if window == 0 || self.reserve_tokens < window {
            return Fitted {
                used: self,
                configured: None,
                window,
            };
        }
        Fitted {
            used: Reserves {
                reserve_tokens: window / 4,
                keep_recent_tokens: self.keep_recent_tokens.min(window / 8),
            },
            configured: Some(self),
            window,
        }
    }
}

impl Fitted {
    /// What to tell the user once when the reserves were replaced (`setting`: the name of
    /// the reserve, `model`: whose window it is).
    pub fn warning(&self, setting: &str, model: Option<&str>) -> Option<String> {
        let c = self.configured?;
        let whose = model.map_or_else(String::new, |m| format!(" of {m}"));
        let mut text = format!(
            "{setting} {} is not below the context window{whose} ({} tokens); \
             using a quarter of the window ({})",
            c.reserve_tokens, self.window, self.used.reserve_tokens
        );
        if self.used.keep_recent_tokens != c.keep_recent_tokens {
            text.push_str(&format!(
                " and keepRecentTokens {}",
                self.used.keep_recent_tokens
            ));
        }
        text.push_str(
            "; set compaction.reserveTokens below the window in settings.json \
             (for one model: compaction.modelOverrides) to choose it and silence this",
        );
        Some(text)
    }
}

/// The size of a measured context and whether it should be compacted.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    pub estimate: Estimate,
    /// The path has a compaction and no assistant has reported a context size since.
    pub stale: bool,
    pub threshold: f64,
    pub need: Need,
}

impl Meter {
    /// Judges the context measured (with `compacted`: the path has a compaction), its size
    /// as [`Meter::projected`] gives it.
    pub fn assess(
        &self,
        valid: impl Fn(u32) -> bool,
        compacted: bool,
        window: u64,
        reserve: u64,
        enabled: bool,
    ) -> Assessment {
        let estimate = self.projected(valid);
        let stale = compacted && !self.reported_after_compaction();
        Assessment {
            need: Need::judge(estimate.tokens, window, reserve, enabled, stale),
            threshold: threshold(window, reserve),
            stale,
            estimate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        Value::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn estimates_follow_upstream_examples() {
        // compaction.md §B / CO-A8
        assert_eq!(estimate(&v(r#"{"role":"user","content":"hello"}"#)), 2);
        assert_eq!(
            estimate(&v(
                r#"{"role":"assistant","content":[{"type":"text","text":"abcd"},{"type":"thinking","thinking":"ab"},{"type":"toolCall","id":"1","name":"read","arguments":{"path":"a.ts"}}]}"#
            )),
            7
        );
        assert_eq!(
            estimate(&v(
                r#"{"role":"toolResult","content":[{"type":"text","text":"0123456789"},{"type":"image","data":"x","mimeType":"image/png"}]}"#
            )),
            1203
        );
        assert_eq!(
            estimate(&v(
                r#"{"role":"user","content":[{"type":"image","data":"x"}]}"#
            )),
            1200,
            "1.6 counts images in user messages"
        );
        // A system message: its text, sections and the JSON of the tools it adds.
        assert_eq!(
            estimate(&v(
                r#"{"role":"system","content":"abcd","sections":{"a":"1234","b":null},"toolsAdded":[{"name":"x"}]}"#
            )),
            (4 + 4 + r#"[{"name":"x"}]"#.len() as u64).div_ceil(4)
        );
        assert_eq!(
            estimate(&v(
                r#"{"role":"bashExecution","command":"ls","output":"a\nb"}"#
            )),
            2
        );
        assert_eq!(
            estimate(&v(r#"{"role":"compactionSummary","summary":"123456789"}"#)),
            3
        );
        assert_eq!(
            estimate(&v(r#"{"role":"custom","content":"abcdefghi"}"#)),
            3
        );
        assert_eq!(estimate(&v(r#"{"role":"user","content":"😀😀😀"}"#)), 2);
        assert_eq!(estimate(&v(r#"{"role":"whatever","content":"abc"}"#)), 0);
    }

    #[test]
    fn context_tokens_from_usage() {
        // CO-A1..A3
        let u = v(r#"{"input":1000,"output":500,"cacheRead":200,"cacheWrite":100}"#);
        assert_eq!(context_tokens(&u), (1800.0, UsageRule::Sum));
        let z = v(r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0}"#);
        assert_eq!(context_tokens(&z).0, 0.0);
        let t = v(r#"{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":77}"#);
        assert_eq!(context_tokens(&t), (77.0, UsageRule::Total));
        let t0 =
            v(r#"{"input":1000,"output":500,"cacheRead":200,"cacheWrite":100,"totalTokens":0}"#);
        assert_eq!(context_tokens(&t0).0, 1800.0);
    }

    #[test]
    fn estimate_context_uses_the_last_usable_usage() {
        let u40 = format!(r#"{{"role":"user","content":"{}"}}"#, "x".repeat(40));
        let a = r#"{"role":"assistant","content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":100},"stopReason":"stop"}"#;
        let aborted = r#"{"role":"assistant","content":[{"type":"text","text":"xxxxxxxx"}],"usage":{"totalTokens":5000},"stopReason":"aborted"}"#;
        let msgs = vec![v(&u40), v(a), v(&u40)];
        let e = estimate_context(&msgs);
        assert_eq!(
            (
                e.tokens,
                e.usage_tokens,
                e.trailing_tokens,
                e.last_usage_index
            ),
            (110.0, 100.0, 10, Some(1))
        );
        let mut with_aborted = msgs.clone();
        with_aborted.push(v(aborted));
        let e = estimate_context(&with_aborted);
        assert_eq!((e.tokens, e.trailing_tokens), (112.0, 12));
        let e = estimate_context(&[v(&u40), v(r#"{"role":"user","content":"abcd"}"#)]);
        assert_eq!((e.tokens, e.last_usage_index), (11.0, None));
    }

    #[test]
    fn threshold_is_strict() {
        // CO-A7
        assert_eq!(
            Need::judge(95_000.0, 100_000, 10_000, true, false),
            Need::Above
        );
        assert_eq!(
            Need::judge(89_000.0, 100_000, 10_000, true, false),
            Need::Below
        );
        assert_eq!(
            Need::judge(90_000.0, 100_000, 10_000, true, false),
            Need::Below
        );
        assert_eq!(
            Need::judge(95_000.0, 100_000, 10_000, false, false),
            Need::Disabled
        );
    }

    #[test]
    fn reserves_fit_small_windows() {
        let defaults = Reserves {
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        };
        // A large window: as configured.
        let f = defaults.fit(200_000);
        assert_eq!((f.used, f.configured), (defaults, None));
        assert_eq!(f.warning("reserveTokens", None), None);
        // Unknown window: as configured.
        assert_eq!(defaults.fit(0).used, defaults);
        // 8192 tokens: a quarter reserved, an eighth kept; the threshold is positive.
        let f = defaults.fit(8192);
        assert_eq!(
            f.used,
            Reserves {
                reserve_tokens: 2048,
                keep_recent_tokens: 1024
            }
        );
        assert_eq!(f.configured, Some(defaults));
        assert_eq!(threshold(8192, f.used.reserve_tokens), 6144.0);
        assert_eq!(
            f.warning("reserveTokens", Some("local/llama")).as_deref(),
            Some(
                "reserveTokens 16384 is not below the context window of local/llama (8192 tokens); \
                 using a quarter of the window (2048) and keepRecentTokens 1024; set compaction.reserveTokens below the window in settings.json \
                 (for one model: compaction.modelOverrides) to choose it and silence this"
            )
        );
        // Equal to the window also does not fit; a smaller keep stays.
        let r = Reserves {
            reserve_tokens: 1000,
            keep_recent_tokens: 50,
        };
        assert_eq!(r.fit(1000).used.reserve_tokens, 250);
        assert_eq!(r.fit(1000).used.keep_recent_tokens, 50);
        assert_eq!(
            r.fit(1000).warning("reserveTokens", None).as_deref(),
            Some(
                "reserveTokens 1000 is not below the context window (1000 tokens); \
                 using a quarter of the window (250); set compaction.reserveTokens below the window in settings.json \
                 (for one model: compaction.modelOverrides) to choose it and silence this"
            )
        );
        assert_eq!(r.fit(1001).used, r);
    }

    #[test]
    fn stale_usage_never_compacts() {
        assert_eq!(
            Need::judge(95_000.0, 100_000, 10_000, true, true),
            Need::UsagePredatesCompaction
        );
        let u = r#"{"role":"assistant","content":[],"usage":{"input":95000,"output":0,"cacheRead":0,"cacheWrite":0},"stopReason":"stop"}"#;
        let mut m = Meter::default();
        m.add(&v(r#"{"role":"compactionSummary","summary":"s"}"#), false);
        m.add_entry(&v(u), Some(1), false);
        let a = m.assess(|_| true, true, 100_000, 10_000, true);
        assert!(a.stale);
        assert!(!a.need.compact());
        let mut m = Meter::default();
        m.add(&v(r#"{"role":"compactionSummary","summary":"s"}"#), false);
        m.add_entry(&v(u), Some(1), true);
        let a = m.assess(|_| true, true, 100_000, 10_000, true);
        assert_eq!(
            (a.stale, a.need, a.threshold),
            (false, Need::Above, 90_000.0)
        );
        // Usage from before an edit or a compaction no longer holds: every message is
        // estimated instead (the reference 1.6).
        let a = m.assess(|_| false, true, 100_000, 10_000, true);
        assert_eq!(a.estimate.tokens, 1.0);
        assert_eq!(a.estimate.last_usage_index, None);
    }
}
