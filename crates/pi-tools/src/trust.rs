//! Which projects' code may run (docs/decisions.md §6): a project's hooks (`hooks` in its
//! `.pi/settings.json`), its program tools (`.pi/tools/`) and its `shellEnvironmentPolicy`
//! are used only after `pi trust DIR`, and only while the project's extension files are the
//! ones that were trusted — as direnv binds `direnv allow` to the content of `.envrc`.
//!
//! What is bound: `.pi/settings.json` and every file under `.pi/tools/` and `.pi/hooks/`
//! (recursively; hidden files too). Each is hashed (SHA-256) with its path relative to the
//! project, its kind (file, executable file, symbolic link, directory, other) and its bytes;
//! a symbolic link with its target's text and, when that is a regular file, the target's
//! bytes. Adding, removing, renaming, editing or `chmod +x`-ing any of them makes the
//! project untrusted again. Programs a hook runs from elsewhere (`./scripts/x`) are not
//! covered: keep them in `.pi/hooks/`.
//!
//! The trusted projects are kept in `<agent dir>/trust.json` (0600), keyed by the
//! project's canonical path:
//!
//! ```json
//! {"version": 1,
//!  "projects": {"/home/me/proj": {"trustedAt": "2026-01-02T03:04:05.678Z",
//!                                 "sha256": "…",
//!                                 "files": {".pi/settings.json": "…", ".pi/tools/todo": "…"}}}}
//! ```
//!
//! `sha256` is the hash of the sorted `files` list; `files` maps each bound file to its own
//! hash, so that a changed project can say what changed.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use ring::digest::{Context, SHA256};
use serde_json::{Map, Value, json};

/// The store's file name in the agent directory.
pub const FILE: &str = "trust.json";

/// The folders of `.pi/` whose files are bound, besides `.pi/settings.json`.
pub(crate) const FOLDERS: [&str; 2] = ["tools", "hooks"];

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not a trust store ({error}); fix or remove it", path.display())]
    Invalid { path: PathBuf, error: String },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// The extension files of a project, hashed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fingerprint {
    /// Path relative to the project → its hash (hex).
    pub files: BTreeMap<String, String>,
    /// Whether the project has anything that needs trust: hooks, a
    /// `shellEnvironmentPolicy`, `shellPath` or `shellCommandPrefix` in its settings, or
    /// files in `.pi/tools/`.
    pub has_code: bool,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Fingerprint {
    /// The hash of the whole set.
    pub fn sha256(&self) -> String {
        let mut c = Context::new(&SHA256);
        c.update(b"pi-trust-1\0");
        for (path, h) in &self.files {
            c.update(path.as_bytes());
            c.update(b"\0");
            c.update(h.as_bytes());
            c.update(b"\n");
        }
        hex(c.finish().as_ref())
    }

    /// What differs from `other`: files added, removed or changed, by path.
    pub fn changed(&self, other: &BTreeMap<String, String>) -> Vec<String> {
        let mut out: Vec<String> = self
            .files
            .iter()
            .filter(|(p, h)| other.get(*p) != Some(*h))
            .map(|(p, _)| p.clone())
            .collect();
        out.extend(
            other
                .keys()
                .filter(|p| !self.files.contains_key(*p))
                .cloned(),
        );
        out.sort();
        out
    }
}

/// Hashes a regular file's bytes into `c` (streamed: a large file costs time, not memory).
fn hash_file(c: &mut Context, path: &Path) -> io::Result<()> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len: u64 = 0;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        len += n as u64;
        c.update(&buf[..n]);
    }
    c.update(&len.to_le_bytes());
    Ok(())
}

