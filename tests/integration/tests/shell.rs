//! `wasm-ccm completions` and `wasm-ccm man` as a shell and `man` use them:
//! bash completes commands and flags with the script, and groff formats
//! every page without a warning.

use std::process::{Command, Stdio};

use wasm_ccm_tests::process::Run;

/// What bash completes `line` (the words typed so far, the last one
/// partial, perhaps empty) to, with the script of
/// `wasm-ccm completions bash` and the function it registers.
fn complete(line: &str) -> Vec<String> {
    let script = Run::of(Command::new(crate::binary()).args(["completions", "bash"])).ok().stdout;
    let program = format!(
        "{script}\nCOMP_LINE='{line}'\nCOMP_POINT=${{#COMP_LINE}}\nread -ra COMP_WORDS <<< \"$COMP_LINE\"\n\
         [[ \"$COMP_LINE\" == *' ' ]] && COMP_WORDS+=('')\nCOMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n\
         completer=$(complete -p wasm-ccm | sed 's/.*-F \\([^ ]*\\) .*/\\1/')\n\
         \"$completer\" wasm-ccm \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    );
    let output = Command::new("bash").arg("-c").arg(program).output().expect("bash runs");
    assert!(output.status.success(), "bash: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| line.trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

#[test]
fn bash_completes_commands_and_flags() {
    assert_eq!(complete("wasm-ccm pro"), ["provider"]);
    let commands = complete("wasm-ccm provider ");
    for command in ["call", "push", "verify", "conformance", "status"] {
        assert!(commands.contains(&command.to_owned()), "{commands:?}");
    }
    let top = complete("wasm-ccm ");
    for command in ["run", "provider", "completions", "man", "--log-format"] {
        assert!(top.contains(&command.to_owned()), "{top:?}");
    }
    let flags = complete("wasm-ccm run --provider-al");
    assert_eq!(flags, ["--provider-allow"]);
    assert_eq!(complete("wasm-ccm completions z"), ["zsh"]);
}

#[test]
fn every_man_page_formats_without_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    Run::of(Command::new(crate::binary()).arg("man").arg("--out-dir").arg(dir.path())).ok();
    let mut pages: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
    pages.sort();
    for page in ["wasm-ccm.1", "wasm-ccm-run.1", "wasm-ccm-provider-push.1", "wasm-ccm-man.1"] {
        assert!(pages.contains(&page.to_owned()), "{pages:?}");
    }
    assert!(!pages.iter().any(|page| page.contains("compile-worker")), "{pages:?}");
    for page in &pages {
        let output = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(dir.path().join(page))
            .stderr(Stdio::piped())
            .output()
            .expect("groff runs");
        let warnings = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success() && warnings.is_empty(), "{page}: {warnings}");
    }

    // The page printed is wasm-ccm(1), as man shows it.
    let page = Run::of(Command::new(crate::binary()).arg("man")).ok().stdout;
    let mut man = Command::new("man")
        .args(["-l", "-"])
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("man runs");
    std::io::Write::write_all(&mut man.stdin.take().unwrap(), page.as_bytes()).unwrap();
    let shown = String::from_utf8(man.wait_with_output().unwrap().stdout).unwrap();
    // man justifies lines with extra spaces.
    let shown = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    for text in ["NAME wasm-ccm - A Kubernetes cloud-controller-manager", "SUBCOMMANDS", "wasm-ccm-completions(1)"] {
        assert!(shown.contains(text), "{text}: {shown}");
    }
}
