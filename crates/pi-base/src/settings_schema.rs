//! The keys of `settings.json` the reference 1.6 documents (and pi's own: `hooks`,
//! `hookTimeout`, `shellEnvironmentPolicy`), checked once per command: an unknown key or a
//! value of the wrong type is a warning naming the file and the key's path; the readers of
//! the settings then use the default for such a value (docs/decisions.md §1).

use std::path::Path;

use serde_json::Value;

/// The shape a value must have.
#[derive(Clone, Copy)]
enum T {
    Any,
    Bool,
    Str,
    Num,
    /// A non-negative safe integer.
    Count,
    Strings,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A boolean or one of these strings.
    BoolOr(&'static [&'static str]),
    /// A non-negative number or one of these strings.
    NumOr(&'static [&'static str]),
    Obj(&'static [(&'static str, T)]),
    /// An object whose every value has this shape.
    Map(&'static T),
}

const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh", "max"];
const MODES: &[&str] = &["all", "one-at-a-time"];
const MODEL_OVERRIDE: T = T::Obj(&[("reserveTokens", T::Count), ("keepRecentTokens", T::Count)]);
const LEVEL: T = T::OneOf(LEVELS);
const STRING: T = T::Str;

const TOP: &[(&str, T)] = &[
    ("$schema", T::Str),
    ("lastChangelogVersion", T::Str),
    ("extensionChangelogVersions", T::Map(&STRING)),
    ("defaultProvider", T::Str),
    ("defaultModel", T::Str),
    ("defaultThinkingLevel", LEVEL),
    ("modelThinkingLevels", T::Map(&LEVEL)),
    (
        "transport",
        T::OneOf(&["auto", "sse", "websocket", "websocket-cached"]),
    ),
    (
        "sessionShareDestination",
        T::OneOf(&["auto", "gist", "radius"]),
    ),
    ("steeringMode", T::OneOf(MODES)),
    ("followUpMode", T::OneOf(MODES)),
    ("theme", T::Str),
    (
        "compaction",
        T::Obj(&[
            ("enabled", T::Bool),
            ("reserveTokens", T::Count),
            ("keepRecentTokens", T::Count),
            ("modelOverrides", T::Map(&MODEL_OVERRIDE)),
        ]),
    ),
    (
        "branchSummary",
        T::Obj(&[("reserveTokens", T::Num), ("skipPrompt", T::Bool)]),
    ),
    (
        "retry",
        T::Obj(&[
            ("enabled", T::Bool),
            ("maxRetries", T::Num),
            ("baseDelayMs", T::Num),
            ("maxAgentDelayMs", T::Num),
            (
                "provider",
                T::Obj(&[
                    ("timeoutMs", T::Num),
                    ("maxRetries", T::Num),
                    ("maxRetryDelayMs", T::Num),
                ]),
            ),
            ("maxDelayMs", T::Num),
        ]),
    ),
    ("hideThinkingBlock", T::Bool),
    ("showCacheMissNotices", T::Bool),
    ("externalEditor", T::Str),
    ("shellPath", T::Str),
    ("quietStartup", T::BoolOr(&["header"])),
    ("defaultProjectTrust", T::OneOf(&["ask", "always", "never"])),
    ("shellCommandPrefix", T::Str),
    ("npmCommand", T::Strings),
    ("selfUpdateCommand", T::Strings),
    ("collapseChangelog", T::Bool),
    ("enableInstallTelemetry", T::Bool),
    ("enableAnalytics", T::Bool),
    ("trackingId", T::Str),
    ("packages", T::Any),
    ("extensions", T::Strings),
    ("deviceId", T::Str),
    ("skills", T::Any),
    ("prompts", T::Strings),
    ("themes", T::Strings),
    ("enableSkillCommands", T::Bool),
    (
        "terminal",
        T::Obj(&[
            ("showImages", T::Bool),
            ("imageWidthCells", T::Num),
            ("clearOnShrink", T::Bool),
            ("showTerminalProgress", T::Bool),
            ("hyperlinks", T::BoolOr(&["auto"])),
            ("images", T::Any),
            ("trueColor", T::BoolOr(&["auto"])),
        ]),
    ),
    (
        "images",
        T::Obj(&[("autoResize", T::Bool), ("blockImages", T::Bool)]),
    ),
    ("enabledModels", T::Strings),
    ("defaultTools", T::Strings),
    ("doubleEscapeAction", T::OneOf(&["fork", "tree", "none"])),
    (
        "treeFilterMode",
        T::OneOf(&["default", "no-tools", "user-only", "labeled-only", "all"]),
    ),
    (
        "thinkingBudgets",
        T::Obj(&[
            ("minimal", T::Num),
            ("low", T::Num),
            ("medium", T::Num),
            ("high", T::Num),
        ]),
    ),
    ("editorPaddingX", T::Num),
    ("outputPad", T::Any),
    ("autocompleteMaxVisible", T::Num),
    ("showHardwareCursor", T::Bool),
    (
        "markdown",
        T::Obj(&[
            ("codeBlockIndent", T::Str),
            ("mermaid", T::OneOf(&["off", "final", "streaming"])),
        ]),
    ),
    ("warnings", T::Obj(&[("anthropicExtraUsage", T::Bool)])),
    (
        "codemode",
        T::Obj(&[
            ("mode", T::OneOf(&["on", "only"])),
            ("inlineBudget", T::Num),
        ]),
    ),
    ("sessionDir", T::Str),
    ("httpProxy", T::Str),
    ("httpIdleTimeoutMs", T::NumOr(&["disabled"])),
    ("cacheWarming", T::OneOf(&["off", "streaming", "idle"])),
    ("websocketConnectTimeoutMs", T::NumOr(&["disabled"])),
    ("tuiMode", T::OneOf(&["regular", "fullscreen"])),
    (
        "fullscreenExitOutput",
        T::OneOf(&["transcript", "resume-hint"]),
    ),
    (
        "fullscreenScrollbar",
        T::OneOf(&["auto", "always", "hidden"]),
    ),
    ("fullscreenCopyOnSelect", T::Bool),
    ("fullscreenWheelScrollLines", T::NumOr(&["auto"])),
    ("queueMode", T::OneOf(MODES)),
    ("websockets", T::Bool),
    // pi's own.
    ("hooks", T::Any),
    ("hookTimeout", T::Num),
    ("shellEnvironmentPolicy", T::Any),
];

