//! Models: what pi knows about a provider's model (context window, output limit, input
//! types, API, compatibility flags), from the reference's built-in registry and the user's
//! `models.json`, merged the way the reference merges them.
//!
//! - The built-in table (`src/models/builtin.jsonl`) is the reference's registry
//!   (@earendil-works/pi-ai 1.6.0), recorded by `scripts/models.mjs`; one JSON object per line
//!   with the keys listed in that script. To carry more of a definition, add the key there,
//!   regenerate, and read it in `Model::from_json` (what a context needs) or
//!   `Details::from_json` (what a request needs: name, prices, headers, thinking levels).
//! - `<agent dir>/models.json` (`{"providers": {NAME: {baseUrl, api, compat, models: [...],
//!   modelOverrides: {ID: {...}}}}}`; `//` comments and trailing commas allowed) adds custom
//!   models (defaults: text input, 128000-token window, 16384 output tokens), overrides
//!   fields of built-in ones, and moves a provider's `baseUrl`/`compat`. A custom model
//!   replaces a built-in model with the same provider and id. A file that cannot be read or
//!   parsed is reported and ignored; a field that does not fit the reference 1.6's schema,
//!   or a key it does not document, is reported with its path and left out, and the rest
//!   applies (`models/schema.rs`; the reference ignores the whole file, docs/decisions.md §1).
//! - A provider's request settings in `models.json` (`apiKey`, `headers`, `authHeader`) and
//!   the `headers` of its models are kept as written in `Registry::providers` and
//!   `Details::config_headers`; `crate::auth` resolves them (`!command`, environment
//!   variable name, or literal) when a request is made.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

mod schema;

const BUILTIN: &str = include_str!("models/builtin.jsonl");

/// Where a model's definition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    BuiltIn,
    /// A built-in model changed by `models.json` (provider settings or `modelOverrides`).
    Overridden,
    /// A model defined in `models.json`.
    Custom,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::BuiltIn => "built-in",
            Source::Overridden => "models.json override",
            Source::Custom => "models.json",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub provider: String,
    pub id: String,
    /// The API the provider speaks for it: `anthropic-messages`, `openai-completions`, …
    pub api: String,
    pub base_url: String,
    /// Whether it supports extended thinking.
    pub reasoning: bool,
    /// Input types: `text`, `image`.
    pub input: Vec<String>,
    pub context_window: u64,
    pub max_tokens: u64,
    /// Provider compatibility flags, as written (an object; empty when none).
    pub compat: Map<String, Value>,
    pub source: Source,
}

impl Model {
    pub fn accepts_images(&self) -> bool {
        self.input.iter().any(|i| i == "image")
    }

    /// A compatibility flag, if set.
    pub(crate) fn compat_bool(&self, key: &str) -> Option<bool> {
        self.compat.get(key).and_then(Value::as_bool)
    }

    pub(crate) fn compat_str(&self, key: &str) -> Option<&str> {
        self.compat.get(key).and_then(Value::as_str)
    }

    fn from_json(v: &Value, source: Source) -> Option<Model> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Model {
            provider: s("provider")?,
            id: s("id")?,
            api: s("api")?,
            base_url: s("baseUrl").unwrap_or_default(),
            reasoning: v.get("reasoning").and_then(Value::as_bool).unwrap_or(false),
            input: strings(v.get("input")).unwrap_or_else(|| vec!["text".into()]),
            context_window: v.get("contextWindow").and_then(count).unwrap_or(128_000),
            max_tokens: v.get("maxTokens").and_then(count).unwrap_or(16_384),
            compat: v
                .get("compat")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            source,
        })
    }
}

/// A model's prices in dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    /// Prices for whole requests above an input size (`cost.tiers`, the reference's 1.6).
    pub tiers: Vec<Tier>,
}

/// The prices of requests whose input (input, cache read and cache write tokens together)
/// is above `input_tokens_above`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tier {
    pub input_tokens_above: f64,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Tier {
    /// A tier from its JSON object; `None` unless every field is a number.
    fn from_json(v: &Value) -> Option<Tier> {
        let f = |k: &str| v.get(k).and_then(Value::as_f64);
        Some(Tier {
            input_tokens_above: f("inputTokensAbove")?,
            input: f("input")?,
            output: f("output")?,
            cache_read: f("cacheRead")?,
            cache_write: f("cacheWrite")?,
        })
    }
}

