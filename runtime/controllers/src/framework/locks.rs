//! One lock per key, so that two paths (a sync and a node sync) never act on
//! the same object at once.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

/// Locks by key; a key's lock is made on first use and dropped by
/// [`KeyLocks::remove`].
pub struct KeyLocks<K> {
    locks: Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>,
}

impl<K> Default for KeyLocks<K> {
    fn default() -> Self {
        KeyLocks { locks: Mutex::default() }
    }
}

impl<K: Clone + Eq + Hash> KeyLocks<K> {
    /// Waits for and takes `key`'s lock.
    pub async fn lock(&self, key: &K) -> OwnedMutexGuard<()> {
        let lock =
            self.locks.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).entry(key.clone()).or_default().clone();
        lock.lock_owned().await
    }

    /// Forgets `key`'s lock, once the object is gone.
    pub fn remove(&self, key: &K) {
        self.locks.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(key);
    }
}
