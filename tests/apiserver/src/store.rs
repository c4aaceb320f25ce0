//! The object store: objects by resource, one global revision counter, and the write history.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::watch;

use crate::allocator::Allocations;
use crate::error::ApiError;
use crate::history::{Change, ChangeKind, History, ObjectKey};
use crate::meta;
use crate::resources::ResourceType;

/// The objects of one storage, ordered by namespace then name like etcd keys.
pub(crate) type Objects = BTreeMap<ObjectKey, Arc<Value>>;

/// Everything the store guards with its lock.
#[derive(Debug)]
pub(crate) struct State {
    revision: u64,
    objects: HashMap<&'static str, Objects>,
    history: History,
    /// Cluster IPs and node ports held by Services.
    pub allocations: Allocations,
}

impl State {
    /// The revision of the latest write.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The write history.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The stored object at `key` of `resource`.
    pub fn get(&self, resource: &ResourceType, key: &ObjectKey) -> Option<&Arc<Value>> {
        self.objects.get(resource.storage)?.get(key)
    }

    /// The objects of `resource` as they were at `revision`, which must not be newer than the current one.
    pub fn objects_at(&self, resource: &ResourceType, revision: u64) -> Result<Cow<'_, Objects>, ApiError> {
        static EMPTY: Objects = BTreeMap::new();
        let current = self.objects.get(resource.storage).unwrap_or(&EMPTY);
        if revision >= self.revision {
            return Ok(Cow::Borrowed(current));
        }
        let changes = self.history.since(revision).map_err(|compacted| {
            ApiError::Expired(format!("too old resource version: {revision} ({})", compacted.oldest))
        })?;
        let mut objects = current.clone();
        for change in changes.rev().filter(|c| c.storage == resource.storage) {
            match &change.previous {
                Some(previous) => objects.insert(change.key.clone(), previous.clone()),
                None => objects.remove(&change.key),
            };
        }
        Ok(Cow::Owned(objects))
    }

    /// Stores `object` at `key` under a new revision and records the write.
    pub fn put(&mut self, resource: &'static ResourceType, key: ObjectKey, mut object: Value) -> Arc<Value> {
        self.revision += 1;
        meta::set(&mut object, "resourceVersion", Some(Value::String(self.revision.to_string())));
        let object = Arc::new(object);
        let previous = self.objects.entry(resource.storage).or_default().insert(key.clone(), object.clone());
        let kind = if previous.is_some() { ChangeKind::Modified } else { ChangeKind::Added };
        self.record(resource, key, kind, object.clone(), previous);
        object
    }

    /// Removes the object at `key`; the deletion is recorded with its last state at a new revision.
    pub fn remove(&mut self, resource: &'static ResourceType, key: &ObjectKey) -> Option<Arc<Value>> {
        let previous = self.objects.get_mut(resource.storage)?.remove(key)?;
        self.revision += 1;
        let mut last = (*previous).clone();
        meta::set(&mut last, "resourceVersion", Some(Value::String(self.revision.to_string())));
        let last = Arc::new(last);
        self.record(resource, key.clone(), ChangeKind::Deleted, last.clone(), Some(previous));
        Some(last)
    }

    fn record(
        &mut self,
        resource: &'static ResourceType,
        key: ObjectKey,
        kind: ChangeKind,
        object: Arc<Value>,
        previous: Option<Arc<Value>>,
    ) {
        let change = Change::new(self.revision, resource.storage, key, kind, object, previous);
        self.history.push(Arc::new(change));
    }
}

/// The store shared by request handlers, watches and the test-facing accessors.
#[derive(Debug)]
pub(crate) struct Store {
    state: Mutex<State>,
    revisions: watch::Sender<u64>,
    drops: watch::Sender<u64>,
}

impl Store {
    /// An empty store keeping `history` changes for watches to resume from.
    pub fn new(history: usize) -> Self {
        let state = State {
            revision: 0,
            objects: HashMap::new(),
            history: History::new(history),
            allocations: Allocations::default(),
        };
        Self { state: Mutex::new(state), revisions: watch::Sender::new(0), drops: watch::Sender::new(0) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `read` on the state.
    pub fn read<R>(&self, read: impl FnOnce(&State) -> R) -> R {
        read(&self.lock())
    }

    /// Runs `write` on the state and wakes the watches if it wrote anything.
    pub fn write<R>(&self, write: impl FnOnce(&mut State) -> R) -> R {
        let mut state = self.lock();
        let before = state.revision;
        let result = write(&mut state);
        if state.revision != before {
            self.revisions.send_replace(state.revision);
        }
        result
    }

    /// Receivers that change on every write and on every request to end all watches.
    pub fn subscribe(&self) -> (watch::Receiver<u64>, watch::Receiver<u64>) {
        (self.revisions.subscribe(), self.drops.subscribe())
    }

    /// Ends every open watch.
    pub fn drop_watches(&self) {
        self.drops.send_modify(|generation| *generation += 1);
    }

    /// Compacts the history at the current revision and ends every open watch.
    pub fn expire(&self) {
        self.write(|state| {
            let revision = state.revision;
            state.history.compact(revision);
        });
        self.drop_watches();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_name;
    use serde_json::json;

    fn key(name: &str) -> ObjectKey {
        ObjectKey { namespace: String::new(), name: name.into() }
    }

    #[test]
    fn every_write_bumps_the_revision() {
        let store = Store::new(100);
        let nodes = by_name("nodes").unwrap();
        let a = store.write(|s| s.put(nodes, key("a"), json!({"metadata": {"name": "a"}})));
        assert_eq!(a["metadata"]["resourceVersion"], "1");
        let gone = store.write(|s| s.remove(nodes, &key("a"))).unwrap();
        assert_eq!(gone["metadata"]["resourceVersion"], "2");
        assert_eq!(store.read(State::revision), 2);
    }

    #[test]
    fn older_revisions_are_rebuilt_from_history() {
        let store = Store::new(100);
        let nodes = by_name("nodes").unwrap();
        store.write(|s| {
            s.put(nodes, key("a"), json!({"v": 1}));
            s.put(nodes, key("b"), json!({"v": 1}));
            s.put(nodes, key("a"), json!({"v": 2}));
            s.remove(nodes, &key("b"));
        });
        store.read(|s| {
            let at_two = s.objects_at(nodes, 2).unwrap();
            assert_eq!(at_two.len(), 2);
            assert_eq!(at_two[&key("a")]["v"], 1);
            assert_eq!(s.objects_at(nodes, 4).unwrap().len(), 1);
        });
        store.expire();
        store.read(|s| assert!(matches!(s.objects_at(nodes, 2), Err(ApiError::Expired(_)))));
    }
}