impl Prices {
    fn from_json(v: Option<&Value>) -> Prices {
        let f = |k: &str| {
            v.and_then(|c| c.get(k))
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
        };
        Prices {
            input: f("input"),
            output: f("output"),
            cache_read: f("cacheRead"),
            cache_write: f("cacheWrite"),
            tiers: tiers_of(v),
        }
    }

    /// `{...self, ...override}` for the prices the override gives.
    fn with(mut self, o: &Value) -> Prices {
        let f = |k: &str, d: f64| o.get(k).and_then(Value::as_f64).unwrap_or(d);
        self.input = f("input", self.input);
        self.output = f("output", self.output);
        self.cache_read = f("cacheRead", self.cache_read);
        self.cache_write = f("cacheWrite", self.cache_write);
        if o.get("tiers").is_some() {
            self.tiers = tiers_of(Some(o));
        }
        self
    }

    /// The prices as `models.json` writes them (`tiers` only when there are some).
    pub fn to_json(&self) -> Value {
        let num = pi_base::js::json_number;
        let mut cost = serde_json::json!({
            "input": num(self.input),
            "output": num(self.output),
            "cacheRead": num(self.cache_read),
            "cacheWrite": num(self.cache_write),
        });
        if !self.tiers.is_empty() {
            cost["tiers"] = self
                .tiers
                .iter()
                .map(|t| {
                    serde_json::json!({
                        "inputTokensAbove": num(t.input_tokens_above),
                        "input": num(t.input),
                        "output": num(t.output),
                        "cacheRead": num(t.cache_read),
                        "cacheWrite": num(t.cache_write),
                    })
                })
                .collect();
        }
        cost
    }

    /// The prices that apply to a request of `input_tokens` (input, cache read and cache
    /// write): those of the tier with the highest threshold below it, else the base ones.
    pub fn for_input(&self, input_tokens: u64) -> Tier {
        let base = Tier {
            input_tokens_above: -1.0,
            input: self.input,
            output: self.output,
            cache_read: self.cache_read,
            cache_write: self.cache_write,
        };
        let n = input_tokens as f64;
        self.tiers.iter().fold(base, |best, t| {
            if n > t.input_tokens_above && t.input_tokens_above > best.input_tokens_above {
                *t
            } else {
                best
            }
        })
    }
}

/// The valid tiers of a `cost` object (`schema` warns of the others).
fn tiers_of(cost: Option<&Value>) -> Vec<Tier> {
    cost.and_then(|c| c.get("tiers"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Tier::from_json).collect())
        .unwrap_or_default()
}

/// A `models.json` that cannot be applied: why (nothing of it is applied).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

/// What a request needs besides [`Model`]: kept beside the table, by provider and id.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Details {
    pub name: Option<String>,
    pub prices: Prices,
    /// Static headers of a built-in model (sent as written).
    pub headers: Vec<(String, String)>,
    /// `headers` of the model in `models.json` (a definition or an override), as written:
    /// resolved per request like API keys.
    pub(crate) config_headers: Vec<(String, String)>,
    /// pi thinking level → the provider's value (`null`: the level is not supported).
    pub(crate) thinking_level_map: Map<String, Value>,
    /// `samplingParams`: fields merged into the body of an OpenAI-compatible request.
    pub(crate) sampling_params: Map<String, Value>,
    /// `samplingParamsByThinkingLevel`: level → fields merged over `samplingParams`.
    pub(crate) sampling_by_level: Map<String, Value>,
}

fn header_list(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

impl Details {
    fn from_json(v: &Value) -> Details {
        Details {
            name: v.get("name").and_then(Value::as_str).map(str::to_owned),
            prices: Prices::from_json(v.get("cost")),
            headers: header_list(v.get("headers")),
            config_headers: Vec::new(),
            thinking_level_map: v
                .get("thinkingLevelMap")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            sampling_params: object(v.get("samplingParams")),
            sampling_by_level: object(v.get("samplingParamsByThinkingLevel")),
        }
    }
}

fn object(v: Option<&Value>) -> Map<String, Value> {
    v.and_then(Value::as_object).cloned().unwrap_or_default()
}

/// A provider's request settings from `models.json`, as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ProviderConfig {
    /// `apiKey`: a `!command`, an environment variable name, or the key.
    pub(crate) api_key: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    /// `authHeader: true`: send the key as `Authorization: Bearer …` header.
    pub(crate) auth_header: bool,
}

