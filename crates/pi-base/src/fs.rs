//! Files, written the ways pi needs them written, each way once:
//!
//! - private: files that hold conversations or secrets are 0600 and their folders 0700,
//!   whatever the umask (docs/decisions.md §6);
//! - atomic: a file replaced as a whole ([`AtomicFile`], [`write_atomic`]) is written beside
//!   its destination, synced, and renamed over it, so a reader sees the old file or the new
//!   one, never a part;
//! - locked: an exclusive advisory lock ([`lock`]), std's `File::lock` retried when a signal
//!   interrupts the wait.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// While alive, the process's umask is 077, so that the files and folders created are
/// their owner's only (0600 and 0700 where they would be 0666 and 0777); dropping it
/// restores the umask. The umask is the process's: use it only where no other thread creates
/// files meanwhile (a command's start, a single-threaded command).
#[must_use = "the umask is restored when the guard is dropped"]
pub struct PrivateUmask(libc::mode_t);

impl PrivateUmask {
    pub fn set() -> PrivateUmask {
        // SAFETY: umask(2) only swaps the process's mask.
        PrivateUmask(unsafe { libc::umask(0o077) })
    }
}

impl Drop for PrivateUmask {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe {
            libc::umask(self.0);
        }
    }
}

/// Creates `dir` and its missing parents, 0700.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Creates a new file (failing when one is there) only its owner may read and write.
pub fn create_new(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

/// What went wrong with a file, and what pi was doing with it: "cannot create PATH", with
/// the I/O error as its cause.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {}", path.display())]
pub struct FileError {
    /// What pi was doing, as a verb phrase: `create`, `write`, `lock`, `create the backup`.
    pub action: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl FileError {
    /// The error of `action` on `path`, for `map_err`.
    pub fn of(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> FileError {
        let path = path.to_owned();
        move |source| FileError {
            action,
            path,
            source,
        }
    }
}

/// Takes an exclusive advisory lock on `f`, waiting for it (released when `f` is closed).
pub fn lock(f: &File) -> io::Result<()> {
    loop {
        match f.lock() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Opens (creating it private if needed) the lock file at `path` and takes its exclusive
/// lock; the lock lasts as long as the returned file is open.
pub fn lock_path(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)?;
    lock(&f)?;
    Ok(f)
}

/// Tells temporary files of one process apart.
static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// A file being written in place of another: the bytes go to a private temporary file in
/// the destination's folder, and [`AtomicFile::commit`] syncs it and renames it over the
/// destination. Dropped without a commit, the temporary file is removed and the destination
/// is untouched.
#[derive(Debug)]
pub struct AtomicFile {
    tmp: PathBuf,
    dest: PathBuf,
    w: io::BufWriter<File>,
    /// Whether the temporary file has its final name (nothing to remove).
    placed: bool,
}

impl AtomicFile {
    /// Starts a file that will replace `dest` (0600). The folder must exist.
    pub fn create(dest: &Path) -> io::Result<AtomicFile> {
        let dir = dest.parent().unwrap_or(Path::new("."));
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            TMP_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let f = create_new(&tmp)?;
        Ok(AtomicFile {
            tmp,
            dest: dest.to_owned(),
            w: io::BufWriter::with_capacity(1 << 20, f),
            placed: false,
        })
    }

    /// Where the file will be.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// The buffered file itself, for writers that copy into it by other means (a kernel
    /// copy between files after a flush).
    pub fn writer(&mut self) -> &mut io::BufWriter<File> {
        &mut self.w
    }

    /// Flushes and syncs the file, then puts it in place of the destination (and syncs the
    /// folder, best effort).
    pub fn commit(self) -> io::Result<()> {
        self.finish(true)
    }

    /// As [`AtomicFile::commit`], but fails with `AlreadyExists` instead of replacing a
    /// destination that exists (a hard link, then the temporary name removed).
    pub(crate) fn commit_new(self) -> io::Result<()> {
        self.finish(false)
    }

    fn finish(mut self, replace: bool) -> io::Result<()> {
        self.w.flush()?;
        self.w.get_ref().sync_all()?;
        if replace {
            std::fs::rename(&self.tmp, &self.dest)?;
            self.placed = true;
        } else {
            std::fs::hard_link(&self.tmp, &self.dest)?;
        }
        let dir = match self.dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.placed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes the file at `path` (0600, its missing folders 0700) through `write`, atomically
/// (see [`AtomicFile`]): it replaces a file already there when `replace`, and otherwise fails
/// with `AlreadyExists` and leaves that file alone.
pub fn write_with(
    path: &Path,
    replace: bool,
    write: impl FnOnce(&mut io::BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        create_dir_all(dir)?;
    }
    let mut f = AtomicFile::create(path)?;
    write(f.writer())?;
    if replace { f.commit() } else { f.commit_new() }
}

/// Replaces the file at `path` with `bytes` (0600), atomically (see [`AtomicFile`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes)?;
    f.commit()
}

/// A temporary file of [`AtomicFile`] (`.NAME.PID.SEQ.tmp`) whose process is gone: what a
/// writer killed before its commit leaves behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleTemporary {
    pub path: PathBuf,
    /// The process that was writing it.
    pub pid: u32,
    pub bytes: u64,
}

/// The process id in the name of a temporary file of [`AtomicFile`]
/// (`.NAME.PID.SEQ.tmp`), or `None` for any other name.
pub fn temporary_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (rest, seq) = rest.rsplit_once('.')?;
    let (base, pid) = rest.rsplit_once('.')?;
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if base.is_empty() || !digits(seq) || !digits(pid) {
        return None;
    }
    pid.parse().ok()
}

/// Whether a process with this id exists (on this machine, in this process namespace). A
/// process of another user counts as alive.
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The temporary files of dead processes in `dir` (not below it), in name order. A file
/// whose process still runs is being written: it is never listed.
pub fn stale_temporaries(dir: &Path) -> Vec<StaleTemporary> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<StaleTemporary> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid = temporary_pid(&e.file_name().to_string_lossy())?;
            let meta = e.metadata().ok().filter(std::fs::Metadata::is_file)?;
            (pid != std::process::id() && !process_alive(pid)).then(|| StaleTemporary {
                path: e.path(),
                pid,
                bytes: meta.len(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn temporaries_of_dead_processes_are_found() {
        assert_eq!(temporary_pid(".s.jsonl.123.4.tmp"), Some(123));
        assert_eq!(temporary_pid(".a.b.c.9.0.tmp"), Some(9));
        for other in [
            "s.jsonl.1.2.tmp",
            ".s.jsonl.x.2.tmp",
            "..1.2.tmp",
            ".s.1.tmp",
            ".s.1.2.tmpx",
        ] {
            assert_eq!(temporary_pid(other), None, "{other}");
        }
        assert!(process_alive(std::process::id()));
        let d = tempfile::tempdir().unwrap();
        // A child that has exited and been waited for: its pid is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let own = std::process::id();
        for name in [
            format!(".s.jsonl.{dead}.0.tmp"),
            format!(".s.jsonl.{own}.0.tmp"),
            "s.jsonl".to_owned(),
        ] {
            std::fs::write(d.path().join(name), "xy").unwrap();
        }
        let stale = stale_temporaries(d.path());
        if process_alive(dead) {
            return; // the pid was taken again meanwhile
        }
        assert_eq!(
            stale,
            [StaleTemporary {
                path: d.path().join(format!(".s.jsonl.{dead}.0.tmp")),
                pid: dead,
                bytes: 2
            }]
        );
    }

    #[test]
    fn modes_ignore_a_lax_umask() {
        let t = tempfile::tempdir().unwrap();
        let private = PrivateUmask::set();
        let d = t.path().join("a/b");
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("f");
        std::fs::write(&f, "x").unwrap();
        drop(private);
        let (dir, file) = (d, f);
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
        let g = t.path().join("g");
        std::fs::write(&g, "x").unwrap();
        std::fs::set_permissions(&g, std::fs::Permissions::from_mode(0o666)).unwrap();
        write_atomic(&g, b"y").unwrap();
        assert_eq!(std::fs::metadata(&g).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn atomic_files_replace_whole_or_not_at_all() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f.json");
        std::fs::write(&p, "old").unwrap();
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(b"half").unwrap();
            // dropped without a commit
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"newer").unwrap();
        let e = f.commit_new().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f.json")]);
    }

    #[test]
    fn a_lock_waits_for_the_holder() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("l.lock");
        let held = lock_path(&p).unwrap();
        let other = std::fs::File::open(&p).unwrap();
        assert!(other.try_lock().is_err());
        drop(held);
        lock(&other).unwrap();
    }
}
