//! Files pi creates that hold conversations or secrets are private (DECISIONS §6): 0600,
//! their folders 0700, whatever the umask.

use std::fs::File;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

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

/// Creates (or truncates) a file only its owner may read and write: 0600 even when it was
/// there with other permissions.
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(bytes)
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

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
        write_file(&g, b"y").unwrap();
        assert_eq!(std::fs::metadata(&g).unwrap().mode() & 0o777, 0o600);
    }
}
