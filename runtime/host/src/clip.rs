//! Text a provider sends, cut to a bound before the host copies it into
//! its log or an error.

use std::borrow::Cow;

/// The longest message, and the most field text, of one log record: what
/// the host copies and escapes into its log stays bounded whatever a guest
/// sends.
pub(crate) const MAX_TEXT: usize = 8192;

/// `text` cut to at most `max` bytes (at a character boundary), saying how
/// much was cut.
pub(crate) fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…[{} more bytes]", &text[..end], text.len() - end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_a_character_boundary_and_says_how_much() {
        let nuls = "\0".repeat(1 << 20);
        assert_eq!(clip(&nuls, MAX_TEXT).len(), MAX_TEXT + "…[1040384 more bytes]".len());
        assert_eq!(clip("héllo", 2), "h…[5 more bytes]", "cut at a character boundary");
        assert_eq!(clip("short", MAX_TEXT), "short");
    }
}