/// The thinking levels, from none to the most (`max` is the reference 1.6's).
pub const THINKING_LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/// The thinking levels a model supports (upstream's `getSupportedThinkingLevels`).
pub fn thinking_levels(model: &Model, details: &Details) -> Vec<&'static str> {
    if !model.reasoning {
        return vec!["off"];
    }
    THINKING_LEVELS
        .iter()
        .copied()
        .filter(|l| match details.thinking_level_map.get(*l) {
            Some(Value::Null) => false,
            None => !matches!(*l, "xhigh" | "max"),
            Some(_) => true,
        })
        .collect()
}

/// A model as upstream's RPC mode shows it (`get_state.model`, `set_model`): id, name, api,
/// provider, baseUrl, reasoning, input, cost, contextWindow, maxTokens.
pub fn model_json(m: &Model, d: &Details) -> Value {
    serde_json::json!({
        "id": m.id,
        "name": d.name.clone().unwrap_or_else(|| m.id.clone()),
        "api": m.api,
        "provider": m.provider,
        "baseUrl": m.base_url,
        "reasoning": m.reasoning,
        "input": m.input,
        "cost": d.prices.to_json(),
        "contextWindow": m.context_window,
        "maxTokens": m.max_tokens,
    })
}

/// The nearest supported level: the level itself, else the next higher, else the next lower
/// (upstream's `clampThinkingLevel`).
pub fn clamp_thinking_level(model: &Model, details: &Details, level: &str) -> &'static str {
    let available = thinking_levels(model, details);
    if let Some(l) = available.iter().find(|l| **l == level) {
        return l;
    }
    let Some(k) = THINKING_LEVELS.iter().position(|l| *l == level) else {
        return available.first().copied().unwrap_or("off");
    };
    THINKING_LEVELS[k..]
        .iter()
        .chain(THINKING_LEVELS[..k].iter().rev())
        .find(|l| available.contains(l))
        .copied()
        .unwrap_or("off")
}

fn count(v: &Value) -> Option<u64> {
    let f = v.as_f64()?;
    (f.is_finite() && f >= 0.0).then(|| f.min(u64::MAX as f64) as u64)
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v?.as_array()?
        .iter()
        .map(|x| x.as_str().map(str::to_owned))
        .collect()
}

/// The models known to pi.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    pub models: Vec<Model>,
    /// Problems with `models.json` (the file is then ignored).
    pub warnings: Vec<String>,
    /// Names, prices, headers and thinking levels, by (provider, id).
    pub(crate) details: HashMap<(String, String), Details>,
    /// Request settings of the providers named in `models.json`.
    pub(crate) providers: HashMap<String, ProviderConfig>,
}

impl Registry {
    /// The built-in models only.
    pub fn builtin() -> Registry {
        Registry::from_table(BUILTIN)
    }

    /// The models of a table in the built-in table's form (one JSON object per line, with
    /// the keys `scripts/models.mjs` writes), as built-in models; lines that are not such a
    /// model are skipped. Tests use it to compare with an older reference's catalogue.
    pub fn from_table(text: &str) -> Registry {
        let mut r = Registry::default();
        for v in text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        {
            if let Some(m) = Model::from_json(&v, Source::BuiltIn) {
                r.details
                    .insert((m.provider.clone(), m.id.clone()), Details::from_json(&v));
                r.models.push(m);
            }
        }
        r
    }

    /// The details of a model (defaults when it has none).
    pub fn details_of(&self, provider: &str, id: &str) -> Details {
        self.details
            .get(&(provider.to_owned(), id.to_owned()))
            .cloned()
            .unwrap_or_default()
    }

    /// The built-in models with `<agent_dir>/models.json` applied.
    pub fn load(agent_dir: &Path) -> Registry {
        let mut r = Registry::builtin_with_config(agent_dir);
        // A GitHub Copilot login names the API host of its plan (as the reference applies it).
        if let Some(url) = copilot_base_url(agent_dir) {
            for m in r
                .models
                .iter_mut()
                .filter(|m| m.provider == "github-copilot")
            {
                m.base_url = url.clone();
            }
        }
        r
    }

