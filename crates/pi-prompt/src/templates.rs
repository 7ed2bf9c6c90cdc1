//! Prompt templates: Markdown files whose name is a `/command` and whose body, with arguments
//! substituted, replaces the command.

use std::path::{Path, PathBuf};

use super::args::{positional_needed, split_args, substitute_args};
use super::{Diagnostic, SourceInfo, frontmatter, fsx};
use pi_base::js;

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// The file name without `.md`: `review.md` is `/review`.
    pub name: String,
    /// Frontmatter `description`, else the first non-blank body line (cut to 60 characters).
    pub description: String,
    /// Frontmatter `argument-hint` (shown before the description).
    pub argument_hint: Option<String>,
    /// The body after the frontmatter.
    pub content: String,
    pub source: SourceInfo,
    pub path: PathBuf,
}

/// Loads one template file; a warning if it cannot be read or its frontmatter is invalid (the
/// reference 1.6 reports such files; 0.73 skipped them without a word).
pub(crate) fn load_file(path: &Path, source: SourceInfo) -> Result<Template, Box<Diagnostic>> {
    let warn = |m: String| Box::new(Diagnostic::warning(m, path));
    let raw = super::read_text(path).map_err(|e| warn(e.to_string()))?;
    let parsed = frontmatter::parse(&raw).map_err(|e| warn(e.0))?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let name = file_name
        .strip_suffix(".md")
        .unwrap_or(&file_name)
        .to_owned();
    // Only text counts (a number or a list is ignored, as in the reference 1.6).
    let text_of = |key: &str| {
        parsed
            .get(key)
            .and_then(frontmatter::Yaml::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let mut description = text_of("description").unwrap_or_default();
    if description.is_empty()
        && let Some(first) = parsed.body.split('\n').find(|l| !js::trim(l).is_empty())
    {
        description = js::utf16_prefix(first, 60).to_owned();
        if js::utf16_len(first) > 60 {
            description.push_str("...");
        }
    }
    let argument_hint = text_of("argument-hint");
    Ok(Template {
        name,
        description,
        argument_hint,
        content: parsed.body,
        source,
        path: path.to_path_buf(),
    })
}

/// The direct `*.md` children of `dir` (symlinks followed), in name order, and the warnings
/// about those that could not be loaded.
pub(crate) fn load_dir(
    dir: &Path,
    source_of: &dyn Fn(&Path) -> SourceInfo,
) -> (Vec<Template>, Vec<Diagnostic>) {
    let mut out = (Vec::new(), Vec::new());
    for e in fsx::list(dir).unwrap_or_default() {
        if e.is_file && e.name.ends_with(".md") {
            match load_file(&e.path, source_of(&e.path)) {
                Ok(t) => out.0.push(t),
                Err(d) => out.1.push(*d),
            }
        }
    }
    out
}

/// The result of expanding a `/name args` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Expansion<'a> {
    pub template: &'a Template,
    pub args: Vec<String>,
    pub text: String,
    /// Set when the arguments had unbalanced quotes and were split at whitespace.
    pub warning: Option<String>,
}

/// The template name of a `/name args` text and the argument string: the name runs to the
/// first whitespace character (any JavaScript one: a space, a tab, a newline, NBSP, ...), and
/// the arguments start after the whitespace that follows it. `None` when the text does not
/// start with `/` followed by a name.
pub(crate) fn parse_invocation(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    let end = rest.find(js::is_space).unwrap_or(rest.len());
    if end == 0 {
        return None;
    }
    Some((&rest[..end], rest[end..].trim_start_matches(js::is_space)))
}

/// Expands `text` if it is `/name args` for a known template (first match by name).
/// `words`, when given, are the already split arguments (from a shell).
pub fn expand<'a>(
    text: &str,
    templates: &'a [Template],
    words: Option<&[String]>,
) -> Option<Expansion<'a>> {
    let (name, args_str) = parse_invocation(text)?;
    let template = templates.iter().find(|t| t.name == name)?;
    let (args, warning) = match words {
        Some(w) => (w.to_vec(), None),
        None => split_args(args_str),
    };
    Some(Expansion {
        text: substitute_args(&template.content, &args),
        template,
        args,
        warning,
    })
}

/// Why a `/name args` text is refused where typos must not pass (`pi prompt expand`; the
/// agent, like the reference, sends such text as it is).
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// No template has this name; `known` are the names there are, the closest first when
    /// one is close.
    Unknown {
        name: String,
        known: Vec<String>,
        closest: Option<String>,
    },
    /// The template uses `$needed` (of `$1`..`$9`) and fewer arguments were given.
    MissingArguments {
        name: String,
        needed: usize,
        given: usize,
        argument_hint: Option<String>,
    },
}

/// The strict reading of `text` and of what [`expand`] made of it (`expanded`): `/name` must
/// be a template, and every one of `$1`..`$9` the template uses must have an argument.
/// Text that does not start with `/`, and `/` followed by a name that cannot be a template's
/// (empty, or with a `/` in it, as in a path) are not invocations and pass.
pub fn refuse(
    text: &str,
    templates: &[Template],
    expanded: Option<&Expansion<'_>>,
) -> Option<Refusal> {
    if let Some(x) = expanded {
        let needed = positional_needed(&x.template.content);
        return (x.args.len() < needed).then(|| Refusal::MissingArguments {
            name: x.template.name.clone(),
            needed,
            given: x.args.len(),
            argument_hint: x.template.argument_hint.clone(),
        });
    }
    let (name, _) = parse_invocation(text)?;
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let mut known: Vec<String> = Vec::new();
    for t in templates {
        if !known.contains(&t.name) {
            known.push(t.name.clone());
        }
    }
    let closest = known
        .iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, k)| *d <= 2 && *d < k.chars().count())
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.clone());
    Some(Refusal::Unknown {
        name: name.to_owned(),
        known,
        closest,
    })
}

