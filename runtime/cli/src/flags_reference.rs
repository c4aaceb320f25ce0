//! `docs/flags.md`, written from the command line's own definitions, so
//! that the reference cannot drift from the flags: its test fails when the
//! file differs, and `WASM_CCM_WRITE_DOCS=1` writes it anew.

use std::fmt::Write as _;
use std::path::Path;

use clap::{Arg, Command, CommandFactory};

use crate::args::Args;

/// The reference: the flags every command takes, then each command's.
fn markdown() -> String {
    let root = Args::command();
    let mut text = String::from(
        "# Flags\n\nEvery flag of every `wasm-ccm` command, written from the command line's own definitions \
         (`runtime/cli/src/flags_reference.rs`; `WASM_CCM_WRITE_DOCS=1 cargo test -p wasm-ccm --lib \
         flags_reference` writes it anew). [configuration.md](configuration.md) says how they fit together.\n",
    );
    let _ = write!(text, "\n## Every command\n\n{}", table(root.get_arguments().filter(|arg| arg.is_global_set())));
    let mut commands = Vec::new();
    collect(&root, "wasm-ccm", &mut commands);
    for (path, command) in commands {
        let about =
            command.get_about().map(|about| format!("{}\n\n", one_line(&about.to_string()))).unwrap_or_default();
        let args = command.get_arguments().filter(|arg| !arg.is_global_set());
        let _ = write!(text, "\n## `{path}`\n\n{about}{}", table(args));
    }
    text
}

/// Every command below `command` that is shown, with its path.
fn collect<'a>(command: &'a Command, path: &str, into: &mut Vec<(String, &'a Command)>) {
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        let path = format!("{path} {}", sub.get_name());
        if sub.has_subcommands() {
            collect(sub, &path, into);
        } else {
            into.push((path, sub));
        }
    }
}

/// A table of `args`, hidden ones left out.
fn table<'a>(args: impl Iterator<Item = &'a Arg>) -> String {
    let mut rows = String::from("| flag | default | what |\n|---|---|---|\n");
    for arg in args.filter(|arg| !arg.is_hide_set() && arg.get_id() != "help" && arg.get_id() != "version") {
        let names = match (arg.get_long(), arg.get_short()) {
            (Some(long), Some(short)) => format!("`-{short}`, `--{long}`"),
            (Some(long), None) => format!("`--{long}`"),
            (None, _) => format!("`{}`", arg.get_id().as_str().to_uppercase()),
        };
        let value = arg.get_value_names().map(|names| {
            let names: Vec<&str> = names.iter().map(|name| name.as_str()).collect();
            format!(" `{}`", names.join(" ").replace('|', "\\|"))
        });
        let defaults: Vec<String> =
            arg.get_default_values().iter().map(|value| value.to_string_lossy().into_owned()).collect();
        let default = if defaults.is_empty() { String::new() } else { format!("`{}`", defaults.join(",")) };
        let env = arg.get_env().map(|env| format!(" (`{}`)", env.to_string_lossy())).unwrap_or_default();
        let help = arg.get_long_help().or(arg.get_help()).map(|help| one_line(&help.to_string())).unwrap_or_default();
        let _ = writeln!(rows, "| {names}{}{env} | {default} | {help} |", value.unwrap_or_default());
    }
    rows
}

/// `text` on one line, fit for a table cell.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

#[test]
fn docs_flags_md_is_written_from_the_definitions() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/flags.md");
    let written = markdown();
    if std::env::var_os("WASM_CCM_WRITE_DOCS").is_some() {
        std::fs::write(&path, &written).expect("docs/flags.md is written");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == written,
        "docs/flags.md differs from the flags: WASM_CCM_WRITE_DOCS=1 cargo test -p wasm-ccm --lib flags_reference"
    );
    assert!(written.contains("`--concurrent-service-syncs`") && written.contains("## `wasm-ccm provider push`"));
}