    fn builtin_with_config(agent_dir: &Path) -> Registry {
        let mut r = Registry::builtin();
        let path = agent_dir.join("models.json");
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return r,
            Err(e) => {
                r.warnings
                    .push(format!("ignoring {}: cannot read it: {e}", path.display()));
                return r;
            }
        };
        match r.apply_config(&String::from_utf8_lossy(&text)) {
            Ok(w) => {
                let file = path.display();
                r.warnings
                    .extend(w.into_iter().map(|w| format!("{file}: {w}")));
            }
            Err(e) => r.warnings.push(format!("ignoring {}: {e}", path.display())),
        }
        r
    }

    /// Applies the text of a `models.json`: the fields that fit the reference's schema;
    /// each one that does not, and each unknown key, gives a warning (its path in the file)
    /// and is left out. A text that is not JSON is an error and nothing is applied.
    pub fn apply_config(&mut self, text: &str) -> Result<Vec<String>, ConfigError> {
        let cleaned = strip_comments(text.strip_prefix('\u{feff}').unwrap_or(text));
        let config: Value =
            serde_json::from_str(&cleaned).map_err(|e| ConfigError(format!("{e}")))?;
        let mut checker = schema::Checker {
            warnings: Vec::new(),
        };
        let providers = &checker.file(&config);
        self.apply_overrides(providers);
        let custom = self.custom_models(providers, &mut checker.warnings);
        for (name, p) in providers {
            let config = ProviderConfig {
                api_key: p.get("apiKey").and_then(Value::as_str).map(str::to_owned),
                headers: header_list(p.get("headers")),
                auth_header: p.get("authHeader").and_then(Value::as_bool) == Some(true),
            };
            if config != ProviderConfig::default() {
                self.providers.insert(name.clone(), config);
            }
        }
        for (m, d) in custom {
            self.details.insert((m.provider.clone(), m.id.clone()), d);
            match self
                .models
                .iter()
                .position(|x| x.provider == m.provider && x.id == m.id)
            {
                Some(i) => self.models[i] = m,
                None => self.models.push(m),
            }
        }
        Ok(checker.warnings)
    }

    /// Provider-level `baseUrl` and `compat`, and `modelOverrides`, on the models there are.
    fn apply_overrides(&mut self, providers: &Map<String, Value>) {
        for m in &mut self.models {
            let Some(p) = providers.get(&m.provider) else {
                continue;
            };
            let mut changed = false;
            if let Some(url) = p.get("baseUrl").and_then(Value::as_str) {
                m.base_url = url.to_owned();
                changed = true;
            }
            if let Some(c) = p.get("compat").and_then(Value::as_object) {
                m.compat = merge_compat(&m.compat, c);
                changed = true;
            }
            if let Some(o) = p
                .get("modelOverrides")
                .and_then(|o| o.get(&m.id))
                .and_then(Value::as_object)
            {
                let d = self
                    .details
                    .entry((m.provider.clone(), m.id.clone()))
                    .or_default();
                override_model(m, d, o);
                changed = true;
            }
            if changed {
                m.source = Source::Overridden;
            }
        }
    }

    /// The custom models of a config: `api` and `baseUrl` from the model, the provider, or
    /// the provider's first built-in model.
    fn custom_models(
        &self,
        providers: &Map<String, Value>,
        warnings: &mut Vec<String>,
    ) -> Vec<(Model, Details)> {
        let mut custom = Vec::new();
        for (name, p) in providers {
            let Some(defs) = p.get("models").and_then(Value::as_array) else {
                continue;
            };
            let builtin = self
                .models
                .iter()
                .find(|m| m.provider == *name && m.source != Source::Custom);
            let api = builtin.map(|m| m.api.as_str());
            let url = builtin.map(|m| m.base_url.as_str());
            for (i, d) in defs.iter().enumerate() {
                match custom_model(name, p, d, (api, url)) {
                    Ok(m) => custom.push(m),
                    Err(missing) => warnings.push(format!(
                        "providers.{name}.models[{i}]: no \"{missing}\" (set it on the provider or the model); the model is ignored"
                    )),
                }
            }
        }
        custom
    }

    pub fn find(&self, provider: &str, id: &str) -> Option<&Model> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.id == id)
    }
}

