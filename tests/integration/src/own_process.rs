//! Tests that measure or set what belongs to the whole process (its memory,
//! the global log subscriber) run in a process of their own: the test
//! binary runs all its tests in one process, several at once.

use std::process::Command;

/// The variable that tells a child process which test it runs.
const CHILD: &str = "WASM_CCM_TEST_OWN_PROCESS";

/// Whether the test at `path` (`module_path!()::name`) should run its body
/// here: in the child process of the test binary that runs that test
/// alone. Anywhere else it runs that child, forwards its output, and
/// returns `false`.
///
/// # Panics
/// When the test failed in the child, or the child did not run it.
pub fn enter(path: &str) -> bool {
    // Test names leave out the crate's name.
    let test = path.split_once("::").map_or(path, |(_, test)| test);
    if std::env::var(CHILD).is_ok_and(|running| running == test) {
        return true;
    }
    let binary = std::env::current_exe().expect("the test binary's path");
    let output = Command::new(binary)
        .args(["--exact", test, "--test-threads=1", "--nocapture"])
        .env(CHILD, test)
        .output()
        .expect("the test binary runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(output.status.success(), "{test} failed in its own process ({})", output.status);
    assert!(stdout.contains("test result: ok. 1 passed"), "the child process did not run {test}");
    false
}

/// Runs the calling test, the function `$test`, in a process of its own
/// (see [`enter`](crate::own_process::enter)): at its start,
/// `if !in_own_process!(name) { return; }`.
#[macro_export]
macro_rules! in_own_process {
    ($test:ident) => {
        $crate::own_process::enter(concat!(module_path!(), "::", stringify!($test)))
    };
}