/// The hash of one entry: its kind and content.
fn hash_entry(path: &Path, meta: &std::fs::Metadata) -> io::Result<String> {
    let mut c = Context::new(&SHA256);
    let ft = meta.file_type();
    if ft.is_symlink() {
        c.update(b"link\0");
        c.update(std::fs::read_link(path)?.as_os_str().as_encoded_bytes());
        c.update(b"\0");
        // The target's bytes when it is a regular file (a device or a FIFO is not read).
        if let Ok(m) = std::fs::metadata(path)
            && m.is_file()
        {
            c.update(if m.permissions().mode() & 0o111 != 0 {
                b"x"
            } else {
                b"f"
            });
            hash_file(&mut c, path)?;
        }
    } else if ft.is_file() {
        c.update(if meta.permissions().mode() & 0o111 != 0 {
            b"exec\0"
        } else {
            b"file\0"
        });
        hash_file(&mut c, path)?;
    } else if ft.is_dir() {
        c.update(b"dir\0");
    } else {
        c.update(b"other\0");
    }
    Ok(hex(c.finish().as_ref()))
}

/// Adds every entry under `dir` (not following links to folders) to `out`.
fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p)?;
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        out.insert(rel, hash_entry(&p, &meta)?);
        if meta.is_dir() {
            walk(root, &p, out)?;
        }
    }
    Ok(())
}

/// Whether a settings object asks to run something or to change children's environment.
fn settings_have_code(o: &Map<String, Value>) -> bool {
    let hooks = o
        .get("hooks")
        .is_some_and(|h| !matches!(h, Value::Object(m) if m.is_empty()));
    // The shell settings decide what runs every `bash` call: code too.
    hooks
        || o.contains_key(super::env::SETTING)
        || o.contains_key("shellPath")
        || o.contains_key("shellCommandPrefix")
}

