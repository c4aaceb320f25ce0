//! Components that failed to compile, remembered by digest and by the
//! compiler asked for, so that a source offering one again (at every poll,
//! or in turn with another version) costs no second compile.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::compile::tier::Tier;
use crate::error::LoadError;

/// How many failed digests an engine remembers; the oldest are forgotten.
const REMEMBERED: usize = 256;

/// The failures of one engine, by the compiler asked for and the sha256 of
/// the component's bytes: code that failed to compile with Cranelift may
/// still compile with Winch, which a baseline compile tries first.
#[derive(Default)]
pub(crate) struct CompileFailures {
    failed: Mutex<VecDeque<(Tier, String, LoadError)>>,
}

impl CompileFailures {
    /// How the component of `digest` failed to compile for `tier`, if it
    /// did.
    pub(crate) fn recall(&self, tier: Tier, digest: &str) -> Option<LoadError> {
        let failed = self.failed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        failed
            .iter()
            .find(|(known_tier, known, _)| *known_tier == tier && known == digest)
            .and_then(|(_, _, err)| err.of_the_bytes())
    }

    /// Remembers `err` for `digest` compiled for `tier` when the bytes alone
    /// decide it.
    pub(crate) fn remember(&self, tier: Tier, digest: &str, err: &LoadError) {
        let Some(err) = err.of_the_bytes() else { return };
        let mut failed = self.failed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if failed.iter().any(|(known_tier, known, _)| *known_tier == tier && known == digest) {
            return;
        }
        if failed.len() == REMEMBERED {
            failed.pop_front();
        }
        failed.push_back((tier, digest.to_owned(), err));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn remembers_what_the_bytes_decide_within_a_bound() {
        use Tier::Optimizing;
        let failures = CompileFailures::default();
        failures.remember(Optimizing, "a", &LoadError::Invalid("bad section".into()));
        failures.remember(Optimizing, "b", &LoadError::CompileTimeout { limit: Duration::from_secs(60) });
        failures.remember(Optimizing, "c", &LoadError::Engine("cannot start the compiler".into()));
        assert!(
            matches!(failures.recall(Optimizing, "a"), Some(LoadError::Invalid(reason)) if reason == "bad section")
        );
        assert!(matches!(failures.recall(Optimizing, "b"), Some(LoadError::CompileTimeout { .. })));
        assert!(failures.recall(Optimizing, "c").is_none(), "a failure of the host is tried again");
        for digest in 0..REMEMBERED {
            failures.remember(Optimizing, &digest.to_string(), &LoadError::CoreModule);
        }
        assert!(failures.recall(Optimizing, "a").is_none(), "the oldest is forgotten");
        assert!(failures.recall(Optimizing, "0").is_some());
    }

    #[test]
    fn a_failure_of_one_compiler_is_not_held_against_the_other() {
        let failures = CompileFailures::default();
        failures.remember(Tier::Optimizing, "a", &LoadError::CompileTimeout { limit: Duration::from_secs(60) });
        assert!(failures.recall(Tier::Baseline, "a").is_none(), "Winch may compile what Cranelift did not in time");
        assert!(failures.recall(Tier::Optimizing, "a").is_some());
    }
}
