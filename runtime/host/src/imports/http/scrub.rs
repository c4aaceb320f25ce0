//! Sealed credentials scrubbed from what a server answers, before the
//! provider sees it: a server that echoes a request's headers (a debugging
//! endpoint, an error page) would otherwise hand a sealed token to the
//! guest.
//!
//! Each sealed value is looked for as it is, in base64 (standard and
//! URL-safe, padded or not, and at each of the three alignments it can have
//! inside a longer encoded text), in hex (either case), as a JSON string's
//! escapes give it (`\"`, `\\`, `\u00XX`, and `\/` for `/` or not) and
//! percent-encoded (any mix of escaped and plain bytes, hex digits in either
//! case, `+` for a space), in every header
//! name and value, in the body and in the text of errors; every occurrence
//! becomes `*`s of its length, so lengths and framing stay as they were.
//! Bodies are read whole (within their cap) before they are scrubbed, so a
//! value cannot straddle two reads.
//!
//! Scrubbing stands behind the binding of each sealed credential to its
//! origins: it catches servers that reflect what they were sent, not one
//! that means to leak it in some other encoding. Within a longer base64
//! text, the characters at a value's two edges also encode its neighbours'
//! bits and are left, so at most a few bits of each end show.

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use base64::engine::GeneralPurpose;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

use crate::bindings::http::{Error as HttpError, Response};

/// What an occurrence is replaced with, byte for byte.
const MASK: u8 = b'*';

/// Finds and masks one provider's sealed values.
#[derive(Default)]
pub(crate) struct Scrubber {
    /// Every value as it is and in base64; `None` without sealed values.
    forms: Option<AhoCorasick>,
    /// Every value as percent-decoding gives it back.
    decoded: Option<AhoCorasick>,
}

impl Scrubber {
    /// A scrubber of `values`.
    pub(crate) fn new(values: impl IntoIterator<Item = String>) -> Self {
        let values: Vec<Vec<u8>> =
            values.into_iter().map(String::into_bytes).filter(|value| !value.is_empty()).collect();
        if values.is_empty() {
            return Scrubber::default();
        }
        let mut forms = Vec::new();
        let mut decoded = Vec::new();
        for value in &values {
            forms.push(value.clone());
            forms.extend(base64_forms(value));
            forms.extend(hex_forms(value));
            forms.extend(json_forms(value));
            decoded.push(value.clone());
            if value.contains(&b' ') {
                // Spaces form-encoded, with or without escapes besides.
                let plus: Vec<u8> = value.iter().map(|&byte| if byte == b' ' { b'+' } else { byte }).collect();
                forms.push(plus.clone());
                decoded.push(plus);
            }
        }
        Scrubber { forms: Some(automaton(forms)), decoded: Some(automaton(decoded)) }
    }

    /// `result` with every sealed value masked in its headers, body or
    /// error text.
    pub(crate) fn result(&self, result: Result<Response, HttpError>) -> Result<Response, HttpError> {
        if self.forms.is_none() {
            return result;
        }
        match result {
            Ok(mut response) => {
                for (name, value) in &mut response.headers {
                    self.text(name);
                    self.text(value);
                }
                self.bytes(&mut response.body);
                Ok(response)
            }
            Err(mut err) => {
                match &mut err {
                    HttpError::Denied(text)
                    | HttpError::InvalidRequest(text)
                    | HttpError::TooLarge(text)
                    | HttpError::Transport(text) => self.text(text),
                    HttpError::Timeout => {}
                }
                Err(err)
            }
        }
    }

    /// Whether there is anything to scrub.
    pub(crate) fn is_active(&self) -> bool {
        self.forms.is_some()
    }

    fn text(&self, text: &mut String) {
        let mut bytes = std::mem::take(text).into_bytes();
        self.bytes(&mut bytes);
        // Masks replace whole characters of text; a lossy conversion could
        // only be needed for bytes that were not text to begin with.
        *text = String::from_utf8(bytes).unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned());
    }

    fn bytes(&self, bytes: &mut [u8]) {
        let (Some(forms), Some(decoded)) = (&self.forms, &self.decoded) else { return };
        let found: Vec<_> = forms.find_iter(&*bytes).map(|found| found.range()).collect();
        for range in found {
            bytes[range].fill(MASK);
        }
        if bytes.contains(&b'%') {
            for range in percent_encoded(decoded, bytes) {
                bytes[range].fill(MASK);
            }
        }
    }
}

