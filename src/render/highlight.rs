//! A small code highlighter for the HTML page: comments, strings, numbers and keywords of
//! the common languages, as short elements (`<hk>` keywords, `<hs>` strings, `<hc>` comments,
//! `<hn>` numbers; unknown to HTML, styled by the page) around HTML-escaped text. It reads tokens,
//! not grammars: good enough to make code readable, and linear in the input.

use super::html::escape_text_into as escape_into;

/// Families of languages that share comment and string syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// `//` and `/* */` comments: Rust, C, C++, Java, JavaScript, TypeScript, Go, …
    CLike,
    /// `#` comments: Python, shell, Ruby, YAML, TOML, …
    Hash,
    /// `--` comments: SQL, Lua, Haskell.
    Dash,
    /// JSON: strings, numbers, literals.
    Json,
    /// No highlighting.
    Plain,
}

/// The language of a fenced block's info string or a file's extension.
pub fn lang_of(name: &str) -> Lang {
    let n = name.trim().to_ascii_lowercase();
    let n = n.rsplit('.').next().unwrap_or(&n);
    match n {
        "rs" | "rust" | "c" | "h" | "cc" | "cpp" | "hpp" | "cxx" | "java" | "js" | "mjs"
        | "cjs" | "jsx" | "ts" | "tsx" | "typescript" | "javascript" | "go" | "golang" | "kt"
        | "kotlin" | "swift" | "cs" | "csharp" | "scala" | "dart" | "php" | "css" | "scss"
        | "zig" | "proto" => Lang::CLike,
        "py" | "python" | "sh" | "bash" | "zsh" | "shell" | "console" | "rb" | "ruby" | "yaml"
        | "yml" | "toml" | "pl" | "perl" | "r" | "make" | "makefile" | "dockerfile" | "nix"
        | "ini" | "conf" | "ex" | "exs" | "elixir" => Lang::Hash,
        "sql" | "lua" | "hs" | "haskell" => Lang::Dash,
        "json" | "jsonl" | "json5" => Lang::Json,
        _ => Lang::Plain,
    }
}

/// Keywords of the common languages (a `match` compiles to a comparison by length first).
fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "as" | "async"
            | "await"
            | "break"
            | "case"
            | "catch"
            | "class"
            | "const"
            | "continue"
            | "crate"
            | "def"
            | "default"
            | "defer"
            | "del"
            | "do"
            | "elif"
            | "else"
            | "enum"
            | "except"
            | "export"
            | "extends"
            | "false"
            | "finally"
            | "fn"
            | "for"
            | "from"
            | "func"
            | "function"
            | "go"
            | "if"
            | "impl"
            | "import"
            | "in"
            | "interface"
            | "is"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "module"
            | "mut"
            | "new"
            | "nil"
            | "None"
            | "null"
            | "package"
            | "pass"
            | "pub"
            | "raise"
            | "return"
            | "self"
            | "Self"
            | "static"
            | "struct"
            | "super"
            | "switch"
            | "then"
            | "this"
            | "throw"
            | "trait"
            | "true"
            | "True"
            | "False"
            | "try"
            | "type"
            | "typeof"
            | "undefined"
            | "use"
            | "var"
            | "void"
            | "where"
            | "while"
            | "with"
            | "yield"
            | "fi"
            | "done"
            | "esac"
            | "local"
            | "echo"
            | "select"
            | "insert"
            | "update"
            | "delete"
            | "into"
            | "values"
            | "create"
            | "table"
            | "and"
            | "or"
            | "not"
            | "end"
            | "unsafe"
            | "dyn"
            | "ref"
            | "private"
            | "protected"
            | "public"
            | "lambda"
            | "assert"
    )
}

/// Longest input highlighted; longer code is escaped only.
pub const MAX: usize = 64 * 1024;

