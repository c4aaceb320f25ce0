//! Reading the files a provider is given (its configuration, credentials,
//! certificate authorities, component, signature and key): every read is
//! capped, so that a path such as `/dev/zero` fails rather than fills
//! memory; and a path the operator did not give by flag is confined
//! beneath the operator's roots ([`Confinement`]).
//!
//! Errors never name the path they are about (the caller does, with the
//! path as it was given), nor any other file, so that whoever wrote a path
//! learns nothing of a directory's contents from them.

use std::fmt;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The largest configuration file, credential, certificate bundle, key or
/// signature read: 1 MiB, a ConfigMap's or Secret's whole size.
pub const MAX_INPUT_FILE: u64 = 1 << 20;

/// Where no confined path ever leads, whatever the roots: the kernel's and
/// devices' pseudo-files, and the pod's own ServiceAccount token.
const NEVER: [&str; 5] = ["/proc", "/dev", "/sys", "/var/run/secrets/kubernetes.io", "/run/secrets/kubernetes.io"];

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Opening or reading it failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// It holds more than its cap.
    #[error("it is larger than {}, the most read", Mib(*.cap))]
    TooLarge {
        /// The cap, in bytes.
        cap: u64,
    },
    /// A confined path is relative or climbs with `..`.
    #[error("a path read for a provider file is absolute and has no `..`")]
    NotPlain,
    /// A confined path is beneath none of the roots.
    #[error("it is beneath none of the directories provider files may be read from ({roots})")]
    Outside {
        /// The roots, comma-separated, or `none`.
        roots: String,
    },
    /// A confined path resolves, through a symbolic link, out of its root.
    #[error("it resolves out of its root through a symbolic link")]
    Escapes,
    /// A confined path is or resolves into a directory never read.
    #[error("/proc, /dev, /sys and the ServiceAccount directory are never read for a provider")]
    Never,
}

/// Bytes written as whole MiB.
struct Mib(u64);

impl fmt::Display for Mib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} MiB", self.0 >> 20)
    }
}

/// One root: as the operator wrote it, and resolved; a path beneath either
/// is beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Root {
    given: PathBuf,
    resolved: PathBuf,
}

/// Which paths may be read: by default any (a path the operator gave by
/// flag); [`Confinement::beneath`] some roots (a path of a file the
/// operator does not own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// `None`: anywhere.
    roots: Option<Arc<[Root]>>,
}

impl Confinement {
    /// Only a path beneath one of `roots` (existing directories) that stays
    /// beneath it once its symbolic links are resolved, and never in
    /// `/proc`, `/dev`, `/sys` or the ServiceAccount directory.
    ///
    /// # Errors
    /// When a root cannot be resolved; the error names it.
    pub fn beneath(roots: &[PathBuf]) -> Result<Self, (PathBuf, FileError)> {
        let roots = roots
            .iter()
            .map(|given| {
                let resolved = std::fs::canonicalize(given).map_err(|err| (given.clone(), FileError::Io(err)))?;
                Ok(Root { given: given.clone(), resolved })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Confinement { roots: Some(roots.into()) })
    }

    /// Whether no path at all may be read.
    pub fn is_closed(&self) -> bool {
        self.roots.as_ref().is_some_and(|roots| roots.is_empty())
    }

    /// The path to open for `path`: `path` itself anywhere, otherwise its
    /// resolved form once it is found beneath a root.
    ///
    /// # Errors
    /// When a confined path is not plain, beneath no root, escapes its root
    /// or leads where nothing is read; when it cannot be resolved.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf, FileError> {
        let Some(roots) = &self.roots else {
            return Ok(path.to_owned());
        };
        if !is_plain(path) {
            return Err(FileError::NotPlain);
        }
        if never(path) {
            return Err(FileError::Never);
        }
        let Some(root) = roots.iter().find(|root| path.starts_with(&root.given) || path.starts_with(&root.resolved))
        else {
            let roots = roots.iter().map(|root| root.given.display().to_string()).collect::<Vec<_>>();
            let roots = if roots.is_empty() { "none".to_owned() } else { roots.join(", ") };
            return Err(FileError::Outside { roots });
        };
        let resolved = std::fs::canonicalize(path)?;
        if never(&resolved) {
            return Err(FileError::Never);
        }
        if !resolved.starts_with(&root.resolved) {
            return Err(FileError::Escapes);
        }
        Ok(resolved)
    }

