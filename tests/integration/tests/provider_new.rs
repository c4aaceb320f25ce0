//! `wasm-ccm provider new`: the crate it writes passes its own unit test,
//! builds to a component with the project's guest build, and runs under
//! the conformance suite, which reports what the skeleton leaves
//! unimplemented; and the same of the Go skeleton (`--lang go`).

use std::path::Path;
use std::process::{Command, Output};

use wasm_ccm_tests::repository;

fn run(command: &mut Command) -> Output {
    let output = command.output().expect("the command runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    assert!(output.status.success(), "{command:?} failed:\n{}\n{}", text(&output.stdout), text(&output.stderr));
    output
}

#[test]
fn a_new_provider_builds_tests_and_runs_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let crate_dir = dir.path().join("acme");
    let sdk = repository().join("guest-sdk");
    let created =
        run(Command::new(crate::binary()).args(["provider", "new", "acme", "--sdk"]).arg(&sdk).current_dir(dir.path()));
    assert!(
        String::from_utf8_lossy(&created.stdout)
            .starts_with("created acme (provider-acme: load-balancer, instances-v2)")
    );
    for file in ["Cargo.toml", "src/lib.rs", "README.md"] {
        assert!(crate_dir.join(file).exists(), "{file}");
    }
    run(Command::new(env!("CARGO")).args(["fmt", "--check"]).current_dir(&crate_dir));
    // Offline, with the versions this repository is tested with.
    std::fs::copy(repository().join("Cargo.lock"), crate_dir.join("Cargo.lock")).unwrap();

    // Its unit test, natively; a target directory of its own, kept between runs.
    let tested = run(Command::new(env!("CARGO"))
        .args(["test", "--offline", "--quiet"])
        .env("CARGO_TARGET_DIR", repository().join("target/provider-new"))
        .current_dir(&crate_dir));
    assert!(
        String::from_utf8_lossy(&tested.stdout).contains("2 passed"),
        "{}",
        String::from_utf8_lossy(&tested.stdout)
    );

    // The component, with the project's guest build.
    run(Command::new(repository().join("providers/build.sh")).arg(&crate_dir).env("CARGO_NET_OFFLINE", "true"));
    let component = crate_dir.join("target/wasm/provider_acme.wasm");
    assert!(component.exists());

    conforms_as_far_as_written(dir.path(), "acme", &component);
}

/// Conformance of the skeleton `name`'s `component`: it loads and answers,
/// and each unwritten method is reported.
fn conforms_as_far_as_written(dir: &Path, name: &str, component: &Path) {
    let fixture = dir.join("fixture.yaml");
    std::fs::write(&fixture, "nodes: [{metadata: {name: node-a}}]\nservices: [{metadata: {name: web}, spec: {ports: [{port: 80, nodePort: 30080}]}}]\n").unwrap();
    let output = Command::new(crate::binary())
        .args(["provider", "conformance"])
        .arg(component)
        .arg("--fixture")
        .arg(&fixture)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{table}");
    let reason = |check: &str| reason(&table, check);
    assert_eq!(reason("provider/name"), None, "{table}");
    assert_eq!(
        reason("load-balancer/default/web/ensure").as_deref(),
        Some("ensure failed: not implemented by the provider")
    );
    assert_eq!(
        reason("instances-v2/node-a/metadata").as_deref(),
        Some("metadata failed: not implemented by the provider")
    );
    // The example call reaches for the cloud, which the empty allow-list refuses.
    assert!(
        reason("instances-v2/node-a/exists").is_some_and(|reason| reason.starts_with("exists failed: ")),
        "{table}"
    );
    assert_eq!(reason("calls/errors"), None, "{table}");
    assert!(table.lines().last().unwrap().starts_with(&format!("{name} of {}: ", component.display())), "{table}");
}

/// The reason under `check`'s row of a conformance table; `None` when it passed.
fn reason(table: &str, check: &str) -> Option<String> {
    let mut lines = table.lines().skip_while(|line| line.split_whitespace().next() != Some(check));
    let row = lines.next().unwrap_or_else(|| panic!("no {check} in\n{table}"));
    if row.split_whitespace().nth(1) == Some("pass") {
        return None;
    }
    lines.next().map(|line| line.trim().to_owned())
}

/// The Go skeleton, written by `provider new --lang go` with its `go.mod`
/// pointed at this checkout's SDK: its native test passing, built with
/// `providers/build.sh`, and run by the conformance suite, which reports
/// what the skeleton leaves unimplemented.
#[test]
fn the_go_skeleton_builds_tests_and_runs_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("big-cloud");
    let sdk = repository().join("guest-sdk-go");
    let created = run(Command::new(crate::binary())
        .args(["provider", "new", "big-cloud", "--lang", "go", "--sdk"])
        .arg(&sdk)
        .current_dir(dir.path()));
    assert!(
        String::from_utf8_lossy(&created.stdout)
            .starts_with("created big-cloud (provider-big-cloud, Go: load-balancer, instances-v2)")
    );
    for file in ["go.mod", "main.go", "big_cloud.go", "big_cloud_test.go", "README.md"] {
        assert!(module.join(file).exists(), "{file}");
    }

    // The build installs Go when it is missing, so it comes first.
    run(Command::new(repository().join("providers/build.sh")).arg(&module));
    let component = module.join("target/wasm/provider_big_cloud.wasm");
    assert!(component.exists());
    let scripts = run(Command::new("python3").args(["-c", "import sysconfig; print(sysconfig.get_path('scripts'))"]));
    let path = format!("{}:{}", String::from_utf8_lossy(&scripts.stdout).trim(), std::env::var("PATH").unwrap());
    let tested = run(Command::new("go")
        .args(["test", "-count=1", "-v", "./..."])
        .env("PATH", path)
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .current_dir(&module));
    let tested = String::from_utf8_lossy(&tested.stdout);
    assert_eq!(tested.matches("--- PASS").count(), 2, "{tested}");

    conforms_as_far_as_written(dir.path(), "big-cloud", &component);
}