fn describe(t: T) -> String {
    let list = |s: &[&str]| {
        s.iter()
            .map(|x| format!("\"{x}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match t {
        T::Any => "anything".into(),
        T::Bool => "a boolean".into(),
        T::Str => "a string".into(),
        T::Num => "a number".into(),
        T::Count => "a non-negative integer".into(),
        T::Strings => "a list of strings".into(),
        T::OneOf(s) => format!("one of {}", list(s)),
        T::BoolOr(s) => format!("a boolean or {}", list(s)),
        T::NumOr(s) => format!("a non-negative number or {}", list(s)),
        T::Obj(_) | T::Map(_) => "an object".into(),
    }
}

fn check(v: &Value, t: T, at: &str, out: &mut Vec<String>) {
    // `null` is how a file unsets a key: the default, without a word.
    if v.is_null() {
        return;
    }
    let is = |s: &[&str]| v.as_str().is_some_and(|x| s.contains(&x));
    let ok = match t {
        T::Any => true,
        T::Bool => v.is_boolean(),
        T::Str => v.is_string(),
        T::Num => v.as_f64().is_some_and(f64::is_finite),
        T::Count => v
            .as_f64()
            .is_some_and(|f| f >= 0.0 && f.fract() == 0.0 && f <= 9_007_199_254_740_991.0),
        T::Strings => match v.as_array() {
            Some(a) => {
                for (i, x) in a.iter().enumerate().filter(|(_, x)| !x.is_string()) {
                    out.push(format!(
                        "{at}[{i}]: expected a string, got {}; ignored",
                        short(x)
                    ));
                }
                true
            }
            None => false,
        },
        T::OneOf(s) => is(s),
        T::BoolOr(s) => v.is_boolean() || is(s),
        T::NumOr(s) => v.as_f64().is_some_and(|f| f >= 0.0) || is(s),
        T::Obj(fields) => match v.as_object() {
            Some(o) => {
                for (k, x) in o {
                    let here = format!("{at}.{k}");
                    match fields.iter().find(|(n, _)| n == k) {
                        Some((_, t)) => check(x, *t, &here, out),
                        None => out.push(format!("{here}: unknown key; ignored")),
                    }
                }
                true
            }
            None => false,
        },
        T::Map(t) => match v.as_object() {
            Some(o) => {
                for (k, x) in o {
                    check(x, *t, &format!("{at}[\"{k}\"]"), out);
                }
                true
            }
            None => false,
        },
    };
    if !ok {
        out.push(format!(
            "{at}: expected {}, got {}; the default is used",
            describe(t),
            short(v)
        ));
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

/// The warnings of one settings object read from `path`.
pub fn check_settings(path: &Path, v: &Value) -> Vec<String> {
    let Some(o) = v.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, x) in o {
        match TOP.iter().find(|(n, _)| n == k) {
            Some((_, t)) => check(x, *t, k, &mut out),
            None => out.push(format!("{k}: unknown key; ignored")),
        }
    }
    out.into_iter()
        .map(|w| format!("{}: {w}", path.display()))
        .collect()
}

/// The warnings of the settings files of a command run in `cwd` (files that cannot be
/// read or parsed are reported where they are read).
pub fn check_files(agent_dir: &Path, cwd: &Path) -> Vec<String> {
    [
        agent_dir.join("settings.json"),
        cwd.join(".pi").join("settings.json"),
    ]
    .iter()
    .filter_map(|p| {
        let text = std::fs::read(p).ok()?;
        let v: Value = serde_json::from_slice(&text).ok()?;
        Some(check_settings(p, &v))
    })
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documented_keys_pass_and_others_are_named() {
        let p = Path::new("s.json");
        let ok = json!({"defaultTools": ["+grep"], "compaction": {"enabled": true, "reserveTokens": 5,
            "modelOverrides": {"a/b": {"keepRecentTokens": 1}}}, "quietStartup": "header",
            "httpIdleTimeoutMs": "disabled", "terminal": {"hyperlinks": "auto"},
            "hooks": {"agent_end": "true"}, "modelThinkingLevels": {"a/b": "high"}});
        assert!(check_settings(p, &ok).is_empty());
        let bad = json!({"colour": 1, "compaction": {"reserveTokens": -1, "keep": 2,
            "modelOverrides": {"a/b": {"reserveTokens": "x"}}}, "steeringMode": "some",
            "defaultTools": "read"});
        assert_eq!(
            check_settings(p, &bad),
            vec![
                "s.json: colour: unknown key; ignored",
                "s.json: compaction.reserveTokens: expected a non-negative integer, got -1; the default is used",
                "s.json: compaction.keep: unknown key; ignored",
                "s.json: compaction.modelOverrides[\"a/b\"].reserveTokens: expected a non-negative integer, got \"x\"; the default is used",
                "s.json: steeringMode: expected one of \"all\", \"one-at-a-time\", got \"some\"; the default is used",
                "s.json: defaultTools: expected a list of strings, got \"read\"; the default is used",
            ]
        );
    }
}