    /// Reads `path` whole, as [`read`] does, once [`Confinement::resolve`]
    /// lets it through. A confined path is opened beneath its root's
    /// directory by the kernel (`openat2` with `RESOLVE_BENEATH`), so that a
    /// symbolic link swapped in after the path was resolved cannot lead out
    /// of the root either; where the kernel has no `openat2`, or a seccomp
    /// profile refuses it, the resolved path is opened as it is.
    ///
    /// # Errors
    /// As [`Confinement::resolve`] and [`read`].
    pub fn read(&self, path: &Path, cap: u64) -> Result<Vec<u8>, FileError> {
        let resolved = self.resolve(path)?;
        let root = self.roots.as_ref().and_then(|roots| roots.iter().find(|root| resolved.starts_with(&root.resolved)));
        match root {
            Some(root) => read_from(open_beneath(&root.resolved, &resolved)?, cap),
            None => read(&resolved, cap),
        }
    }
}

/// Opens `resolved`, a path beneath the directory `root`, through a handle
/// of `root` with the kernel refusing any step out of it.
#[cfg(target_os = "linux")]
fn open_beneath(root: &Path, resolved: &Path) -> Result<std::fs::File, FileError> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};

    let relative = resolved.strip_prefix(root).map_err(|_| FileError::Escapes)?;
    let directory = rustix::fs::open(root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(std::io::Error::from)?;
    let flags = OFlags::RDONLY | OFlags::CLOEXEC;
    match rustix::fs::openat2(
        &directory,
        relative,
        flags,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(file) => Ok(std::fs::File::from(file)),
        Err(rustix::io::Errno::XDEV) => Err(FileError::Escapes),
        Err(errno) if openat2_unavailable(errno) => Ok(std::fs::File::open(resolved)?),
        Err(err) => Err(std::io::Error::from(err).into()),
    }
}

/// Whether `openat2` failing with `errno` says that the call itself is not
/// available rather than anything about the file: a kernel before 5.6
/// (`ENOSYS`), or a seccomp profile that does not know it, as the older
/// default profiles of container runtimes, which answer `EPERM` (reading a
/// file the process may not read fails with `EACCES`). The resolved path
/// is then opened as it is.
#[cfg(target_os = "linux")]
fn openat2_unavailable(errno: rustix::io::Errno) -> bool {
    matches!(errno, rustix::io::Errno::NOSYS | rustix::io::Errno::PERM)
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(_root: &Path, resolved: &Path) -> Result<std::fs::File, FileError> {
    Ok(std::fs::File::open(resolved)?)
}

/// Reads `path` whole, refusing it as soon as it holds more than `cap`
/// bytes: at most `cap + 1` bytes are ever held.
///
/// # Errors
/// [`FileError::Io`] when it cannot be read, [`FileError::TooLarge`] when
/// it is over `cap`.
pub fn read(path: &Path, cap: u64) -> Result<Vec<u8>, FileError> {
    read_from(std::fs::File::open(path)?, cap)
}

/// Reads `file` whole, at most `cap + 1` bytes.
fn read_from(file: std::fs::File, cap: u64) -> Result<Vec<u8>, FileError> {
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(FileError::TooLarge { cap });
    }
    Ok(bytes)
}

/// Absolute, and without `..`.
fn is_plain(path: &Path) -> bool {
    path.is_absolute() && !path.components().any(|part| part == Component::ParentDir)
}

