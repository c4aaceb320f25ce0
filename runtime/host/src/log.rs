//! A provider's log records and its stdout and stderr, into `tracing`,
//! tagged with the provider's name and the call's ID.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi_io::streams::{OutputStream, StreamResult};

use crate::bindings::log::{self, Level};

/// Who is logging: the provider and the call.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub(crate) provider: Arc<str>,
    pub(crate) call: u64,
}

/// The `log` import of one call.
pub(crate) struct LogImport {
    pub(crate) origin: Origin,
}

impl log::Host for LogImport {
    fn emit(&mut self, level: Level, message: String, fields: Vec<(String, String)>) -> wasmtime::Result<()> {
        let provider = &*self.origin.provider;
        let call = self.origin.call;
        let fields = fields.iter().map(|(key, value)| format!("{key}={value:?}")).collect::<Vec<_>>().join(" ");
        match level {
            Level::Trace => tracing::trace!(target: "provider", provider, call, fields, "{message}"),
            Level::Debug => tracing::debug!(target: "provider", provider, call, fields, "{message}"),
            Level::Info => tracing::info!(target: "provider", provider, call, fields, "{message}"),
            Level::Warn => tracing::warn!(target: "provider", provider, call, fields, "{message}"),
            Level::Error => tracing::error!(target: "provider", provider, call, fields, "{message}"),
        }
        Ok(())
    }
}

/// Which standard stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stdio {
    Stdout,
    Stderr,
}

/// How much of stderr a call keeps to explain a trap.
const STDERR_TAIL: usize = 4096;
/// A line longer than this is logged in pieces.
const MAX_LINE: usize = 8192;

#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
    /// The end of what the guest wrote to stderr, for trap reports.
    tail: Vec<u8>,
}

/// A guest's stdout or stderr, logged line by line.
#[derive(Clone)]
pub(crate) struct GuestOutput {
    origin: Origin,
    stream: Stdio,
    lines: Arc<Mutex<Lines>>,
}

impl GuestOutput {
    pub(crate) fn new(origin: Origin, stream: Stdio) -> Self {
        GuestOutput { origin, stream, lines: Arc::default() }
    }

    /// The end of what was written to stderr.
    pub(crate) fn tail(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        String::from_utf8_lossy(&lines.tail).into_owned()
    }

    fn write_bytes(&self, bytes: &[u8]) {
        let mut lines = self.lines.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if self.stream == Stdio::Stderr {
            lines.tail.extend_from_slice(bytes);
            let excess = lines.tail.len().saturating_sub(STDERR_TAIL);
            lines.tail.drain(..excess);
        }
        lines.partial.extend_from_slice(bytes);
        while let Some(end) = lines.partial.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = lines.partial.drain(..=end).collect();
            self.emit(&line[..line.len() - 1]);
        }
        if lines.partial.len() > MAX_LINE {
            let line = std::mem::take(&mut lines.partial);
            self.emit(&line);
        }
    }

    fn emit(&self, line: &[u8]) {
        let line = String::from_utf8_lossy(line);
        let provider = &*self.origin.provider;
        let call = self.origin.call;
        match self.stream {
            Stdio::Stdout => tracing::info!(target: "provider", provider, call, stream = "stdout", "{line}"),
            Stdio::Stderr => tracing::warn!(target: "provider", provider, call, stream = "stderr", "{line}"),
        }
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl wasmtime_wasi_io::poll::Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.write_bytes(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.write_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail_of_stderr() {
        let output = GuestOutput::new(Origin { provider: "test".into(), call: 1 }, Stdio::Stderr);
        output.write_bytes(b"first line\nthread 'main' panicked at src/lib.rs:1:1:\nboom");
        assert_eq!(output.tail(), "first line\nthread 'main' panicked at src/lib.rs:1:1:\nboom");
        output.write_bytes(&vec![b'x'; 3 * STDERR_TAIL]);
        assert_eq!(output.tail().len(), STDERR_TAIL);
        assert!(output.tail().ends_with('x'));
    }
}