/// Writes `code` HTML-escaped, with spans for its tokens.
pub fn highlight(code: &str, lang: Lang, out: &mut String) {
    if lang == Lang::Plain || code.len() > MAX {
        escape_into(code, out);
        return;
    }
    let b = code.as_bytes();
    let mut i = 0;
    let mut plain_from = 0;
    let flush = |from: usize, to: usize, out: &mut String| {
        if to > from {
            escape_into(&code[from..to], out);
        }
    };
    while i < b.len() {
        let c = b[i];
        let rest = &b[i..];
        let token: Option<(&str, usize)> = if (lang == Lang::CLike && rest.starts_with(b"//"))
            || (lang == Lang::Hash && c == b'#')
            || (lang == Lang::Dash && rest.starts_with(b"--"))
        {
            let end = memchr::memchr(b'\n', rest).map_or(b.len(), |e| i + e);
            Some(("hc", end))
        } else if lang == Lang::CLike && rest.starts_with(b"/*") {
            let end = memchr::memmem::find(&rest[2..], b"*/").map_or(b.len(), |e| i + 2 + e + 2);
            Some(("hc", end))
        } else if c == b'"' || c == b'\'' || (c == b'`' && lang == Lang::CLike) {
            // A quote in prose (`don't`) is not a string: strings end on their line, except
            // template literals.
            let mut j = i + 1;
            let mut closed = false;
            while j < b.len() {
                if b[j] == b'\\' {
                    j += 2;
                    continue;
                }
                if b[j] == c {
                    closed = true;
                    j += 1;
                    break;
                }
                if b[j] == b'\n' && c != b'`' {
                    break;
                }
                j += 1;
            }
            closed.then_some(("hs", j.min(b.len())))
        } else if c.is_ascii_digit() && (i == 0 || !is_word(b[i - 1])) {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'.' || b[j] == b'_') {
                j += 1;
            }
            Some(("hn", j))
        } else if is_word_start(c) && (i == 0 || !is_word(b[i - 1])) {
            let mut j = i + 1;
            while j < b.len() && is_word(b[j]) {
                j += 1;
            }
            let word = &code[i..j];
            if is_keyword(word) {
                Some(("hk", j))
            } else {
                flush(plain_from, j, out);
                plain_from = j;
                i = j;
                continue;
            }
        } else {
            None
        };
        match token {
            Some((class, end)) => {
                let end = end.max(i + 1);
                // Tokens end at ASCII bytes or the end, so `end` is a char boundary; a string
                // broken off inside a multi-byte character is rounded up to the next one.
                let mut end = end.min(b.len());
                while !code.is_char_boundary(end) {
                    end += 1;
                }
                flush(plain_from, i, out);
                out.push('<');
                out.push_str(class);
                out.push('>');
                escape_into(&code[i..end], out);
                out.push_str("</");
                out.push_str(class);
                out.push('>');
                i = end;
                plain_from = end;
            }
            None => {
                i += 1;
                while i < b.len() && !code.is_char_boundary(i) {
                    i += 1;
                }
            }
        }
    }
    flush(plain_from, b.len(), out);
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hl(code: &str, lang: &str) -> String {
        let mut s = String::new();
        highlight(code, lang_of(lang), &mut s);
        s
    }

    #[test]
    fn tokens_get_spans_and_text_stays_escaped() {
        assert_eq!(
            hl("let x = \"<a>\"; // é", "rs"),
            "<hk>let</hk> x = <hs>\"&lt;a&gt;\"</hs>; <hc>// &#xe9;</hc>"
        );
        assert_eq!(hl("# hi\nx = 10", "py"), "<hc># hi</hc>\nx = <hn>10</hn>");
        assert_eq!(hl("don't <b>", "md"), "don't &lt;b&gt;");
        assert_eq!(hl("it's", "rs"), "it's");
        assert_eq!(hl("\"é", "rs"), "\"&#xe9;");
        assert_eq!(hl("/* open", "c"), "<hc>/* open</hc>");
    }
}
