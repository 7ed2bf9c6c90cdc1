//! The fields of `models.json` that the reference 1.6 documents, checked one by one: a
//! field of the wrong type or an unknown key is dropped with a warning naming its path
//! (`providers.acme.models[1].contextWindow: expected a positive number`), an entry that
//! cannot stand without it (a model without an `id`, a tier without its prices) is dropped
//! with it, and everything else of the file still applies (docs/decisions.md §1).

use serde_json::{Map, Value};

#[derive(Clone, Copy)]
enum Kind {
    NonEmpty,
    Bool,
    Positive,
    Object,
    Headers,
    Input,
    ThinkingMap,
    Cost {
        partial: bool,
    },
    /// `oauth`: only `"radius"`.
    Radius,
}

const PROVIDER: &[(&str, Kind)] = &[
    ("name", Kind::NonEmpty),
    ("baseUrl", Kind::NonEmpty),
    ("apiKey", Kind::NonEmpty),
    ("api", Kind::NonEmpty),
    ("oauth", Kind::Radius),
    ("headers", Kind::Headers),
    ("compat", Kind::Object),
    ("authHeader", Kind::Bool),
];

/// Fields of a model definition (`models[]`); overrides have these without `id`, `api` and
/// `baseUrl`.
const MODEL: &[(&str, Kind)] = &[
    ("id", Kind::NonEmpty),
    ("api", Kind::NonEmpty),
    ("baseUrl", Kind::NonEmpty),
    ("name", Kind::NonEmpty),
    ("reasoning", Kind::Bool),
    ("thinkingLevelMap", Kind::ThinkingMap),
    ("input", Kind::Input),
    ("inputLimits", Kind::Object),
    ("cost", Kind::Cost { partial: false }),
    ("promptCache", Kind::Object),
    ("contextWindow", Kind::Positive),
    ("maxTokens", Kind::Positive),
    ("samplingParams", Kind::Object),
    ("samplingParamsByThinkingLevel", Kind::Object),
    ("headers", Kind::Headers),
    ("compat", Kind::Object),
];

const PRICES: [&str; 4] = ["input", "output", "cacheRead", "cacheWrite"];

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Collects the warnings of one file.
pub(super) struct Checker {
    pub(super) warnings: Vec<String>,
}

impl Checker {
    fn warn(&mut self, at: &str, what: &str) {
        self.warnings.push(format!("{at}: {what}"));
    }

    fn expected(&mut self, at: &str, what: &str, v: &Value) {
        self.warn(
            at,
            &format!("expected {what}, got {}; ignored", describe(v)),
        );
    }

    /// The valid `providers` of a parsed file.
    pub(super) fn file(&mut self, config: &Value) -> Map<String, Value> {
        let Some(o) = config.as_object() else {
            self.expected("root", "an object", config);
            return Map::new();
        };
        for k in o
            .keys()
            .filter(|k| !matches!(k.as_str(), "$schema" | "providers"))
        {
            self.warn(k, "unknown key; ignored");
        }
        let Some(p) = o.get("providers") else {
            self.warn("providers", "missing; nothing configured");
            return Map::new();
        };
        let Some(p) = p.as_object() else {
            self.expected("providers", "an object", p);
            return Map::new();
        };
        let mut out = Map::new();
        for (name, v) in p {
            let at = format!("providers.{name}");
            let Some(v) = v.as_object() else {
                self.expected(&at, "an object", v);
                continue;
            };
            out.insert(name.clone(), Value::Object(self.provider(&at, v)));
        }
        out
    }

