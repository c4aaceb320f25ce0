//! The on-disk cache of compiled providers: only code this host compiled is
//! ever loaded from it.
//!
//! Compiling a provider with Cranelift takes most of the time a load takes;
//! the cache keeps the machine code of every component this host compiled,
//! so that a restart, or a reload of a version seen before, skips it.
//!
//! # Entries
//! An entry is named after the sha256 of the component's bytes and a sha256
//! of [`wasmtime::Engine::precompile_compatibility_hash`] (the compiler's
//! target and flags, the engine's tunables and features, and the wasmtime
//! version): another component, another engine configuration or another
//! wasmtime is another entry. It holds what [`Component::serialize`]
//! returned, after an HMAC-SHA256 tag over the entry's name and those
//! bytes, computed with the cache's secret key. Entries are written after a
//! successful compilation to a temporary file and renamed into place, so a
//! reader sees a whole entry or none.
//!
//! # Threat model
//! Loading machine code with [`Component::deserialize`] runs it without
//! checks: whoever can choose those bytes can run arbitrary native code in
//! this process, outside the sandbox. The cache therefore loads an entry
//! only when its tag verifies with the cache's key, which is 32 random
//! bytes in the file `key` of the cache directory, created on first use,
//! readable and writable by this user only. A tag can only be made by a
//! holder of that key, and this host makes tags only for code it has just
//! compiled itself.
//!
//! - **Other users** of the machine: the cache directory must be owned by
//!   this process's effective user and not be writable by its group or
//!   others, and the key must be a regular file owned by this user with no
//!   group or other permissions. Otherwise [`CompileCache::open`] refuses
//!   the cache (and [`Engine::new`](crate::Engine::new) fails) rather than
//!   run without it silently.
//! - **Entries this host did not write**: files planted under an entry's
//!   name, entries copied from another cache, machine or key (a restored
//!   backup, an image layer, a shared volume), entries renamed to another
//!   component's name, truncated or corrupted files, and entries of another
//!   wasmtime: the tag does not verify, or wasmtime refuses the bytes. Each
//!   is a miss: the component is compiled again, the entry overwritten, and
//!   a warning logged.
//! - **Changes after the check**: the entry is read into memory once, and
//!   the bytes whose tag verified are the bytes deserialised; the file is
//!   never mapped or read again.
//!
//! Not covered: anyone who can act as this user or as root (they can read
//! the key, and could as well attach to the process); the permissions of
//! the directories above the cache directory; and denial of service by
//! deleting or corrupting entries, which only costs compilations.
//!
//! # Eviction
//! The entries are kept within a size budget: after each store, the least
//! recently used entries (by modification time, which a hit refreshes) are
//! removed until the rest fit, the entry just written excepted, so a
//! budget smaller than one entry keeps only the newest. Entries of another
//! engine or wasmtime, which this host can no longer load, age out first.
//! Temporary files older than an hour, left by a process killed while
//! writing, are removed too. A removed entry is only a miss; entries can
//! also be removed by hand at any time. Removing the `key` file invalidates
//! every entry.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use hmac::{Hmac, Mac as _};
use sha2::{Digest as _, Sha256};
use wasmtime::component::Component;

use crate::error::CacheError;

/// The first bytes of every entry: the format's name and version.
const MAGIC: &[u8] = b"wasm-ccm compiled provider v1\n";
/// The length of an HMAC-SHA256 tag, and of the key.
const TAG_LEN: usize = 32;
/// The key's file in the cache directory.
const KEY_FILE: &str = "key";
/// Temporary files, per process.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);
/// How old a temporary file must be to be taken for a killed writer's.
const STALE_TEMPORARY: Duration = Duration::from_secs(3600);

/// How many bytes of entries a cache keeps unless told otherwise.
pub const DEFAULT_MAX_BYTES: u64 = 128 << 20;

type HmacSha256 = Hmac<Sha256>;

/// Where a load's compiled code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheOutcome {
    /// The engine has no compile cache: the component was compiled.
    Disabled,
    /// A verified entry was loaded: nothing was compiled.
    Hit,
    /// There was no entry: the component was compiled and stored.
    Miss,
    /// There was an entry that did not verify or load: the component was
    /// compiled and the entry overwritten.
    Rejected,
}