/// `{...base, ...override}`, with the routing objects merged one level deeper.
fn merge_compat(base: &Map<String, Value>, over: &Map<String, Value>) -> Map<String, Value> {
    let mut out = base.clone();
    for (k, v) in over {
        let merged = match (k.as_str(), base.get(k), v) {
            (
                "openRouterRouting" | "vercelGatewayRouting",
                Some(Value::Object(b)),
                Value::Object(o),
            ) => {
                let mut m = b.clone();
                m.extend(o.clone());
                Value::Object(m)
            }
            _ => v.clone(),
        };
        out.insert(k.clone(), merged);
    }
    out
}

/// Removes `//` comments and trailing commas outside strings, as the reference does before
/// parsing `models.json`.
pub(crate) fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = string_end(b, i);
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    // Trailing commas: a comma followed only by whitespace before `}` or `]`.
    let mut res: Vec<u8> = Vec::with_capacity(out.len());
    let mut i = 0;
    while i < out.len() {
        match out[i] {
            b'"' => {
                let end = string_end(&out, i);
                res.extend_from_slice(&out[i..end]);
                i = end;
            }
            b',' => {
                let mut j = i + 1;
                while j < out.len() && out[j].is_ascii_whitespace() {
                    j += 1;
                }
                if !matches!(out.get(j), Some(b'}' | b']')) {
                    res.push(b',');
                }
                i += 1;
            }
            c => {
                res.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&res).into_owned()
}

/// The index after the string literal that starts at `b[i]` (escapes skipped; the end of
/// `b` if it is not closed).
fn string_end(b: &[u8], i: usize) -> usize {
    let mut i = i + 1;
    while i < b.len() && b[i] != b'"' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    (i + 1).min(b.len())
}

/// A model override (`modelOverrides.{id}`) applied to a model and its details.
fn override_model(m: &mut Model, d: &mut Details, o: &Map<String, Value>) {
    if let Some(b) = o.get("reasoning").and_then(Value::as_bool) {
        m.reasoning = b;
    }
    if let Some(i) = strings(o.get("input")) {
        m.input = i;
    }
    if let Some(n) = o.get("contextWindow").and_then(count) {
        m.context_window = n;
    }
    if let Some(n) = o.get("maxTokens").and_then(count) {
        m.max_tokens = n;
    }
    if let Some(c) = o.get("compat").and_then(Value::as_object) {
        m.compat = merge_compat(&m.compat, c);
    }
    if let Some(n) = o.get("name").and_then(Value::as_str) {
        d.name = Some(n.to_owned());
    }
    if let Some(c) = o.get("cost").filter(|c| c.is_object()) {
        d.prices = std::mem::take(&mut d.prices).with(c);
    }
    if let Some(t) = o.get("thinkingLevelMap").and_then(Value::as_object) {
        d.thinking_level_map.extend(t.clone());
    }
    if let Some(s) = o.get("samplingParams").and_then(Value::as_object) {
        d.sampling_params.extend(s.clone());
    }
    if let Some(s) = o
        .get("samplingParamsByThinkingLevel")
        .and_then(Value::as_object)
    {
        d.sampling_by_level.extend(s.clone());
    }
    d.config_headers = header_list(o.get("headers"));
}

/// A custom model `d` of provider `name` (config `p`), with the `api` and `baseUrl` of
/// the provider's built-in model as defaults; without an API or a base URL, the name of
/// the missing field.
fn custom_model(
    name: &str,
    p: &Value,
    d: &Value,
    (builtin_api, builtin_url): (Option<&str>, Option<&str>),
) -> Result<(Model, Details), &'static str> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let api = s(d, "api")
        .or_else(|| s(p, "api"))
        .or_else(|| builtin_api.map(str::to_owned))
        .ok_or("api")?;
    let url = s(d, "baseUrl")
        .or_else(|| s(p, "baseUrl"))
        .or_else(|| builtin_url.map(str::to_owned))
        .ok_or("baseUrl")?;
    let mut v = d.clone();
    if let Some(o) = v.as_object_mut() {
        o.insert("provider".into(), Value::String(name.to_owned()));
        o.insert("api".into(), Value::String(api));
        o.insert("baseUrl".into(), Value::String(url));
        let empty = Map::new();
        let pc = p.get("compat").and_then(Value::as_object).unwrap_or(&empty);
        let mc = d.get("compat").and_then(Value::as_object).unwrap_or(&empty);
        o.insert("compat".into(), Value::Object(merge_compat(pc, mc)));
    }
    let m = Model::from_json(&v, Source::Custom).ok_or("id")?;
    let mut details = Details::from_json(d);
    details.config_headers = std::mem::take(&mut details.headers);
    Ok((m, details))
}