#[expect(clippy::expect_used, reason = "a few short literal patterns always build")]
fn automaton(patterns: Vec<Vec<u8>>) -> AhoCorasick {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(patterns)
        .expect("a few short literal patterns always build")
}

/// `value` in base64, standard and URL-safe: encoded alone (padded and
/// not), and the characters that stay the same wherever it sits inside a
/// longer encoded text, for each of the three alignments it can have.
fn base64_forms(value: &[u8]) -> Vec<Vec<u8>> {
    let mut forms = Vec::new();
    let engines: [(&GeneralPurpose, &GeneralPurpose); 2] =
        [(&STANDARD, &STANDARD_NO_PAD), (&URL_SAFE, &URL_SAFE_NO_PAD)];
    for (padded, unpadded) in engines {
        forms.push(padded.encode(value).into_bytes());
        for offset in 0..3 {
            let mut shifted = vec![0; offset];
            shifted.extend_from_slice(value);
            let encoded = unpadded.encode(&shifted).into_bytes();
            // Characters made of the value's bits only: from the first one
            // after the `offset` bytes before it, up to the last whole one.
            let (start, end) = ((offset * 8).div_ceil(6), (offset + value.len()) * 8 / 6);
            if start < end {
                forms.push(encoded[start..end].to_vec());
            }
        }
    }
    forms
}

/// `value` in hex, lower and upper case.
fn hex_forms(value: &[u8]) -> [Vec<u8>; 2] {
    let lower: String = value.iter().map(|byte| format!("{byte:02x}")).collect();
    [lower.to_ascii_uppercase().into_bytes(), lower.into_bytes()]
}

/// `value` as it stands inside a JSON string: its quotes, backslashes and
/// control characters escaped, with `/` as it is and escaped as `\/`.
fn json_forms(value: &[u8]) -> [Vec<u8>; 2] {
    let mut escaped = Vec::with_capacity(value.len());
    for &byte in value {
        match byte {
            b'"' => escaped.extend_from_slice(b"\\\""),
            b'\\' => escaped.extend_from_slice(b"\\\\"),
            0..0x20 => escaped.extend_from_slice(format!("\\u{byte:04x}").as_bytes()),
            _ => escaped.push(byte),
        }
    }
    let mut slashes = Vec::with_capacity(escaped.len());
    for &byte in &escaped {
        if byte == b'/' {
            slashes.push(b'\\');
        }
        slashes.push(byte);
    }
    [escaped, slashes]
}

/// Where in `bytes` the patterns of `decoded` occur once percent-escapes
/// are decoded: the ranges of the escaped text.
fn percent_encoded(decoded: &AhoCorasick, bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let plain = percent_decode(bytes);
    let found: Vec<_> = decoded.find_iter(&plain).map(|found| found.range()).collect();
    // Matches come in order: one pass over the text turns their decoded
    // bounds into the text's.
    let mut bounds = found.iter().flat_map(|range| [range.start, range.end]).peekable();
    let mut translated = Vec::with_capacity(found.len() * 2);
    let (mut at, mut decoded_at) = (0, 0);
    while let Some(&bound) = bounds.peek() {
        if decoded_at == bound {
            translated.push(at);
            bounds.next();
            continue;
        }
        at += if escape(bytes, at).is_some() { 3 } else { 1 };
        decoded_at += 1;
    }
    translated.chunks(2).map(|pair| pair[0]..pair[1]).collect()
}

/// `bytes` with every `%XX` escape decoded.
fn percent_decode(bytes: &[u8]) -> Vec<u8> {
    let mut plain = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match escape(bytes, at) {
            Some(byte) => {
                plain.push(byte);
                at += 3;
            }
            None => {
                plain.push(bytes[at]);
                at += 1;
            }
        }
    }
    plain
}