impl CacheOutcome {
    /// The outcome of a load that looked up two components: a rejected
    /// entry or a miss, when either found one.
    pub(crate) fn and(self, other: CacheOutcome) -> CacheOutcome {
        use CacheOutcome::{Disabled, Hit, Miss, Rejected};
        match (self, other) {
            (Rejected, _) | (_, Rejected) => Rejected,
            (Miss, _) | (_, Miss) => Miss,
            (Disabled, _) | (_, Disabled) => Disabled,
            (Hit, Hit) => Hit,
        }
    }

    /// A short, stable name for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheOutcome::Disabled => "disabled",
            CacheOutcome::Hit => "hit",
            CacheOutcome::Miss => "miss",
            CacheOutcome::Rejected => "rejected",
        }
    }
}

/// What looking a component up found.
pub(crate) enum Lookup {
    /// A verified entry, deserialised.
    Hit(Component),
    /// No entry.
    Miss,
    /// An entry that cannot be used, and why.
    Rejected(String),
}

/// A compile cache directory, opened for one engine.
#[derive(Clone)]
pub struct CompileCache {
    dir: PathBuf,
    key: [u8; TAG_LEN],
    /// Hex sha256 of the engine's compatibility hash.
    engine: String,
    /// The size budget of the entries.
    max_bytes: u64,
}