/// The API host of a GitHub Copilot login in `<agent_dir>/auth.json`: the one its token
/// names (`proxy-ep=proxy.HOST` gives `https://api.HOST`), else its GitHub Enterprise
/// domain's (`https://copilot-api.DOMAIN`). `None` without such a login or either clue, so
/// the model's `baseUrl` stays as configured.
pub(crate) fn copilot_base_url(agent_dir: &Path) -> Option<String> {
    let auth = crate::secrets::auth_file(agent_dir);
    let c = auth.get("github-copilot")?;
    if c.get("type").and_then(Value::as_str) != Some("oauth") {
        return None;
    }
    let proxy = c
        .get("access")
        .and_then(Value::as_str)
        .and_then(|t| t.split(';').find_map(|p| p.strip_prefix("proxy-ep=")))
        .filter(|h| !h.is_empty());
    if let Some(h) = proxy {
        let h = h
            .strip_prefix("proxy.")
            .map_or(h.to_owned(), |r| format!("api.{r}"));
        return Some(format!("https://{h}"));
    }
    let domain = c
        .get("enterpriseUrl")
        .and_then(Value::as_str)
        .map(|d| {
            let d = d.trim();
            let d = d.split("://").nth(1).unwrap_or(d);
            let host = d.split('/').next().unwrap_or_default();
            host.split(':')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase()
        })
        .filter(|d| !d.is_empty())?;
    Some(format!("https://copilot-api.{domain}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_has_the_common_models() {
        let r = Registry::builtin();
        assert!(r.models.len() > 500);
        let m = r.find("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!(m.context_window, 200_000);
        assert_eq!(m.api, "anthropic-messages");
        assert!(m.accepts_images());
        assert_eq!(r.find("openai", "gpt-5").unwrap().context_window, 400_000);
    }

    #[test]
    fn models_json_adds_and_overrides() {
        let mut r = Registry::builtin();
        let text = r#"{
          // a local server
          "providers": {
            "ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
                       "apiKey": "x", "models": [{"id": "llama3", "contextWindow": 8192,},],},
            "anthropic": {"modelOverrides": {"claude-sonnet-4-5": {"contextWindow": 1000000}}}
          }
        }"#;
        r.apply_config(text).unwrap();
        let m = r.find("ollama", "llama3").unwrap();
        assert_eq!((m.context_window, m.max_tokens), (8192, 16_384));
        assert_eq!(m.input, vec!["text".to_owned()]);
        assert_eq!(m.source, Source::Custom);
        let c = r.find("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!(
            (c.context_window, c.source),
            (1_000_000, Source::Overridden)
        );
    }

    #[test]
    fn an_invalid_field_costs_only_itself() {
        let mut r = Registry::builtin();
        let bad = r#"{"providers":{"x":{"baseUrl":"u","api":"a","models":[{"id":"m","contextWindow":"big"},{"id":"n","api":7}]},
                      "y":{"models":[{"id":"k"}]}}}"#;
        let w = r.apply_config(bad).unwrap();
        assert_eq!(r.find("x", "m").unwrap().context_window, 128_000);
        assert_eq!(r.find("x", "n").unwrap().api, "a");
        assert!(r.find("y", "k").is_none());
        assert_eq!(
            w,
            vec![
                "providers.x.models[0].contextWindow: expected a positive number, got a string; ignored",
                "providers.x.models[1].api: expected a non-empty string, got a number; ignored",
                "providers.y.models[0]: no \"api\" (set it on the provider or the model); the model is ignored",
            ]
        );
        assert!(r.apply_config("{ nope").is_err());
    }

    #[test]
    fn comments_and_trailing_commas() {
        assert_eq!(
            strip_comments("{\"a\": \"//x,}\", // c\n \"b\": [1,2,],}"),
            "{\"a\": \"//x,}\", \n \"b\": [1,2]}"
        );
    }
}
