//! What upstream's own cloud-controller-manager, built from the published
//! modules at the newest release, says of itself.

use std::collections::BTreeSet;

use wasm_ccm_tests::backend::Backend;

/// `wasm-ccm run` accepts the flags of this list (`args.rs`
/// `every_flag_of_upstream_s_newest_release_is_accepted`); it must be the
/// one upstream's binary gives, or the check proves nothing.
const CHECKED_FLAGS: &str = include_str!("../../../runtime/cli/src/options/upstream-flags.txt");

#[test]
fn the_flags_wasm_ccm_accepts_are_upstream_s_own() {
    let Some(Backend::Real(assets)) = Backend::real("upstream::the_flags_wasm_ccm_accepts_are_upstream_s_own") else {
        return;
    };
    let binary = assets.upstream_ccm().expect("upstream's cloud-controller-manager beside kube-apiserver");
    let help = std::process::Command::new(&binary).arg("--help").output().expect("it runs");
    let text = String::from_utf8_lossy(&help.stdout).into_owned() + &String::from_utf8_lossy(&help.stderr);
    let flags: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("-v, ").unwrap_or(line);
            let name = line.strip_prefix("--")?;
            name.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).next()
        })
        .filter(|flag| !matches!(*flag, "help" | "version"))
        .collect();
    let checked: BTreeSet<&str> = CHECKED_FLAGS.lines().collect();
    assert!(flags.len() > 80, "upstream's --help lists its flags: {text}");
    assert_eq!(
        flags.difference(&checked).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "flags of {} missing from runtime/cli/src/options/upstream-flags.txt",
        binary.display()
    );
    assert_eq!(checked.difference(&flags).collect::<Vec<_>>(), Vec::<&&str>::new(), "flags upstream no longer has");
}
