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
    }
}
