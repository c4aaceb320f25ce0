//! The bounded log of writes that watches replay and consistent list pages rewind.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use serde_json::Value;

/// The key of an object within its storage: namespace (empty for cluster-scoped) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

/// What a write did to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One write: the revision it made, the object after it and the object before it.
#[derive(Debug)]
pub(crate) struct Change {
    pub revision: u64,
    pub storage: &'static str,
    pub key: ObjectKey,
    pub kind: ChangeKind,
    /// The object after the write; for a deletion, its last state carrying the deletion revision.
    pub object: Arc<Value>,
    /// The object before the write, absent for an addition.
    pub previous: Option<Arc<Value>>,
    encoded: OnceLock<Bytes>,
}

impl Change {
    /// A change of `key` in `storage` at `revision`.
    pub fn new(
        revision: u64,
        storage: &'static str,
        key: ObjectKey,
        kind: ChangeKind,
        object: Arc<Value>,
        previous: Option<Arc<Value>>,
    ) -> Self {
        Self { revision, storage, key, kind, object, previous, encoded: OnceLock::new() }
    }

    /// The object serialized as JSON, encoded once and shared by every watch.
    pub fn encoded(&self) -> &Bytes {
        self.encoded.get_or_init(|| Bytes::from(serde_json::to_vec(&*self.object).unwrap_or_default()))
    }
}

/// The requested revision is older than the oldest one the history can replay from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compacted {
    /// The oldest revision a replay may start after.
    pub oldest: u64,
}

/// The changes after the compaction point, at most `capacity` of them.
#[derive(Debug)]
pub(crate) struct History {
    changes: VecDeque<Arc<Change>>,
    capacity: usize,
    compacted: u64,
}

impl History {
    /// An empty history keeping at most `capacity` changes.
    pub fn new(capacity: usize) -> Self {
        Self { changes: VecDeque::new(), capacity: capacity.max(1), compacted: 0 }
    }

    /// Records `change`, forgetting the oldest one when full.
    pub fn push(&mut self, change: Arc<Change>) {
        if self.changes.len() == self.capacity
            && let Some(oldest) = self.changes.pop_front()
        {
            self.compacted = oldest.revision;
        }
        self.changes.push_back(change);
    }

    /// Forgets every change up to and including `revision`.
    pub fn compact(&mut self, revision: u64) {
        let keep = self.changes.partition_point(|c| c.revision <= revision);
        self.changes.drain(..keep);
        self.compacted = self.compacted.max(revision);
    }

    /// Every change after `revision`, oldest first.
    pub fn since(&self, revision: u64) -> Result<impl DoubleEndedIterator<Item = &Arc<Change>>, Compacted> {
        if revision < self.compacted {
            return Err(Compacted { oldest: self.compacted });
        }
        let start = self.changes.partition_point(|c| c.revision <= revision);
        Ok(self.changes.range(start..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(revision: u64) -> Arc<Change> {
        let key = ObjectKey { namespace: String::new(), name: format!("n{revision}") };
        Arc::new(Change::new(revision, "nodes", key, ChangeKind::Added, Arc::new(json!({})), None))
    }

    #[test]
    fn replays_after_a_revision() {
        let mut history = History::new(10);
        (1..=5).for_each(|r| history.push(change(r)));
        let after: Vec<u64> = history.since(3).unwrap().map(|c| c.revision).collect();
        assert_eq!(after, vec![4, 5]);
        assert_eq!(history.since(0).unwrap().count(), 5);
    }

    #[test]
    fn forgets_the_oldest_when_full() {
        let mut history = History::new(3);
        (1..=5).for_each(|r| history.push(change(r)));
        assert_eq!(history.since(1).err(), Some(Compacted { oldest: 2 }));
        assert_eq!(history.since(2).unwrap().count(), 3);
    }

    #[test]
    fn compaction_refuses_older_revisions() {
        let mut history = History::new(10);
        (1..=5).for_each(|r| history.push(change(r)));
        history.compact(5);
        assert!(history.since(4).is_err());
        assert_eq!(history.since(5).unwrap().count(), 0);
    }
}
