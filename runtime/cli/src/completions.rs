//! `wasm-ccm completions`: a shell's completion script, written from the
//! command line's own definitions.

use std::io::Write as _;

use clap::CommandFactory as _;
use clap_complete::Shell;

use crate::args::Args;

/// Arguments of `wasm-ccm completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `shell`'s completion script for `wasm-ccm`.
fn script(shell: Shell) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Args::command(), "wasm-ccm", &mut script);
    if matches!(shell, Shell::Bash) {
        // clap_complete 4.6 names the subcommands' branches with the binary's
        // hyphen spelt `__subcmd__` (`wasm__subcmd__ccm__subcmd__run`) but
        // looks them up with it spelt `__` (`wasm__ccm__subcmd__run`): no
        // subcommand would complete.
        script = String::from_utf8_lossy(&script).replace("wasm__subcmd__ccm", "wasm__ccm").into_bytes();
    }
    script
}

/// Prints the script of the shell asked for.
///
/// # Errors
/// When standard output cannot be written.
pub(crate) fn completions(args: &CompletionsArgs) -> anyhow::Result<()> {
    std::io::stdout().lock().write_all(&script(args.shell))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_completes_the_commands_and_their_flags() {
        for shell in [Shell::Bash, Shell::Elvish, Shell::Fish, Shell::PowerShell, Shell::Zsh] {
            let script = String::from_utf8(script(shell)).unwrap();
            for word in ["provider", "conformance", "completions", "provider-allow", "leader-elect", "log-format"] {
                assert!(script.contains(word), "{shell}'s script lacks {word}");
            }
        }
        let bash = String::from_utf8(script(Shell::Bash)).unwrap();
        for branch in ["wasm__ccm__subcmd__run)", "wasm__ccm__subcmd__provider__subcmd__push)"] {
            assert!(bash.contains(&format!("cmd=\"{}\"", branch.trim_end_matches(')'))), "bash looks up {branch}");
            assert!(bash.contains(&format!("\n        {branch}\n")), "bash has the branch {branch}");
        }
    }
}
