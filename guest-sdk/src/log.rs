//! Structured logging into the host's log, tagged with the provider and
//! the call.

pub use crate::wit::wasm_ccm::provider::log::Level;

/// Writes a record with `fields` as key-value pairs.
pub fn emit(level: Level, message: &str, fields: &[(&str, &str)]) {
    let fields: Vec<(String, String)> =
        fields.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect();
    crate::backend::log(level, message, &fields);
}

/// Writes a debug record.
pub fn debug(message: &str) {
    emit(Level::Debug, message, &[]);
}

/// Writes an info record.
pub fn info(message: &str) {
    emit(Level::Info, message, &[]);
}

/// Writes a warning.
pub fn warn(message: &str) {
    emit(Level::Warn, message, &[]);
}

/// Writes an error record.
pub fn error(message: &str) {
    emit(Level::Error, message, &[]);
}