/// The byte the escape `%XX` at `at` stands for, if there is one.
fn escape(bytes: &[u8], at: usize) -> Option<u8> {
    let [b'%', high, low] = *bytes.get(at..at + 3)? else { return None };
    let digit = |byte: u8| char::from(byte).to_digit(16);
    Some((digit(high)? * 16 + digit(low)?) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "s3cret+t0ken/value";

    fn scrubbed(scrubber: &Scrubber, text: &str) -> String {
        let mut text = text.to_owned();
        scrubber.text(&mut text);
        text
    }

    #[test]
    fn masks_a_value_as_it_is_in_base64_and_percent_encoded() {
        let scrubber = Scrubber::new([SECRET.to_owned()]);
        let masked = |text: &str| "*".repeat(text.len());
        assert_eq!(scrubbed(&scrubber, &format!("Bearer {SECRET}")), format!("Bearer {}", masked(SECRET)));
        for encoded in [STANDARD.encode(SECRET), URL_SAFE_NO_PAD.encode(SECRET), STANDARD_NO_PAD.encode(SECRET)] {
            assert_eq!(scrubbed(&scrubber, &format!("x={encoded};")), format!("x={};", masked(&encoded)), "{encoded}");
        }
        for encoded in [
            "s3cret%2Bt0ken%2Fvalue",
            "s3cret%2bt0ken%2fvalue",
            "%73%33%63%72%65%74%2B%74%30%6B%65%6E%2F%76%61%6C%75%65",
            "s%33cret%2Bt0ken/value",
        ] {
            assert_eq!(scrubbed(&scrubber, &format!("?q={encoded}&")), format!("?q={}&", masked(encoded)), "{encoded}");
        }
        assert_eq!(scrubbed(&scrubber, "nothing to see, 100% clean"), "nothing to see, 100% clean");
    }

    #[test]
    fn masks_a_value_inside_a_longer_base64_text_at_any_alignment() {
        let scrubber = Scrubber::new([SECRET.to_owned()]);
        for prefix in ["", "a", "ab", "user:", "user:x"] {
            for engine in [&STANDARD, &URL_SAFE] {
                let encoded = engine.encode(format!("{prefix}{SECRET}:and more"));
                let text = scrubbed(&scrubber, &encoded);
                let stars = text.bytes().filter(|byte| *byte == MASK).count();
                // All but the characters at its edges, which it shares with
                // its neighbours.
                assert!(stars >= SECRET.len() * 4 / 3 - 2, "{prefix:?} {encoded} -> {text}");
                let decoded = engine.decode(text.replace('*', "A")).unwrap_or_default();
                assert!(!String::from_utf8_lossy(&decoded).contains("t0ken"), "{prefix:?}: {text}");
            }
        }
    }

    #[test]
    fn masks_a_value_in_hex_and_as_a_json_string_escapes_it() {
        let value = "to/ken\"quoted\\\u{1}";
        let scrubber = Scrubber::new([value.to_owned()]);
        let lower: String = value.bytes().map(|byte| format!("{byte:02x}")).collect();
        let json = r#"to/ken\"quoted\\\u0001"#;
        let slashed = r#"to\/ken\"quoted\\\u0001"#;
        for form in [lower.clone(), lower.to_ascii_uppercase(), json.to_owned(), slashed.to_owned()] {
            let echoed = format!("{{\"echo\": \"{form}\"}}");
            assert_eq!(scrubbed(&scrubber, &echoed), format!("{{\"echo\": \"{}\"}}", "*".repeat(form.len())), "{form}");
        }
    }

    #[test]
    fn a_form_encoded_space_and_several_values() {
        let scrubber = Scrubber::new(["pass phrase one".to_owned(), "AKIDEXAMPLE0001".to_owned()]);
        assert_eq!(
            scrubbed(&scrubber, "a=pass+phrase+one&b=AKIDEXAMPLE0001"),
            format!("a={}&b={}", "*".repeat(15), "*".repeat(15))
        );
    }

    #[test]
    fn answers_and_errors_are_scrubbed_and_nothing_else_changes() {
        let scrubber = Scrubber::new([SECRET.to_owned()]);
        let response = Response {
            status: 200,
            headers: vec![("x-echo".into(), format!("Bearer {SECRET}")), ("content-type".into(), "text/plain".into())],
            body: format!("authorization=Bearer {SECRET}").into_bytes(),
        };
        let response = scrubber.result(Ok(response)).unwrap();
        assert_eq!(response.headers[0].1, format!("Bearer {}", "*".repeat(SECRET.len())));
        assert_eq!(response.headers[1].1, "text/plain");
        assert_eq!(response.body, format!("authorization=Bearer {}", "*".repeat(SECRET.len())).into_bytes());
        let err = scrubber.result(Err(HttpError::Denied(format!("https://{SECRET}.example:443 is not allowed"))));
        assert!(matches!(err, Err(HttpError::Denied(text)) if !text.contains("t0ken")));
        let inactive = Scrubber::new([]);
        assert!(!inactive.is_active());
        let untouched = inactive.result(Err(HttpError::Transport(SECRET.to_owned())));
        assert!(matches!(untouched, Err(HttpError::Transport(text)) if text == SECRET));
    }
}
