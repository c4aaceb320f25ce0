//! The suite's results: one row per check, printed as a table or written
//! as JUnit XML.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};

/// How a check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The provider did what upstream expects.
    Pass,
    /// It did not; what was wrong.
    Fail(String),
    /// The check could not run; why.
    Skip(String),
}

/// One check's result.
#[derive(Debug, Clone)]
pub struct Check {
    /// `<part>/<object>/<check>`.
    pub name: String,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took.
    pub time: Duration,
}

/// The results of a run.
#[derive(Debug)]
pub struct Report {
    /// The provider's name.
    pub provider: String,
    /// Where it came from.
    pub source: String,
    /// Every check, in the order run.
    pub checks: Vec<Check>,
    started: Instant,
}

impl Report {
    /// An empty report on `provider`, loaded from `source`.
    pub fn new(provider: String, source: String) -> Report {
        Report { provider, source, checks: Vec::new(), started: Instant::now() }
    }

    /// Runs a check: it passes when `body` gives a value, which is returned
    /// for the checks that depend on it.
    pub async fn check<T>(
        &mut self,
        name: impl Into<String>,
        body: impl Future<Output = Result<T, String>>,
    ) -> Option<T> {
        let started = Instant::now();
        let result = body.await;
        let outcome = match &result {
            Ok(_) => Outcome::Pass,
            Err(message) => Outcome::Fail(message.clone()),
        };
        self.checks.push(Check { name: name.into(), outcome, time: started.elapsed() });
        result.ok()
    }

    /// Records a check that could not run.
    pub fn skip(&mut self, name: impl Into<String>, reason: impl Into<String>) {
        self.checks.push(Check { name: name.into(), outcome: Outcome::Skip(reason.into()), time: Duration::ZERO });
    }

    fn count(&self, matches: fn(&Outcome) -> bool) -> usize {
        self.checks.iter().filter(|check| matches(&check.outcome)).count()
    }

    /// How many checks failed.
    pub fn failed(&self) -> usize {
        self.count(|outcome| matches!(outcome, Outcome::Fail(_)))
    }

    /// The table: check, result and time, with the reason under each failed
    /// or skipped check, and a summary.
    pub fn table(&self) -> String {
        let width = self.checks.iter().map(|check| check.name.len()).max().unwrap_or(0).max("CHECK".len());
        let mut text = format!("{:<width$}  RESULT  TIME\n", "CHECK");
        for check in &self.checks {
            let (result, reason) = match &check.outcome {
                Outcome::Pass => ("pass", None),
                Outcome::Fail(message) => ("FAIL", Some(message)),
                Outcome::Skip(reason) => ("skip", Some(reason)),
            };
            let _ = writeln!(text, "{:<width$}  {result:<6}  {}", check.name, millis(check.time));
            if let Some(reason) = reason {
                let _ = writeln!(text, "    {reason}");
            }
        }
        let _ = writeln!(
            text,
            "\n{} of {}: {} passed, {} failed, {} skipped in {}",
            self.provider,
            self.source,
            self.count(|outcome| *outcome == Outcome::Pass),
            self.failed(),
            self.count(|outcome| matches!(outcome, Outcome::Skip(_))),
            millis(self.started.elapsed()),
        );
        text
    }

    /// The report as JUnit XML: one test suite named after the provider,
    /// one test case per check.
    ///
    /// # Errors
    /// When it cannot be serialised.
    pub fn junit(&self) -> Result<String, quick_junit::SerializeError> {
        let mut suite = TestSuite::new(format!("wasm-ccm conformance: {}", self.provider));
        suite.set_time(self.started.elapsed());
        for check in &self.checks {
            let status = match &check.outcome {
                Outcome::Pass => TestCaseStatus::success(),
                Outcome::Fail(message) => {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    status.set_message(message.as_str());
                    status
                }
                Outcome::Skip(reason) => {
                    let mut status = TestCaseStatus::skipped();
                    status.set_message(reason.as_str());
                    status
                }
            };
            let mut case = TestCase::new(check.name.as_str(), status);
            case.set_classname(check.name.split('/').next().unwrap_or_default());
            case.set_time(check.time);
            suite.add_test_case(case);
        }
        let mut report = quick_junit::Report::new("wasm-ccm provider conformance");
        report.set_time(self.started.elapsed());
        report.add_test_suite(suite);
        report.to_string()
    }
}

fn millis(time: Duration) -> String {
    format!("{}ms", time.as_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn table_and_junit() {
        let mut report = Report::new("acme".into(), "acme.wasm".into());
        assert_eq!(report.check("provider/name", async { Ok::<_, String>(7) }).await, Some(7));
        let failed = report.check("load-balancer/default/web/ensure", async { Err::<(), _>("no <ingress>".into()) });
        assert_eq!(failed.await, None);
        report.skip("routes/create", "no node has spec.podCIDR");
        assert_eq!(report.failed(), 1);

        let table = report.table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "CHECK                             RESULT  TIME");
        assert!(lines[1].starts_with("provider/name                     pass    "), "{table}");
        assert!(lines[2].starts_with("load-balancer/default/web/ensure  FAIL    "), "{table}");
        assert_eq!(lines[3], "    no <ingress>");
        assert_eq!(lines[5], "    no node has spec.podCIDR");
        assert!(lines[7].starts_with("acme of acme.wasm: 1 passed, 1 failed, 1 skipped in "), "{table}");

        let xml = report.junit().unwrap();
        assert!(xml.contains("tests=\"3\" skipped=\"1\" failures=\"1\""), "{xml}");
        assert!(xml.contains("<failure message=\"no &lt;ingress&gt;\""), "{xml}");
        assert!(xml.contains("classname=\"routes\""), "{xml}");
    }
}
