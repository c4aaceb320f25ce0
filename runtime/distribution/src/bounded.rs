//! Reading a registry's answers with a cap, so that no answer costs more
//! memory than its cap whatever the registry sends.

use crate::DistributionError;

/// The largest manifest read: 4 MiB, what the OCI distribution
/// specification asks registries to accept at least.
pub(crate) const MAX_MANIFEST: u64 = 4 << 20;
/// The largest token answer read: tokens are a few KiB.
pub(crate) const MAX_TOKEN: u64 = 1 << 20;
/// How much of an error answer is read for its message; the rest is
/// dropped with the connection.
pub(crate) const MAX_ERROR_BODY: usize = 64 << 10;

/// The whole body of `response`, refused as soon as it is more than
/// `limit` bytes (stated or received).
pub(crate) async fn read(
    mut response: reqwest::Response,
    limit: u64,
    what: &'static str,
) -> Result<Vec<u8>, BodyError> {
    let too_large = || BodyError::TooLarge(DistributionError::AnswerTooLarge { what, limit });
    if response.content_length().is_some_and(|length| length > limit) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// At most [`MAX_ERROR_BODY`] bytes of an error answer, for its message;
/// a transport failure midway keeps what had arrived.
pub(crate) async fn read_prefix(mut response: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == MAX_ERROR_BODY {
            break;
        }
    }
    body
}

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Over its cap.
    TooLarge(DistributionError),
    /// The connection failed.
    Transport(reqwest::Error),
}