    fn provider(&mut self, at: &str, p: &Map<String, Value>) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, v) in p {
            let here = format!("{at}.{k}");
            match k.as_str() {
                "models" => {
                    let Some(a) = v.as_array() else {
                        self.expected(&here, "an array", v);
                        continue;
                    };
                    let models = a
                        .iter()
                        .enumerate()
                        .filter_map(|(i, m)| self.model(&format!("{here}[{i}]"), m, false))
                        .collect();
                    out.insert(k.clone(), Value::Array(models));
                }
                "modelOverrides" => {
                    let Some(o) = v.as_object() else {
                        self.expected(&here, "an object", v);
                        continue;
                    };
                    let mut overrides = Map::new();
                    for (id, m) in o {
                        if let Some(m) = self.model(&format!("{here}.{id}"), m, true) {
                            overrides.insert(id.clone(), m);
                        }
                    }
                    out.insert(k.clone(), Value::Object(overrides));
                }
                _ => match PROVIDER.iter().find(|(n, _)| n == k) {
                    Some((_, kind)) => {
                        if let Some(v) = self.field(&here, *kind, v) {
                            out.insert(k.clone(), v);
                        }
                    }
                    None => self.warn(&here, "unknown key; ignored"),
                },
            }
        }
        out
    }

    /// A model definition (or an override): its valid fields, or `None` when it cannot
    /// stand (not an object, a definition without an `id`).
    fn model(&mut self, at: &str, m: &Value, is_override: bool) -> Option<Value> {
        let Some(o) = m.as_object() else {
            self.expected(at, "an object", m);
            return None;
        };
        let mut out = Map::new();
        for (k, v) in o {
            let here = format!("{at}.{k}");
            let known = MODEL
                .iter()
                .filter(|(n, _)| !is_override || !matches!(*n, "id" | "api" | "baseUrl"))
                .find(|(n, _)| n == k);
            match known {
                Some((_, Kind::Cost { .. })) => {
                    if let Some(v) = self.field(
                        &here,
                        Kind::Cost {
                            partial: is_override,
                        },
                        v,
                    ) {
                        out.insert(k.clone(), v);
                    }
                }
                Some((_, kind)) => {
                    if let Some(v) = self.field(&here, *kind, v) {
                        out.insert(k.clone(), v);
                    }
                }
                None => self.warn(&here, "unknown key; ignored"),
            }
        }
        if !is_override && !out.contains_key("id") {
            if !o.contains_key("id") {
                self.warn(&format!("{at}.id"), "missing; the model is ignored");
            } else {
                self.warn(at, "no valid id; the model is ignored");
            }
            return None;
        }
        Some(Value::Object(out))
    }

    /// The value of a field when it is valid (members that are not, dropped with a
    /// warning); `None` with a warning when nothing of it is.
    fn field(&mut self, at: &str, kind: Kind, v: &Value) -> Option<Value> {
        let ok = match kind {
            Kind::NonEmpty => v.as_str().is_some_and(|s| !s.is_empty()),
            Kind::Bool => v.is_boolean(),
            Kind::Positive => v.as_f64().is_some_and(|f| f.is_finite() && f > 0.0),
            Kind::Object => v.is_object(),
            Kind::Radius => v.as_str() == Some("radius"),
            Kind::Input => v.as_array().is_some_and(|a| {
                a.iter()
                    .all(|x| matches!(x.as_str(), Some("text" | "image")))
            }),
            Kind::ThinkingMap => v
                .as_object()
                .is_some_and(|o| o.values().all(|x| x.is_null() || x.is_string())),
            Kind::Headers => return self.headers(at, v),
            Kind::Cost { partial } => return self.cost(at, v, partial),
        };
        if ok {
            return Some(v.clone());
        }
        let what = match kind {
            Kind::NonEmpty => "a non-empty string",
            Kind::Bool => "a boolean",
            Kind::Positive => "a positive number",
            Kind::Object => "an object",
            Kind::Radius => "\"radius\"",
            Kind::Input => "a list of \"text\" and \"image\"",
            Kind::ThinkingMap => "an object of strings and nulls",
            Kind::Headers | Kind::Cost { .. } => "an object",
        };
        self.expected(at, what, v);
        None
    }

    fn headers(&mut self, at: &str, v: &Value) -> Option<Value> {
        let Some(o) = v.as_object() else {
            self.expected(at, "an object of strings", v);
            return None;
        };
        let mut out = Map::new();
        for (k, x) in o {
            if x.is_string() {
                out.insert(k.clone(), x.clone());
            } else {
                self.expected(&format!("{at}.{k}"), "a string", x);
            }
        }
        Some(Value::Object(out))
    }

    /// `cost`: the four prices (required in a definition: a missing one counts as 0 with a
    /// warning) and `tiers`, each tier kept only with all five of its numbers.
    fn cost(&mut self, at: &str, v: &Value, partial: bool) -> Option<Value> {
        let Some(o) = v.as_object() else {
            self.expected(at, "an object", v);
            return None;
        };
        let mut out = Map::new();
        for (k, x) in o {
            let here = format!("{at}.{k}");
            if PRICES.contains(&k.as_str()) {
                if x.as_f64().is_some_and(f64::is_finite) {
                    out.insert(k.clone(), x.clone());
                } else {
                    self.expected(&here, "a number", x);
                }
            } else if k == "tiers" {
                let Some(a) = x.as_array() else {
                    self.expected(&here, "an array", x);
                    continue;
                };
                let tiers = a
                    .iter()
                    .enumerate()
                    .filter(|(i, t)| self.tier(&format!("{here}[{i}]"), t))
                    .map(|(_, t)| t.clone())
                    .collect();
                out.insert(k.clone(), Value::Array(tiers));
            } else {
                self.warn(&here, "unknown key; ignored");
            }
        }
        if !partial {
            for k in PRICES.iter().filter(|k| !out.contains_key(**k)) {
                if !o.contains_key(*k) {
                    self.warn(&format!("{at}.{k}"), "missing; 0 used");
                }
            }
        }
        Some(Value::Object(out))
    }

    fn tier(&mut self, at: &str, t: &Value) -> bool {
        let Some(o) = t.as_object() else {
            self.expected(at, "an object", t);
            return false;
        };
        for k in o.keys() {
            if k != "inputTokensAbove" && !PRICES.contains(&k.as_str()) {
                self.warn(&format!("{at}.{k}"), "unknown key; ignored");
            }
        }
        for k in std::iter::once("inputTokensAbove").chain(PRICES) {
            match o.get(k) {
                Some(x) if x.as_f64().is_some_and(f64::is_finite) => {}
                Some(x) => {
                    self.expected(&format!("{at}.{k}"), "a number", x);
                    self.warn(at, "the tier is ignored");
                    return false;
                }
                None => {
                    self.warn(&format!("{at}.{k}"), "missing; the tier is ignored");
                    return false;
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: Value) -> (Map<String, Value>, Vec<String>) {
        let mut c = Checker {
            warnings: Vec::new(),
        };
        let p = c.file(&v);
        (p, c.warnings)
    }

    #[test]
    fn bad_fields_are_dropped_with_their_path() {
        let (p, w) = check(json!({"providers": {"acme": {
            "baseUrl": "http://x", "api": "openai-completions", "color": "red",
            "models": [{"id": "a"}, {"id": "b", "contextWindow": "big", "maxTokens": 10},
                       {"name": "no id"}, 7],
            "modelOverrides": {"m": {"id": "x", "cost": {"input": "one", "output": 2}}}
        }}}));
        assert_eq!(
            w,
            vec![
                "providers.acme.color: unknown key; ignored",
                "providers.acme.models[1].contextWindow: expected a positive number, got a string; ignored",
                "providers.acme.models[2].id: missing; the model is ignored",
                "providers.acme.models[3]: expected an object, got a number; ignored",
                "providers.acme.modelOverrides.m.id: unknown key; ignored",
                "providers.acme.modelOverrides.m.cost.input: expected a number, got a string; ignored",
            ]
        );
        let acme = &p["acme"];
        assert_eq!(acme["models"].as_array().unwrap().len(), 2);
        assert_eq!(acme["models"][1], json!({"id": "b", "maxTokens": 10}));
        assert_eq!(acme["modelOverrides"]["m"], json!({"cost": {"output": 2}}));
        assert!(acme.get("color").is_none());
    }

    #[test]
    fn tiers_and_prices() {
        let (p, w) = check(json!({"providers": {"a": {"models": [{"id": "m", "cost": {
            "input": 1, "output": 2, "cacheRead": 0,
            "tiers": [{"inputTokensAbove": 5}, {"inputTokensAbove": 9, "input": 1, "output": 1, "cacheRead": 1, "cacheWrite": 1}]
        }}]}}}));
        assert_eq!(
            w,
            vec![
                "providers.a.models[0].cost.tiers[0].input: missing; the tier is ignored",
                "providers.a.models[0].cost.cacheWrite: missing; 0 used",
            ]
        );
        let tiers = p["a"]["models"][0]["cost"]["tiers"].as_array().unwrap();
        assert_eq!(tiers.len(), 1);
        assert_eq!(tiers[0]["inputTokensAbove"], 9);
    }

    #[test]
    fn documented_keys_pass_silently() {
        let (_, w) = check(
            json!({"$schema": "https://pi.dev/schemas/models.schema.json",
            "providers": {"a": {"name": "A", "baseUrl": "u", "apiKey": "$K", "api": "x",
            "oauth": "radius", "headers": {"h": "v"}, "compat": {}, "authHeader": true,
            "models": [{"id": "m", "name": "M", "api": "y", "baseUrl": "v", "reasoning": true,
                "thinkingLevelMap": {"high": "max", "xhigh": null}, "input": ["text", "image"],
                "inputLimits": {"maxRequestBytes": 5}, "promptCache": {}, "contextWindow": 5,
                "maxTokens": 1, "samplingParams": {"top_k": 1},
                "samplingParamsByThinkingLevel": {"off": {}}, "headers": {}, "compat": {},
                "cost": {"input": 1, "output": 1, "cacheRead": 1, "cacheWrite": 1, "tiers": []}}],
            "modelOverrides": {"z": {"name": "Z", "reasoning": false, "cost": {"input": 3}}}}}}),
        );
        assert!(w.is_empty(), "{w:?}");
    }
}
