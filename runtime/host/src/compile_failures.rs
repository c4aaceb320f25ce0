//! Components that failed to compile, remembered by digest, so that a
//! source offering one again (at every poll, or in turn with another
//! version) costs no second compile.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::error::LoadError;

/// How many failed digests an engine remembers; the oldest are forgotten.
const REMEMBERED: usize = 256;

/// The failures of one engine, by the sha256 of the component's bytes.
#[derive(Default)]
pub(crate) struct CompileFailures {
    failed: Mutex<VecDeque<(String, LoadError)>>,
}

impl CompileFailures {
    /// How the component of `digest` failed, if it did.
    pub(crate) fn recall(&self, digest: &str) -> Option<LoadError> {
        let failed = self.failed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        failed.iter().find(|(known, _)| known == digest).and_then(|(_, err)| err.of_the_bytes())
    }

    /// Remembers `err` for `digest` when the bytes alone decide it.
    pub(crate) fn remember(&self, digest: &str, err: &LoadError) {
        let Some(err) = err.of_the_bytes() else { return };
        let mut failed = self.failed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if failed.iter().any(|(known, _)| known == digest) {
            return;
        }
        if failed.len() == REMEMBERED {
            failed.pop_front();
        }
        failed.push_back((digest.to_owned(), err));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn remembers_what_the_bytes_decide_within_a_bound() {
        let failures = CompileFailures::default();
        failures.remember("a", &LoadError::Invalid("bad section".into()));
        failures.remember("b", &LoadError::CompileTimeout { limit: Duration::from_secs(60) });
        failures.remember("c", &LoadError::Engine("cannot start the compiler".into()));
        assert!(matches!(failures.recall("a"), Some(LoadError::Invalid(reason)) if reason == "bad section"));
        assert!(matches!(failures.recall("b"), Some(LoadError::CompileTimeout { .. })));
        assert!(failures.recall("c").is_none(), "a failure of the host is tried again");
        for digest in 0..REMEMBERED {
            failures.remember(&digest.to_string(), &LoadError::CoreModule);
        }
        assert!(failures.recall("a").is_none(), "the oldest is forgotten");
        assert!(failures.recall("0").is_some());
    }
}
