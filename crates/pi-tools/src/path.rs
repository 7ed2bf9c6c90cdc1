//! Paths given by the model: a leading `@` is dropped, unusual spaces become plain spaces,
//! `~` is the home directory, and relative paths are taken from the session's working
//! directory. `read` also finds files whose names differ from what the model typed only in
//! the ways macOS names screenshots (narrow no-break space before AM/PM, decomposed accents,
//! curly apostrophes).
//!
//! Also here: error texts for failed file-system calls in the form the model sees from
//! upstream (`ENOENT: no such file or directory, open '/x'`).

use std::path::{Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// Spaces that models and macOS put in file names where a plain space is meant.
fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

fn home() -> String {
    std::env::var_os("HOME")
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Drops one leading `@`, turns unusual spaces into plain ones and expands `~` / `~/…`.
pub fn expand_path(path: &str) -> String {
    let path = path.strip_prefix('@').unwrap_or(path);
    let normalized: String = path
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if normalized == "~" {
        return home();
    }
    if let Some(rest) = normalized.strip_prefix("~/") {
        return format!("{}/{rest}", home());
    }
    normalized
}

/// `path` made absolute against `cwd` (after [`expand_path`]). Absolute paths are kept as
/// they are; relative ones are joined to `cwd` and normalized (`.`, `..`, repeated and
/// trailing slashes), as Node's `path.resolve` does.
pub fn resolve_to_cwd(path: &str, cwd: &Path) -> PathBuf {
    let expanded = expand_path(path);
    if expanded.starts_with('/') {
        return PathBuf::from(expanded);
    }
    let base = if cwd.is_absolute() {
        cwd.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(cwd)
    };
    PathBuf::from(normalize(&format!("{}/{expanded}", base.to_string_lossy())))
}

/// The directory a listing tool (find, grep, ls) works in: `path` resolved against `cwd`,
/// or `cwd` itself when `path` is missing or empty.
pub(crate) fn search_root(path: Option<&str>, cwd: &Path) -> PathBuf {
    resolve_to_cwd(path.filter(|p| !p.is_empty()).unwrap_or("."), cwd)
}

/// The metadata of a path the model named, or the `Path not found` error grep and ls give.
pub fn metadata(path: &Path) -> Result<std::fs::Metadata, super::ToolError> {
    std::fs::metadata(path)
        .map_err(|_| super::ToolError(format!("Path not found: {}", path.display())))
}

/// Lexical normalization of an absolute path.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

fn exists(p: &str) -> bool {
    Path::new(p).exists()
}

/// Replaces ` AM.` / ` PM.` (any case) with a narrow no-break space before the letters.
fn am_pm_variant(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let b = s.as_bytes();
    while i < s.len() {
        if b[i] == b' '
            && i + 4 <= s.len()
            && matches!(b[i + 1], b'A' | b'a' | b'P' | b'p')
            && matches!(b[i + 2], b'M' | b'm')
            && b[i + 3] == b'.'
        {
            out.push('\u{202F}');
            out.push_str(&s[i + 1..i + 4]);
            i += 4;
            continue;
        }
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Like [`resolve_to_cwd`], but when nothing exists there, tries the macOS variants of the
/// name in upstream's order and returns the first that exists (else the plain resolution).
pub fn resolve_read_path(path: &str, cwd: &Path) -> PathBuf {
    let resolved = resolve_to_cwd(path, cwd);
    let r = resolved.to_string_lossy().into_owned();
    if exists(&r) {
        return resolved;
    }
    let am_pm = am_pm_variant(&r);
    if am_pm != r && exists(&am_pm) {
        return PathBuf::from(am_pm);
    }
    let nfd: String = r.nfd().collect();
    if nfd != r && exists(&nfd) {
        return PathBuf::from(nfd);
    }
    let curly = r.replace('\'', "\u{2019}");
    if curly != r && exists(&curly) {
        return PathBuf::from(curly);
    }
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    if nfd_curly != r && exists(&nfd_curly) {
        return PathBuf::from(nfd_curly);
    }
    resolved
}

/// The POSIX name and libuv description of an error number, as Node reports them.
pub(crate) fn errno_name(errno: i32) -> Option<(&'static str, &'static str)> {
    Some(match errno {
        libc::ENOENT => ("ENOENT", "no such file or directory"),
        libc::EACCES => ("EACCES", "permission denied"),
        libc::EISDIR => ("EISDIR", "illegal operation on a directory"),
        libc::ENOTDIR => ("ENOTDIR", "not a directory"),
        libc::EEXIST => ("EEXIST", "file already exists"),
        libc::ELOOP => ("ELOOP", "too many symbolic links encountered"),
        libc::ENAMETOOLONG => ("ENAMETOOLONG", "name too long"),
        libc::EPERM => ("EPERM", "operation not permitted"),
        libc::EROFS => ("EROFS", "read-only file system"),
        libc::ENOSPC => ("ENOSPC", "no space left on device"),
        libc::EMFILE => ("EMFILE", "too many open files"),
        libc::ENFILE => ("ENFILE", "file table overflow"),
        libc::EBUSY => ("EBUSY", "resource busy or locked"),
        libc::ETXTBSY => ("ETXTBSY", "text file is busy"),
        libc::EINVAL => ("EINVAL", "invalid argument"),
        libc::EIO => ("EIO", "i/o error"),
        libc::EFBIG => ("EFBIG", "file too large"),
        libc::EDQUOT => ("EDQUOT", "disk quota exceeded"),
        libc::EAGAIN => ("EAGAIN", "resource temporarily unavailable"),
        _ => return None,
    })
}

/// `CODE: description, syscall 'path'` (Node's form), or the error's own text when it has
/// no error number we know.
pub(crate) fn io_message(err: &std::io::Error, syscall: &str, path: &Path) -> String {
    match err.raw_os_error().and_then(errno_name) {
        Some((code, text)) => format!("{code}: {text}, {syscall} '{}'", path.display()),
        None => err.to_string(),
    }
}

/// `CODE: description, syscall`: Node's form for calls on an open file (no path).
pub(crate) fn io_message_no_path(err: &std::io::Error, syscall: &str) -> String {
    match err.raw_os_error().and_then(errno_name) {
        Some((code, text)) => format!("{code}: {text}, {syscall}"),
        None => err.to_string(),
    }
}

/// The POSIX code of an I/O error (`ENOENT`), if it has one we know.
pub(crate) fn io_code(err: &std::io::Error) -> Option<&'static str> {
    err.raw_os_error().and_then(errno_name).map(|(c, _)| c)
}

/// `access(2)`: whether the calling process may use `path` in `mode` (`libc::R_OK` …).
pub(crate) fn access(path: &Path, mode: libc::c_int) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::ENOENT))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call; access(2) only
    // reads it.
    let rc = unsafe { libc::access(c.as_ptr(), mode) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands() {
        assert_eq!(expand_path("@a/b"), "a/b");
        assert_eq!(expand_path("a\u{3000}b\u{2009}c"), "a b c");
        assert!(!expand_path("~").contains('~'));
        assert!(expand_path("~/x").ends_with("/x"));
        assert_eq!(expand_path("~x"), "~x");
    }

    #[test]
    fn resolves() {
        let cwd = Path::new("/some/cwd");
        assert_eq!(
            resolve_to_cwd("/absolute/path/file.txt", cwd),
            PathBuf::from("/absolute/path/file.txt")
        );
        assert_eq!(
            resolve_to_cwd("relative/file.txt", cwd),
            PathBuf::from("/some/cwd/relative/file.txt")
        );
        assert_eq!(resolve_to_cwd("../x/./y/", cwd), PathBuf::from("/some/x/y"));
        assert_eq!(resolve_to_cwd(".", cwd), PathBuf::from("/some/cwd"));
        assert_eq!(resolve_to_cwd("../../..", cwd), PathBuf::from("/"));
    }

    #[test]
    fn am_pm() {
        assert_eq!(
            am_pm_variant("Shot 10.00.00 AM.png"),
            "Shot 10.00.00\u{202F}AM.png"
        );
        assert_eq!(am_pm_variant("x pm.png"), "x\u{202F}pm.png");
        assert_eq!(am_pm_variant("é AMx"), "é AMx");
    }
}