impl std::fmt::Debug for CompileCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompileCache")
            .field("dir", &self.dir)
            .field("engine", &self.engine)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl CompileCache {
    /// Opens (creating it if needed, mode 0700) the cache directory `dir`
    /// for `engine`, and its key (creating it on first use, mode 0600);
    /// the entries are kept within `max_bytes` (see the module's docs).
    ///
    /// # Errors
    /// [`CacheError::Insecure`] when the directory is not owned by this
    /// user or is writable by its group or others, or when the key is not a
    /// regular file owned by this user with no group or other permissions;
    /// [`CacheError::Io`] when either cannot be created or read.
    pub fn open(dir: &Path, engine: &wasmtime::Engine, max_bytes: u64) -> Result<Self, CacheError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| CacheError::Io { path, source }
        };
        create_private_dir(dir).map_err(io(dir))?;
        let metadata = fs::metadata(dir).map_err(io(dir))?;
        if !metadata.is_dir() {
            return Err(CacheError::Insecure { path: dir.to_owned(), reason: "not a directory".to_owned() });
        }
        permissions::check(dir, &metadata, 0o022)?;
        let key = read_or_create_key(dir)?;
        Ok(CompileCache { dir: dir.to_owned(), key, engine: engine_hash(engine), max_bytes })
    }

    /// The same directory and key, for `engine`'s code: entries under its
    /// own names, within the same budget.
    pub(crate) fn for_engine(&self, engine: &wasmtime::Engine) -> Self {
        CompileCache { engine: engine_hash(engine), ..self.clone() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file the entry of `wasm` is stored in for this cache's engine.
    pub fn entry_path(&self, wasm: &[u8]) -> PathBuf {
        self.dir.join(self.entry_name(&format!("{:x}", Sha256::digest(wasm))))
    }

    fn entry_name(&self, wasm_digest: &str) -> String {
        format!("{wasm_digest}-{}.cwasm", self.engine)
    }

    #[expect(clippy::expect_used, reason = "HMAC takes keys of any length")]
    fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.key).expect("HMAC takes keys of any length")
    }

    /// The seed of the randomness a provider's `initialize` draws in the
    /// instance that is snapshotted, from this cache's key and `inputs`
    /// (the provider's name, its component and configuration, the cluster's
    /// name): the same provider configured the same way makes the same
    /// snapshot, which the cache then keeps, and the seed stays unknown to
    /// whoever lacks the key.
    pub(crate) fn snapshot_seed(&self, inputs: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(b"wasm-ccm snapshot seed");
        for input in inputs {
            mac.update(&(input.len() as u64).to_le_bytes());
            mac.update(input);
        }
        mac.finalize().into_bytes().into()
    }

    fn tag(&self, name: &str, code: &[u8]) -> HmacSha256 {
        let mut mac = self.mac();
        mac.update(name.as_bytes());
        mac.update(code);
        mac
    }

    /// Looks up the entry of the component whose sha256 is `wasm_digest`
    /// (hex), and loads it if its tag verifies.
    pub(crate) fn get(&self, engine: &wasmtime::Engine, wasm_digest: &str) -> Lookup {
        let name = self.entry_name(wasm_digest);
        let path = self.dir.join(&name);
        let entry = match fs::read(&path) {
            Ok(entry) => entry,
            Err(err) if err.kind() == ErrorKind::NotFound => return Lookup::Miss,
            Err(err) => return Lookup::Rejected(format!("cannot read the entry: {err}")),
        };
        let Some(rest) = entry.strip_prefix(MAGIC) else {
            return Lookup::Rejected("the entry does not start with the cache's header".to_owned());
        };
        let Some((tag, code)) = rest.split_first_chunk::<TAG_LEN>() else {
            return Lookup::Rejected("the entry is truncated".to_owned());
        };
        if self.tag(&name, code).verify_slice(tag).is_err() {
            return Lookup::Rejected("the entry's tag does not verify with the cache's key".to_owned());
        }
        #[allow(unsafe_code)]
        // SAFETY: `Component::deserialize` requires bytes that
        // `Component::serialize` (or `Engine::precompile_component`) produced;
        // given other bytes it may run arbitrary machine code. These bytes
        // carry an HMAC-SHA256 tag, just verified, made with the cache's
        // secret key, which only this user can read (checked in `open`), and
        // this code makes tags only in `put`, over what `Component::serialize`
        // returned for a component this process compiled. The tag covers the
        // entry's name, so an entry cannot stand in for another component or
        // engine. The bytes deserialised are the in-memory bytes that were
        // verified, not the file, which could change afterwards. wasmtime
        // itself refuses bytes from another wasmtime version or engine
        // configuration.
        let loaded = unsafe { Component::deserialize(engine, code) };
        match loaded {
            Ok(component) => {
                mark_used(&path);
                Lookup::Hit(component)
            }
            Err(err) => Lookup::Rejected(format!("wasmtime refused the entry: {err:#}")),
        }
    }

    /// Stores the compiled `component` whose sha256 is `wasm_digest` (hex):
    /// written to a temporary file, then renamed over the entry; then
    /// evicts what no longer fits the budget.
    ///
    /// # Errors
    /// When it cannot be serialised or written; the cache is then only
    /// slower.
    pub(crate) fn put(&self, wasm_digest: &str, component: &Component) -> Result<PathBuf, String> {
        let code = component.serialize().map_err(|err| format!("cannot serialise the component: {err:#}"))?;
        let name = self.entry_name(wasm_digest);
        let tag = self.tag(&name, &code).finalize().into_bytes();
        let path = self.dir.join(&name);
        let temporary =
            self.dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), TEMPORARY.fetch_add(1, Ordering::Relaxed)));
        let written = (|| {
            let mut file = create_private_file(&temporary)?;
            file.write_all(MAGIC)?;
            file.write_all(&tag)?;
            file.write_all(&code)?;
            drop(file);
            fs::rename(&temporary, &path)
        })();
        written.map_err(|err| {
            let _ = fs::remove_file(&temporary);
            format!("cannot write {}: {err}", path.display())
        })?;
        self.evict(&name);
        Ok(path)
    }

    /// Removes the least recently used entries, never `keep`, until the
    /// entries fit the budget, and temporary files a killed writer left.
    fn evict(&self, keep: &str) {
        let listing = match fs::read_dir(&self.dir) {
            Ok(listing) => listing,
            Err(err) => {
                tracing::warn!(dir = %self.dir.display(), error = %err, "cannot list the compile cache");
                return;
            }
        };
        let now = SystemTime::now();
        let mut total = 0;
        let mut evictable = Vec::new();
        for item in listing.flatten() {
            let Ok(metadata) = item.metadata() else { continue };
            let file_name = item.file_name();
            let Some(name) = file_name.to_str().filter(|_| metadata.is_file()) else { continue };
            let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if name.starts_with('.') && name.ends_with(".tmp") {
                if now.duration_since(modified).is_ok_and(|age| age > STALE_TEMPORARY) {
                    remove(&item.path(), "a stale temporary file");
                }
            } else if name.ends_with(".cwasm") {
                total += metadata.len();
                if name != keep {
                    evictable.push((modified, metadata.len(), item.path()));
                }
            }
        }
        evictable.sort_by_key(|(modified, ..)| *modified);
        for (_, len, path) in evictable {
            if total <= self.max_bytes {
                break;
            }
            remove(&path, "the least recently used entry");
            total -= len;
        }
    }
}