/// The Levenshtein distance of two names, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let change = prev[j] + usize::from(ca != *cb);
            row[j + 1] = change.min(prev[j + 1] + 1).min(row[j] + 1);
        }
        prev = row;
    }
    prev[b.len()]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::Scope;

    fn t(name: &str, content: &str) -> Template {
        Template {
            name: name.to_owned(),
            description: String::new(),
            argument_hint: None,
            content: content.to_owned(),
            source: SourceInfo {
                source: "auto",
                scope: Scope::User,
                base_dir: PathBuf::new(),
            },
            path: PathBuf::from(format!("/p/{name}.md")),
        }
    }

    #[test]
    fn invocation_rules() {
        let ts = [t("t", "[$1][$2]"), t("all", "[$@]")];
        assert_eq!(expand("/t  two", &ts, None).unwrap().text, "[two][]");
        assert_eq!(expand("/all", &ts, None).unwrap().text, "[]");
        assert_eq!(expand("/t\targ", &ts, None).unwrap().text, "[arg][]");
        assert_eq!(expand("/t\n\u{a0}x y", &ts, None).unwrap().text, "[x][y]");
        assert!(expand("/\tt", &ts, None).is_none());
        assert!(expand("/t\u{200b}x", &ts, None).is_none());
        assert!(expand("/x y", &ts, None).is_none());
        assert!(expand("t y", &ts, None).is_none());
        let words = ["a b".to_owned(), "c".to_owned()];
        assert_eq!(
            expand("/t a b c", &ts, Some(&words)).unwrap().text,
            "[a b][c]"
        );
    }

    #[test]
    fn strict_reading() {
        let mut review = t("review", "Review PR $1. Focus on ${@:2}.");
        review.argument_hint = Some("<pr> [files...]".into());
        let ts = [review, t("fix", "Fix it"), t("all", "$@")];
        let refusal = |text: &str| refuse(text, &ts, expand(text, &ts, None).as_ref());
        assert_eq!(refusal("/review 1234"), None);
        assert_eq!(refusal("/fix"), None);
        assert_eq!(refusal("/all"), None);
        assert_eq!(refusal("plain text"), None);
        assert_eq!(refusal("/etc/hosts is a file"), None);
        assert_eq!(refusal("/ x"), None);
        assert_eq!(
            refusal("/review"),
            Some(Refusal::MissingArguments {
                name: "review".into(),
                needed: 1,
                given: 0,
                argument_hint: Some("<pr> [files...]".into()),
            })
        );
        assert_eq!(
            refusal("/revew 1234"),
            Some(Refusal::Unknown {
                name: "revew".into(),
                known: vec!["review".into(), "fix".into(), "all".into()],
                closest: Some("review".into()),
            })
        );
        let Some(Refusal::Unknown { closest, .. }) = refusal("/deploy now") else {
            panic!("not refused");
        };
        assert_eq!(closest, None);
        // An empty argument given by the shell is an argument.
        let words = [String::new()];
        let x = expand("/review ", &ts, Some(&words));
        assert_eq!(refuse("/review ", &ts, x.as_ref()), None);
        assert_eq!(edit_distance("revew", "review"), 1);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("fix", "fxi"), 2);
    }

    #[test]
    fn descriptions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("long.md");
        std::fs::write(&p, format!("\n  \n{}\nsecond", "x".repeat(70))).unwrap();
        let src = SourceInfo {
            source: "auto",
            scope: Scope::User,
            base_dir: PathBuf::new(),
        };
        let tpl = load_file(&p, src.clone()).unwrap();
        assert_eq!(tpl.description, format!("{}...", "x".repeat(60)));
        assert_eq!(tpl.name, "long");
        let p = dir.path().join("fm.md");
        std::fs::write(
            &p,
            "---\ndescription: Review\nargument-hint: \"<pr>\"\n---\nBody $1\n",
        )
        .unwrap();
        let tpl = load_file(&p, src.clone()).unwrap();
        assert_eq!(tpl.description, "Review");
        assert_eq!(tpl.argument_hint.as_deref(), Some("<pr>"));
        assert_eq!(tpl.content, "Body $1");
        let p = dir.path().join("bad.md");
        std::fs::write(&p, "---\nx: [\n---\nBody").unwrap();
        assert!(
            load_file(&p, src.clone())
                .unwrap_err()
                .message
                .contains("line")
        );
        let p = dir.path().join("bom.md");
        std::fs::write(
            &p,
            "\u{feff}---\ndescription: 42\nargument-hint: [x]\n---\nFirst\n",
        )
        .unwrap();
        let tpl = load_file(&p, src).unwrap();
        assert_eq!(
            (tpl.description.as_str(), tpl.argument_hint),
            ("First", None)
        );
        assert_eq!(tpl.content, "First");
    }
}
