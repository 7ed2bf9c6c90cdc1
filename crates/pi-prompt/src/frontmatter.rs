//! YAML frontmatter of prompt templates and skills, split off the way upstream splits it
//! (`---` at the very start, closed by the first `\n---`) and parsed with a pure-Rust YAML
//! parser using YAML 1.2 scalars (`yes` is a string, only `true`/`false` are booleans).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use pi_base::js;

/// A YAML value. Mapping keys of any scalar kind become strings (as in JavaScript objects).
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Yaml>),
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    /// JavaScript truthiness (`0`, `""`, `null`, `false` and NaN are falsy).
    pub fn truthy(&self) -> bool {
        match self {
            Yaml::Null => false,
            Yaml::Bool(b) => *b,
            Yaml::Int(i) => *i != 0,
            Yaml::Float(f) => js::number_truthy(*f),
            Yaml::Str(s) => !s.is_empty(),
            Yaml::Seq(_) | Yaml::Map(_) => true,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A scalar written as text (numbers as JavaScript prints them); `None` for collections
    /// and null.
    pub(crate) fn scalar_text(&self) -> Option<String> {
        match self {
            Yaml::Str(s) => Some(s.clone()),
            Yaml::Bool(b) => Some(b.to_string()),
            Yaml::Int(i) => Some(i.to_string()),
            Yaml::Float(f) => Some(js::number(*f)),
            Yaml::Null | Yaml::Seq(_) | Yaml::Map(_) => None,
        }
    }

    /// The value of `key` in a mapping (the last one if repeated).
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Yaml {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Yaml, D::Error> {
        d.deserialize_any(YamlVisitor)
    }
}

struct YamlVisitor;

impl<'de> Visitor<'de> for YamlVisitor {
    type Value = Yaml;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Yaml, E> {
        Ok(Yaml::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Yaml, E> {
        Ok(Yaml::Int(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Yaml, E> {
        Ok(Yaml::Int(v.into()))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Yaml, E> {
        Ok(Yaml::Int(v))
    }
    fn visit_u128<E>(self, v: u128) -> Result<Yaml, E> {
        Ok(i128::try_from(v).map_or(Yaml::Float(v as f64), Yaml::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Yaml, E> {
        Ok(Yaml::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Yaml, E> {
        Ok(Yaml::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Yaml, E> {
        Ok(Yaml::Str(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Yaml, E> {
        Ok(Yaml::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_unit<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_none<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Yaml, D::Error> {
        Yaml::deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Yaml, D::Error> {
        Yaml::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Yaml, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element::<Yaml>()? {
            v.push(x);
        }
        Ok(Yaml::Seq(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Yaml, A::Error> {
        let mut v: Vec<(String, Yaml)> = Vec::new();
        while let Some(k) = map.next_key::<Yaml>()? {
            let key = match k {
                Yaml::Null => "null".to_owned(),
                k => k
                    .scalar_text()
                    .ok_or_else(|| de::Error::custom("mapping keys must be scalars"))?,
            };
            let val = map.next_value::<Yaml>()?;
            v.push((key, val));
        }
        Ok(Yaml::Map(v))
    }
}

/// Frontmatter and body of a Markdown file.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The YAML mapping (`Yaml::Map`), or an empty mapping when there is none.
    pub frontmatter: Yaml,
    pub body: String,
}

impl Parsed {
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        self.frontmatter.get(key)
    }
}

/// A frontmatter block that is not valid YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError(pub String);

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for YamlError {}

/// Splits `content` into the YAML source (if there is a frontmatter block) and the body.
///
/// A leading byte order mark is dropped and line endings are normalized to `\n`. Without a
/// block the body is the whole normalized text, untrimmed; with one, it is what follows the
/// closing `\n---`, trimmed.
pub fn split(content: &str) -> (Option<String>, String) {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    let normalized = content.replace("\r\n", "\n").replace('\r', "\n");
    if !normalized.starts_with("---") {
        return (None, normalized);
    }
    let Some(end) = normalized
        .get(3..)
        .and_then(|rest| rest.find("\n---"))
        .map(|i| i + 3)
    else {
        return (None, normalized);
    };
    // The YAML starts after "---" and the one character that follows it.
    let yaml_start = normalized[3..]
        .chars()
        .next()
        .map_or(normalized.len(), |c| 3 + c.len_utf8());
    let yaml = if yaml_start <= end {
        normalized[yaml_start..end].to_owned()
    } else {
        String::new()
    };
    let body = js::trim(&normalized[end + 4..]).to_owned();
    (Some(yaml), body)
}

/// Parses frontmatter and body. An empty block, or one holding only comments or a scalar, is
/// an empty mapping; invalid YAML is an error that names the line and column.
pub fn parse(content: &str) -> Result<Parsed, YamlError> {
    let (yaml, body) = split(content);
    let frontmatter = match yaml {
        Some(y) if !y.is_empty() => parse_yaml(&y)?,
        _ => Yaml::Map(Vec::new()),
    };
    let frontmatter = match frontmatter {
        m @ Yaml::Map(_) => m,
        _ => Yaml::Map(Vec::new()),
    };
    Ok(Parsed { frontmatter, body })
}

/// The body without the frontmatter block (the YAML is not parsed).
pub fn strip(content: &str) -> String {
    split(content).1
}

fn parse_yaml(src: &str) -> Result<Yaml, YamlError> {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.with_snippet = false;
    let parsed: Result<Option<Yaml>, _> = serde_saphyr::from_str_with_options(src, options);
    match parsed {
        Ok(v) => Ok(v.unwrap_or(Yaml::Null)),
        Err(e) => Err(YamlError(one_line_error(&e.to_string()))),
    }
}

fn one_line_error(s: &str) -> String {
    let s = super::text::one_line(s);
    if s.is_empty() {
        "invalid YAML frontmatter".to_owned()
    } else {
        s
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn s(v: &str) -> Yaml {
        Yaml::Str(v.to_owned())
    }

    #[test]
    fn parses_quoted_values() {
        let p = parse(
            "---\nname: \"skill-name\"\ndescription: 'A desc'\nfoo-bar: value\n---\n\nBody text",
        )
        .unwrap();
        assert_eq!(p.get("name"), Some(&s("skill-name")));
        assert_eq!(p.get("description"), Some(&s("A desc")));
        assert_eq!(p.get("foo-bar"), Some(&s("value")));
        assert_eq!(p.body, "Body text");
    }

    #[test]
    fn normalizes_crlf() {
        let p = parse("---\r\nname: test\r\n---\r\nLine one\r\nLine two").unwrap();
        assert_eq!(p.body, "Line one\nLine two");
        assert_eq!(p.get("name"), Some(&s("test")));
    }

    #[test]
    fn reports_bad_yaml_with_position() {
        let e = parse("---\nfoo: [bar\n---\nBody").unwrap_err();
        assert!(e.0.contains("line"), "{e}");
    }

    #[test]
    fn keeps_block_scalar_newlines() {
        let p = parse("---\ndescription: |\n  Line one\n  Line two\n---\n\nBody").unwrap();
        assert_eq!(p.get("description"), Some(&s("Line one\nLine two\n")));
        assert_eq!(p.body, "Body");
    }

    #[test]
    fn without_frontmatter_the_body_is_untouched() {
        assert_eq!(
            parse("Just text\nsecond line").unwrap().body,
            "Just text\nsecond line"
        );
        let t = "---\nname: test\nBody without terminator";
        assert_eq!(parse(t).unwrap().body, t);
        assert_eq!(
            strip("\n  No frontmatter body  \n"),
            "\n  No frontmatter body  \n"
        );
        assert_eq!(strip("---\nkey: value\n---\n\nBody\n"), "Body");
    }

    #[test]
    fn comment_only_block_is_empty() {
        let p = parse("---\n# just a comment\n---\nBody").unwrap();
        assert_eq!(p.frontmatter, Yaml::Map(vec![]));
        assert_eq!(p.body, "Body");
    }

    #[test]
    fn yaml_12_booleans_and_odd_keys() {
        let p = parse("---\na: yes\nb: true\n1: one\nc: 1.5\n---\n").unwrap();
        assert_eq!(p.get("a"), Some(&s("yes")));
        assert_eq!(p.get("b"), Some(&Yaml::Bool(true)));
        assert_eq!(p.get("1"), Some(&s("one")));
        assert_eq!(
            p.get("c").and_then(Yaml::scalar_text).as_deref(),
            Some("1.5")
        );
    }

    #[test]
    fn floats_are_written_as_javascript_writes_them() {
        let p = parse("---\na: 1e-7\nb: -0.0\nc: 1e21\nd: 2.0\n---\n").unwrap();
        let text = |k: &str| p.get(k).and_then(Yaml::scalar_text);
        assert_eq!(text("a").as_deref(), Some("1e-7"));
        assert_eq!(text("b").as_deref(), Some("0"));
        assert_eq!(text("c").as_deref(), Some("1e+21"));
        assert_eq!(text("d").as_deref(), Some("2"));
    }

    #[test]
    fn odd_markers() {
        assert_eq!(split("---\n---\nx"), (Some(String::new()), "x".to_owned()));
        assert_eq!(split("---"), (None, "---".to_owned()));
        assert_eq!(split("---é\n---\nb"), (Some(String::new()), "b".to_owned()));
        assert_eq!(split("----\n---"), (Some(String::new()), String::new()));
    }

    #[test]
    fn hostile_input_does_not_panic() {
        for t in [
            "---\n&a [*a]\n---\n",
            "---\n: : :\n---\n",
            "---\n\t- x\n---\n",
            "---\n{{{{\n---\n",
            "---\na: !!binary xyz\n---\n",
            "---\n- 1\n- 2\n---\nbody",
            "---\n? [a]\n: b\n---\n",
        ] {
            let _ = parse(t);
        }
    }
}