/// Marks the entry at `path` as just used, for eviction.
fn mark_used(path: &Path) {
    let touched = OpenOptions::new().write(true).open(path).and_then(|file| file.set_modified(SystemTime::now()));
    if let Err(err) = touched {
        tracing::debug!(entry = %path.display(), error = %err, "cannot mark a compile cache entry as used");
    }
}

/// Removes the file at `path`, `what` the cache no longer keeps.
fn remove(path: &Path, what: &str) {
    match fs::remove_file(path) {
        Ok(()) => tracing::info!(file = %path.display(), "removed {what} from the compile cache"),
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => tracing::warn!(file = %path.display(), error = %err, "cannot remove {what} from the compile cache"),
    }
}

/// Hex sha256 of the engine's compatibility hash, fed to a hasher that is
/// stable across processes (unlike `DefaultHasher`'s promise).
fn engine_hash(engine: &wasmtime::Engine) -> String {
    struct Sha256Hasher(Sha256);
    impl std::hash::Hasher for Sha256Hasher {
        fn finish(&self) -> u64 {
            unreachable!("only the digest is read")
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut hasher = Sha256Hasher(Sha256::new());
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
    format!("{:x}", hasher.0.finalize())
}

/// Reads the cache's key after checking its owner and permissions, or
/// creates it: written to a temporary file of mode 0600 and linked into
/// place, so that two processes opening a new cache agree on one key.
fn read_or_create_key(dir: &Path) -> Result<[u8; TAG_LEN], CacheError> {
    let path = dir.join(KEY_FILE);
    let io = |source| CacheError::Io { path: path.clone(), source };
    match fs::symlink_metadata(&path) {
        Ok(_) => {}
        Err(err) if err.kind() == ErrorKind::NotFound => {
            let mut key = [0; TAG_LEN];
            getrandom::fill(&mut key).map_err(|err| io(std::io::Error::other(err.to_string())))?;
            let temporary = dir.join(format!(".key.{}.tmp", std::process::id()));
            let created = (|| {
                let mut file = create_private_file(&temporary)?;
                file.write_all(&key)?;
                file.sync_all()?;
                drop(file);
                match fs::hard_link(&temporary, &path) {
                    Err(err) if err.kind() == ErrorKind::AlreadyExists => Ok(()),
                    linked => linked,
                }
            })();
            let _ = fs::remove_file(&temporary);
            created.map_err(io)?;
            tracing::info!(path = %path.display(), "created the compile cache's key");
        }
        Err(err) => return Err(io(err)),
    }
    let metadata = fs::symlink_metadata(&path).map_err(io)?;
    if !metadata.is_file() {
        return Err(CacheError::Insecure { path, reason: "the key is not a regular file".to_owned() });
    }
    permissions::check(&path, &metadata, 0o077)?;
    let mut key = [0; TAG_LEN];
    let mut rest = Vec::new();
    let mut file = File::open(&path).map_err(io)?;
    let read = file.read_exact(&mut key).and_then(|()| file.read_to_end(&mut rest));
    match read {
        Ok(0) => Ok(key),
        Ok(_) => Err(CacheError::Insecure { path, reason: format!("the key is not {TAG_LEN} bytes") }),
        Err(err) if err.kind() == ErrorKind::UnexpectedEof => {
            Err(CacheError::Insecure { path, reason: format!("the key is not {TAG_LEN} bytes") })
        }
        Err(err) => Err(io(err)),
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// Creates `path`, which must not exist, readable and writable by this user
/// only.
fn create_private_file(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[cfg(unix)]
mod permissions {
    use std::os::unix::fs::MetadataExt as _;
    use std::path::Path;

    use super::CacheError;

    /// Refuses `path` unless this process's effective user owns it and
    /// none of the permission bits in `forbidden` are set.
    pub(super) fn check(path: &Path, metadata: &std::fs::Metadata, forbidden: u32) -> Result<(), CacheError> {
        let user = rustix::process::geteuid().as_raw();
        let refuse = |reason: String| CacheError::Insecure { path: path.to_owned(), reason };
        if metadata.uid() != user {
            return Err(refuse(format!("owned by user {}, not by this process's user {user}", metadata.uid())));
        }
        let mode = metadata.mode() & 0o777;
        if mode & forbidden != 0 {
            let who = if forbidden & 0o044 != 0 { "readable or writable" } else { "writable" };
            return Err(refuse(format!("mode {mode:03o} makes it {who} by its group or others")));
        }
        Ok(())
    }
}

#[cfg(not(unix))]
mod permissions {
    use std::path::Path;

    use super::CacheError;

    /// Ownership and permissions cannot be checked here: refused.
    pub(super) fn check(path: &Path, _: &std::fs::Metadata, _: u32) -> Result<(), CacheError> {
        Err(CacheError::Insecure {
            path: path.to_owned(),
            reason: "ownership and permissions can only be checked on Unix".to_owned(),
        })
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn engine() -> wasmtime::Engine {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        wasmtime::Engine::new(&config).unwrap()
    }

    /// A component, in the text format the engine also accepts.
    const WAT: &[u8] = br#"(component (core module (func (export "f") (result i32) i32.const 7)))"#;

    fn compiled(engine: &wasmtime::Engine) -> (Vec<u8>, String, Component) {
        let digest = format!("{:x}", Sha256::digest(WAT));
        let component = Component::new(engine, WAT).unwrap();
        (WAT.to_vec(), digest, component)
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn entries_round_trip_and_only_verified_ones_load() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        let engine = engine();
        let cache = CompileCache::open(&root, &engine, DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join(KEY_FILE)), 0o600);
        let (wasm, digest, component) = compiled(&engine);
        assert!(matches!(cache.get(&engine, &digest), Lookup::Miss));
        let path = cache.put(&digest, &component).unwrap();
        assert_eq!(path, cache.entry_path(&wasm));
        assert_eq!(mode(&path), 0o600);
        assert!(matches!(cache.get(&engine, &digest), Lookup::Hit(_)));
        // The same key is read back by a second opening.
        let again = CompileCache::open(&root, &engine, DEFAULT_MAX_BYTES).unwrap();
        assert!(matches!(again.get(&engine, &digest), Lookup::Hit(_)));

        // One flipped bit anywhere in the code.
        let entry = fs::read(&path).unwrap();
        let mut tampered = entry.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        fs::write(&path, &tampered).unwrap();
        let Lookup::Rejected(reason) = cache.get(&engine, &digest) else { panic!("a tampered entry loaded") };
        assert!(reason.contains("tag does not verify"), "{reason}");

        // A valid entry of another component, renamed to this one's name.
        let other_digest = "0".repeat(64);
        let other = cache.put(&other_digest, &component).unwrap();
        fs::rename(&other, &path).unwrap();
        assert!(matches!(cache.get(&engine, &digest), Lookup::Rejected(_)));

        // Truncated, and no header.
        fs::write(&path, &entry[..MAGIC.len() + 5]).unwrap();
        assert!(matches!(cache.get(&engine, &digest), Lookup::Rejected(reason) if reason.contains("truncated")));
        fs::write(&path, component.serialize().unwrap()).unwrap();
        assert!(matches!(cache.get(&engine, &digest), Lookup::Rejected(reason) if reason.contains("header")));

        // Another cache's key.
        let elsewhere = CompileCache::open(&dir.path().join("elsewhere"), &engine, DEFAULT_MAX_BYTES).unwrap();
        assert_ne!(elsewhere.key, cache.key);
        fs::copy(elsewhere.put(&digest, &component).unwrap(), &path).unwrap();
        assert!(matches!(cache.get(&engine, &digest), Lookup::Rejected(_)));
    }

    fn set_age(path: &Path, age: Duration) {
        let file = OpenOptions::new().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
    }

    #[test]
    fn the_least_recently_used_entries_go_beyond_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let (_, _, component) = compiled(&engine);
        let entry_len = {
            let scratch = CompileCache::open(&dir.path().join("scratch"), &engine, DEFAULT_MAX_BYTES).unwrap();
            fs::metadata(scratch.put(&"f".repeat(64), &component).unwrap()).unwrap().len()
        };
        let root = dir.path().join("cache");
        let cache = CompileCache::open(&root, &engine, 2 * entry_len).unwrap();
        let [first, second, third] = ["1", "2", "3"].map(|digit| digit.repeat(64));
        let first_path = cache.put(&first, &component).unwrap();
        let second_path = cache.put(&second, &component).unwrap();
        set_age(&first_path, Duration::from_secs(300));
        set_age(&second_path, Duration::from_secs(200));
        // Used now: the second becomes the least recently used.
        assert!(matches!(cache.get(&engine, &first), Lookup::Hit(_)));
        let stale = root.join(".killed-writer.tmp");
        let writing = root.join(".writing.tmp");
        fs::write(&stale, b"half an entry").unwrap();
        fs::write(&writing, b"half an entry").unwrap();
        set_age(&stale, STALE_TEMPORARY + Duration::from_secs(60));

        let third_path = cache.put(&third, &component).unwrap();
        assert!(first_path.exists() && third_path.exists());
        assert!(!second_path.exists(), "the least recently used entry is evicted");
        assert!(matches!(cache.get(&engine, &second), Lookup::Miss));
        assert!(!stale.exists(), "a stale temporary file is removed");
        assert!(writing.exists(), "a recent temporary file may be another writer's");
        assert!(root.join(KEY_FILE).exists());

        // A budget smaller than one entry keeps the newest.
        let tiny = CompileCache::open(&root, &engine, 1).unwrap();
        let newest = tiny.put(&second, &component).unwrap();
        let left: Vec<_> = fs::read_dir(&root)
            .unwrap()
            .map(|item| item.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "cwasm"))
            .collect();
        assert_eq!(left, [newest]);
    }

    #[test]
    fn the_engine_is_part_of_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let speed = engine();
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true).cranelift_opt_level(wasmtime::OptLevel::None);
        let none = wasmtime::Engine::new(&config).unwrap();
        assert_eq!(engine_hash(&speed), engine_hash(&engine()), "stable for the same configuration");
        assert_ne!(engine_hash(&speed), engine_hash(&none));
        let fast = CompileCache::open(dir.path(), &speed, DEFAULT_MAX_BYTES).unwrap();
        let slow = CompileCache::open(dir.path(), &none, DEFAULT_MAX_BYTES).unwrap();
        let (wasm, digest, component) = compiled(&speed);
        assert_ne!(fast.entry_path(&wasm), slow.entry_path(&wasm));
        fast.put(&digest, &component).unwrap();
        assert!(matches!(slow.get(&none, &digest), Lookup::Miss));
    }

    #[test]
    fn directories_and_keys_others_can_change_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let root = dir.path().join("shared");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        let err = CompileCache::open(&root, &engine, DEFAULT_MAX_BYTES).unwrap_err();
        assert!(matches!(err, CacheError::Insecure { .. }), "{err}");
        assert!(err.to_string().contains("mode 777 makes it writable by its group or others"), "{err}");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        CompileCache::open(&root, &engine, DEFAULT_MAX_BYTES).expect("a directory only its owner writes");

        let key = root.join(KEY_FILE);
        fs::set_permissions(&key, fs::Permissions::from_mode(0o640)).unwrap();
        let err = CompileCache::open(&root, &engine, DEFAULT_MAX_BYTES).unwrap_err().to_string();
        assert!(err.contains("readable or writable by its group or others"), "{err}");
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&key, b"short").unwrap();
        let err = CompileCache::open(&root, &engine, DEFAULT_MAX_BYTES).unwrap_err().to_string();
        assert!(err.contains("the key is not 32 bytes"), "{err}");

        fs::remove_file(&key).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &key).unwrap();
        let err = CompileCache::open(&root, &engine, DEFAULT_MAX_BYTES).unwrap_err().to_string();
        assert!(err.contains("the key is not a regular file"), "{err}");

        // Owned by another user: checked where this test may hand a
        // directory to one.
        if rustix::process::geteuid().is_root() {
            let theirs = dir.path().join("theirs");
            fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            let err = CompileCache::open(&theirs, &engine, DEFAULT_MAX_BYTES).unwrap_err().to_string();
            assert!(err.contains("owned by user 65534, not by this process's user 0"), "{err}");
        }

        let file = dir.path().join("file");
        fs::write(&file, b"").unwrap();
        let err = CompileCache::open(&file, &engine, DEFAULT_MAX_BYTES).unwrap_err();
        assert!(matches!(err, CacheError::Io { .. }), "{err}");
    }
}
