//! Credentials bound to the provider: the keys of its Secret.

use crate::Error;

/// The raw value of the credential `name`.
///
/// # Errors
/// When no credential of that name is bound to the provider.
pub fn get(name: &str) -> Result<Vec<u8>, Error> {
    Ok(crate::backend::credential(name)?)
}

/// The value of the credential `name` as text, without surrounding
/// white space (a Secret file often ends with a newline).
///
/// # Errors
/// When the credential is missing or is not UTF-8.
pub fn get_string(name: &str) -> Result<String, Error> {
    let value = get(name)?;
    let text =
        String::from_utf8(value).map_err(|_| Error::other(format_args!("credential {name:?} is not UTF-8 text")))?;
    Ok(text.trim().to_owned())
}