fn never(path: &Path) -> bool {
    NEVER.iter().any(|never| path.starts_with(never))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn only_an_unavailable_openat2_falls_back_to_a_plain_open() {
        use rustix::io::Errno;
        assert!(openat2_unavailable(Errno::NOSYS), "a kernel before 5.6");
        assert!(openat2_unavailable(Errno::PERM), "a seccomp profile that does not know openat2");
        for errno in [Errno::ACCESS, Errno::NOENT, Errno::LOOP, Errno::XDEV, Errno::AGAIN] {
            assert!(!openat2_unavailable(errno), "{errno:?} is about the file or its path");
        }
    }

    /// A root holding a Secret volume's layout (`key -> ..data/key`,
    /// `..data -> ..2026_11_25_10_00_00.1`), and a file beside the root.
    fn layout() -> (tempfile::TempDir, PathBuf, Confinement) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let data = root.join("..2026_11_25_10_00_00.1");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("cloud.json"), b"{}").unwrap();
        symlink("..2026_11_25_10_00_00.1", root.join("..data")).unwrap();
        symlink("..data/cloud.json", root.join("cloud.json")).unwrap();
        std::fs::write(dir.path().join("outside"), b"secret").unwrap();
        let confinement = Confinement::beneath(std::slice::from_ref(&root)).unwrap();
        (dir, root, confinement)
    }

    #[test]
    fn a_secret_volume_layout_inside_the_root_is_read() {
        let (_dir, root, confinement) = layout();
        assert_eq!(confinement.read(&root.join("cloud.json"), MAX_INPUT_FILE).unwrap(), b"{}");
    }

    #[test]
    fn confined_paths_stay_beneath_their_root() {
        let (dir, root, confinement) = layout();
        symlink(dir.path().join("outside"), root.join("escape")).unwrap();
        symlink("/var/run/secrets/kubernetes.io/serviceaccount", root.join("token")).unwrap();
        let refused = |path: PathBuf| confinement.read(&path, MAX_INPUT_FILE).unwrap_err();
        assert!(matches!(refused(root.join("../outside")), FileError::NotPlain));
        assert!(matches!(refused("cloud.json".into()), FileError::NotPlain));
        assert!(matches!(refused(dir.path().join("outside")), FileError::Outside { .. }));
        assert!(matches!(refused(root.join("escape")), FileError::Escapes));
        assert!(matches!(refused("/var/run/secrets/kubernetes.io/serviceaccount/token".into()), FileError::Never));
        assert!(matches!(refused("/dev/zero".into()), FileError::Never));
        let everything = Confinement::beneath(&["/".into()]).unwrap();
        for never in ["/proc/self/environ", "/dev/zero", "/sys/kernel/notes"] {
            assert!(matches!(everything.read(Path::new(never), 1), Err(FileError::Never)), "{never}");
        }
        let err = Confinement::beneath(&[]).unwrap().read(&root.join("cloud.json"), 1).unwrap_err();
        assert_eq!(err.to_string(), "it is beneath none of the directories provider files may be read from (none)");
    }

    /// A link swapped in between resolving the path and opening it, as an
    /// attacker racing the read would, still cannot lead out of the root.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_link_swapped_in_after_the_path_was_resolved_leads_nowhere() {
        let (dir, root, _) = layout();
        let resolved = root.join("..2026_11_25_10_00_00.1/cloud.json");
        std::fs::remove_file(&resolved).unwrap();
        symlink(dir.path().join("outside"), &resolved).unwrap();
        assert!(matches!(open_beneath(&root.canonicalize().unwrap(), &resolved), Err(FileError::Escapes)));
        std::fs::remove_file(&resolved).unwrap();
        symlink("../../outside", &resolved).unwrap();
        assert!(matches!(open_beneath(&root.canonicalize().unwrap(), &resolved), Err(FileError::Escapes)));
    }

    #[test]
    fn every_read_is_capped() {
        let err = read(Path::new("/dev/zero"), MAX_INPUT_FILE).unwrap_err();
        assert_eq!(err.to_string(), "it is larger than 1 MiB, the most read");
        let (_dir, root, _) = layout();
        assert!(matches!(read(&root.join("cloud.json"), 1), Err(FileError::TooLarge { cap: 1 })));
        assert_eq!(read(&root.join("cloud.json"), 2).unwrap(), b"{}");
    }
}
