//! `wasm-ccm man`: the man pages, written from the command line's own
//! definitions.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::CommandFactory as _;

use crate::args::Args;

/// Arguments of `wasm-ccm man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write a page for every command (`wasm-ccm.1`, `wasm-ccm-run.1`,
    /// `wasm-ccm-provider-push.1`...) into this directory instead of
    /// printing wasm-ccm's.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// `wasm-ccm(1)` in roff.
fn page() -> std::io::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Args::command()).render(&mut page)?;
    Ok(page)
}

/// Prints the page, or writes every command's.
///
/// # Errors
/// When the directory or standard output cannot be written.
pub(crate) fn man(args: &ManArgs) -> anyhow::Result<()> {
    match &args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(Args::command(), dir)
                .with_context(|| format!("cannot write the man pages into {}", dir.display()))
        }
        None => {
            std::io::stdout().lock().write_all(&page()?)?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_the_command_and_its_subcommands() {
        let page = String::from_utf8(page().unwrap()).unwrap();
        assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
        assert!(page.contains(".TH wasm-ccm 1"), "{page}");
        for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS", ".SH VERSION"] {
            assert!(page.contains(section), "{section}: {page}");
        }
        for command in ["wasm\\-ccm\\-run(1)", "wasm\\-ccm\\-provider(1)", "wasm\\-ccm\\-completions(1)"] {
            assert!(page.contains(command), "{command}: {page}");
        }
        assert!(!page.contains("compile\\-worker"), "the hidden command is left out");
    }
}