/// Hashes the extension files of the project in `dir`.
pub fn fingerprint(dir: &Path) -> io::Result<Fingerprint> {
    let pi = dir.join(".pi");
    let mut fp = Fingerprint::default();
    let settings = pi.join("settings.json");
    match std::fs::symlink_metadata(&settings) {
        Ok(meta) => {
            fp.files
                .insert(".pi/settings.json".into(), hash_entry(&settings, &meta)?);
            if let Ok(Value::Object(o)) = std::fs::read(&settings)
                .map_err(|_| ())
                .and_then(|t| serde_json::from_slice::<Value>(&t).map_err(|_| ()))
            {
                fp.has_code |= settings_have_code(&o);
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    for name in FOLDERS {
        let folder = pi.join(name);
        match std::fs::symlink_metadata(&folder) {
            Ok(meta) => {
                fp.files
                    .insert(format!(".pi/{name}"), hash_entry(&folder, &meta)?);
                if meta.is_dir() {
                    walk(dir, &folder, &mut fp.files)?;
                } else if meta.file_type().is_symlink() && folder.is_dir() {
                    // A linked folder: its files count, under the link's name.
                    walk(dir, &folder, &mut fp.files)?;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        // What the tool discovery would look at: entries not starting with a dot.
        if name == "tools"
            && let Ok(rd) = std::fs::read_dir(&folder)
        {
            fp.has_code |= rd
                .flatten()
                .any(|e| !e.file_name().to_string_lossy().starts_with('.'));
        }
    }
    Ok(fp)
}

/// The key of a project: its canonical path (the absolute one when it is gone).
pub fn key(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_owned())
}

/// One trusted project, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub dir: String,
    pub trusted_at: String,
    pub sha256: String,
    pub files: BTreeMap<String, String>,
}

impl Record {
    fn from_json(dir: &str, v: &Value) -> Option<Record> {
        let files = v
            .get("files")?
            .as_object()?
            .iter()
            .map(|(k, h)| h.as_str().map(|h| (k.clone(), h.to_owned())))
            .collect::<Option<BTreeMap<_, _>>>()?;
        Some(Record {
            dir: dir.to_owned(),
            trusted_at: v.get("trustedAt")?.as_str()?.to_owned(),
            sha256: v.get("sha256")?.as_str()?.to_owned(),
            files,
        })
    }

    fn to_json(&self) -> Value {
        json!({"trustedAt": self.trusted_at, "sha256": self.sha256, "files": self.files})
    }
}

/// Where a project stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Trusted, with the files it was trusted with.
    Trusted,
    /// Never trusted (or trust was revoked).
    Untrusted,
    /// Trusted once, but these files were added, removed or changed since.
    Changed(Vec<String>),
    /// The directory is gone.
    Missing,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Trusted => "trusted",
            Status::Untrusted => "untrusted",
            Status::Changed(_) => "changed",
            Status::Missing => "missing",
        }
    }
}

/// The store of trusted projects in an agent directory.
#[derive(Debug, Clone)]
pub struct Store {
    pub path: PathBuf,
}

impl Store {
    pub fn new(agent_dir: &Path) -> Store {
        Store {
            path: agent_dir.join(FILE),
        }
    }

    /// The trusted projects, by key.
    pub fn read(&self) -> Result<BTreeMap<String, Record>, TrustError> {
        let text = match std::fs::read(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(source) => {
                return Err(TrustError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let invalid = |error: String| TrustError::Invalid {
            path: self.path.clone(),
            error,
        };
        let v: Value = serde_json::from_slice(&text).map_err(|e| invalid(e.to_string()))?;
        let projects = v
            .get("projects")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("no \"projects\" object".into()))?;
        projects
            .iter()
            .map(|(dir, r)| {
                Record::from_json(dir, r)
                    .map(|r| (dir.clone(), r))
                    .ok_or_else(|| invalid(format!("the record of {dir} is malformed")))
            })
            .collect()
    }

    /// Where the project in `dir` stands.
    pub fn status(&self, dir: &Path) -> Result<Status, TrustError> {
        let k = key(dir);
        let records = self.read()?;
        Ok(status_of(&k, records.get(&*k.to_string_lossy()), None))
    }

    /// [`Store::status`] for a project whose files were just hashed (`fp`).
    pub(crate) fn status_of(&self, dir: &Path, fp: &Fingerprint) -> Result<Status, TrustError> {
        let k = key(dir);
        let records = self.read()?;
        Ok(status_of(&k, records.get(&*k.to_string_lossy()), Some(fp)))
    }

    /// Changes the store under its lock: `f` gets the records and says whether to write.
    fn update<T>(
        &self,
        f: impl FnOnce(&mut BTreeMap<String, Record>) -> (T, bool),
    ) -> Result<T, TrustError> {
        let write_err = |source| TrustError::Write {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        pi_base::fs::create_dir_all(dir).map_err(write_err)?;
        let lock = pi_base::fs::lock_path(&dir.join(format!(".{FILE}.lock"))).map_err(write_err)?;
        let mut records = self.read()?;
        let (out, changed) = f(&mut records);
        if changed {
            let mut projects = Map::new();
            for (k, r) in &records {
                projects.insert(k.clone(), r.to_json());
            }
            let mut text = serde_json::to_vec_pretty(&json!({"version": 1, "projects": projects}))
                .map_err(|e| write_err(io::Error::other(e)))?;
            text.push(b'\n');
            pi_base::fs::write_atomic(&self.path, &text).map_err(write_err)?;
        }
        drop(lock);
        Ok(out)
    }

    /// Trusts the project in `dir` as its files are now. Returns its record.
    pub fn trust(&self, dir: &Path, now: &str) -> Result<Record, TrustError> {
        if !dir.is_dir() {
            return Err(TrustError::NotADirectory(dir.to_owned()));
        }
        let k = key(dir);
        let fp = fingerprint(&k).map_err(|source| TrustError::Read {
            path: k.join(".pi"),
            source,
        })?;
        let record = Record {
            dir: k.to_string_lossy().into_owned(),
            trusted_at: now.to_owned(),
            sha256: fp.sha256(),
            files: fp.files,
        };
        self.update(|records| {
            records.insert(record.dir.clone(), record.clone());
            ((), true)
        })?;
        Ok(record)
    }

    /// Forgets the project in `dir`; `Ok(false)` when it was not trusted.
    pub fn revoke(&self, dir: &Path) -> Result<(String, bool), TrustError> {
        let k = key(dir).to_string_lossy().into_owned();
        self.update(|records| {
            let found = records.remove(&k).is_some();
            ((k.clone(), found), found)
        })
    }

    /// Every trusted project with where it stands now.
    pub fn list(&self) -> Result<Vec<(Record, Status)>, TrustError> {
        Ok(self
            .read()?
            .into_values()
            .map(|r| {
                let s = status_of(Path::new(&r.dir), Some(&r), None);
                (r, s)
            })
            .collect())
    }
}

/// Where a project stands against its record (its files hashed now, unless given).
fn status_of(dir: &Path, record: Option<&Record>, fp: Option<&Fingerprint>) -> Status {
    if !dir.is_dir() {
        return if record.is_some() {
            Status::Missing
        } else {
            Status::Untrusted
        };
    }
    let Some(r) = record else {
        return Status::Untrusted;
    };
    let now = match fp {
        Some(fp) => Ok(fp.clone()),
        None => fingerprint(dir),
    };
    match now {
        Ok(fp) if fp.sha256() == r.sha256 => Status::Trusted,
        Ok(fp) => Status::Changed(fp.changed(&r.files)),
        Err(_) => Status::Changed(vec![".pi".into()]),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str, mode: u32) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn fingerprints_follow_content_mode_and_names() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let empty = fingerprint(d).unwrap();
        assert!(!empty.has_code && empty.files.is_empty());
        write(
            &d.join(".pi/settings.json"),
            r#"{"defaultModel": "x"}"#,
            0o644,
        );
        let plain = fingerprint(d).unwrap();
        assert!(!plain.has_code);
        write(
            &d.join(".pi/settings.json"),
            r#"{"hooks": {"input": "true"}}"#,
            0o644,
        );
        let hooked = fingerprint(d).unwrap();
        assert!(hooked.has_code);
        assert_ne!(plain.sha256(), hooked.sha256());
        write(&d.join(".pi/tools/t"), "#!/bin/sh\n", 0o755);
        let a = fingerprint(d).unwrap();
        assert_eq!(
            a.files.keys().collect::<Vec<_>>(),
            [".pi/settings.json", ".pi/tools", ".pi/tools/t"]
        );
        std::fs::set_permissions(
            d.join(".pi/tools/t"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let b = fingerprint(d).unwrap();
        assert_eq!(b.changed(&a.files), [".pi/tools/t"]);
        write(&d.join(".pi/hooks/lib/helper"), "x", 0o644);
        let c = fingerprint(d).unwrap();
        assert_eq!(
            c.changed(&b.files),
            [".pi/hooks", ".pi/hooks/lib", ".pi/hooks/lib/helper"]
        );
        assert_eq!(fingerprint(d).unwrap().sha256(), c.sha256());
    }

    #[test]
    fn store_trusts_revokes_and_sees_changes() {
        let t = tempfile::tempdir().unwrap();
        let agent = t.path().join("agent");
        let proj = t.path().join("proj");
        write(
            &proj.join(".pi/settings.json"),
            r#"{"hooks": {"input": "true"}}"#,
            0o644,
        );
        let s = Store::new(&agent);
        assert_eq!(s.status(&proj).unwrap(), Status::Untrusted);
        s.trust(&proj, "now").unwrap();
        assert_eq!(s.status(&proj).unwrap(), Status::Trusted);
        let mode = std::fs::metadata(agent.join(FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        write(
            &proj.join(".pi/settings.json"),
            r#"{"hooks": {"input": "false"}}"#,
            0o644,
        );
        assert_eq!(
            s.status(&proj).unwrap(),
            Status::Changed(vec![".pi/settings.json".into()])
        );
        assert!(s.revoke(&proj).unwrap().1);
        assert!(!s.revoke(&proj).unwrap().1);
        assert_eq!(s.status(&proj).unwrap(), Status::Untrusted);
        assert!(matches!(
            s.trust(&proj.join("nope"), "now"),
            Err(TrustError::NotADirectory(_))
        ));
    }
}
