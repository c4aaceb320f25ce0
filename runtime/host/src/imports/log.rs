//! A provider's log records and its stdout and stderr, into `tracing`,
//! tagged with the provider's name and the call's ID.

use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi_io::streams::{OutputStream, StreamResult};

use crate::bindings::log::{self, Level};
use crate::clip::{MAX_TEXT, clip};

/// Fields kept per log record.
const MAX_FIELDS: usize = 16;
/// Log records and output lines one call may write, the host's own lines
/// about what the call asked for (refused HTTP requests and credentials)
/// among them; later ones are counted and dropped.
const MAX_LINES_PER_CALL: u32 = 1000;

/// Who is logging: the provider and the call, and the call's line budget.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub(crate) provider: Arc<str>,
    pub(crate) call: u64,
    lines: Arc<LineBudget>,
}

impl Origin {
    pub(crate) fn new(provider: Arc<str>, call: u64) -> Self {
        let lines = Arc::new(LineBudget { provider: provider.clone(), call, used: AtomicU32::new(0) });
        Origin { provider, call, lines }
    }

    /// Takes one line from the call's budget; `false` once it is spent.
    pub(crate) fn take_line(&self) -> bool {
        self.lines.used.fetch_add(1, Ordering::Relaxed) < MAX_LINES_PER_CALL
    }
}

/// How many lines a call has written; what was dropped is logged once, when
/// the call's last handle goes.
#[derive(Debug)]
struct LineBudget {
    provider: Arc<str>,
    call: u64,
    used: AtomicU32,
}

impl Drop for LineBudget {
    fn drop(&mut self) {
        let dropped = self.used.load(Ordering::Relaxed).saturating_sub(MAX_LINES_PER_CALL);
        if dropped > 0 {
            let provider = &*self.provider;
            tracing::warn!(target: "provider", provider, call = self.call, dropped, "dropped log lines past {MAX_LINES_PER_CALL} in one call");
        }
    }
}

/// A log record's fields as `key="value"` pairs, within [`MAX_TEXT`] and
/// [`MAX_FIELDS`] in all.
fn field_text(fields: &[(String, String)]) -> String {
    let mut text = String::new();
    for (key, value) in fields.iter().take(MAX_FIELDS) {
        let left = MAX_TEXT.saturating_sub(text.len());
        if left == 0 {
            break;
        }
        let pair = format!("{}={:?} ", clip(key, 64), clip(value, left));
        text.push_str(&clip(&pair, left));
    }
    if fields.len() > MAX_FIELDS {
        let _ = write!(text, "[{} more fields]", fields.len() - MAX_FIELDS);
    }
    text.trim_end().to_owned()
}

/// The `log` import of one call.
pub(crate) struct LogImport {
    pub(crate) origin: Origin,
}

impl log::Host for LogImport {
    fn emit(&mut self, level: Level, message: String, fields: Vec<(String, String)>) -> wasmtime::Result<()> {
        if !self.origin.take_line() {
            return Ok(());
        }
        let provider = &*self.origin.provider;
        let call = self.origin.call;
        let fields = field_text(&fields);
        let message = clip(&message, MAX_TEXT);
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

struct Lines {
    /// The call writing.
    origin: Origin,
    partial: Vec<u8>,
    /// The end of what the guest wrote to stderr in this call, for trap
    /// reports.
    tail: Vec<u8>,
}

/// A guest's stdout or stderr, logged line by line.
#[derive(Clone)]
pub(crate) struct GuestOutput {
    stream: Stdio,
    lines: Arc<Mutex<Lines>>,
}

impl GuestOutput {
    pub(crate) fn new(origin: Origin, stream: Stdio) -> Self {
        let lines = Lines { origin, partial: Vec::new(), tail: Vec::new() };
        GuestOutput { stream, lines: Arc::new(Mutex::new(lines)) }
    }

    /// Makes what is written from now on `origin`'s: the next call's, on an
    /// instance kept from the last.
    pub(crate) fn begin(&self, origin: Origin) {
        let mut lines = self.lines.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        lines.origin = origin;
        lines.tail.clear();
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
            self.emit(&lines.origin, &line[..line.len() - 1]);
        }
        if lines.partial.len() > MAX_TEXT {
            let line = std::mem::take(&mut lines.partial);
            self.emit(&lines.origin, &line);
        }
    }

    fn emit(&self, origin: &Origin, line: &[u8]) {
        if !origin.take_line() {
            return;
        }
        let line = String::from_utf8_lossy(line);
        let provider = &*origin.provider;
        let call = origin.call;
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
        let output = GuestOutput::new(Origin::new("test".into(), 1), Stdio::Stderr);
        output.write_bytes(b"first line\nthread 'main' panicked at src/lib.rs:1:1:\nboom");
        assert_eq!(output.tail(), "first line\nthread 'main' panicked at src/lib.rs:1:1:\nboom");
        output.write_bytes(&vec![b'x'; 3 * STDERR_TAIL]);
        assert_eq!(output.tail().len(), STDERR_TAIL);
        assert!(output.tail().ends_with('x'));
        output.begin(Origin::new("test".into(), 2));
        assert_eq!(output.tail(), "", "the next call's stderr starts empty");
    }

    #[test]
    fn records_are_cut_to_size() {
        let nuls = "\0".repeat(1 << 20);
        let fields: Vec<(String, String)> = (0..100).map(|i| (format!("k{i}"), nuls.clone())).collect();
        let text = field_text(&fields);
        assert!(text.len() < 2 * MAX_TEXT, "{}", text.len());
        assert!(text.ends_with("[84 more fields]"), "{}", &text[text.len() - 40..]);
    }

    #[test]
    fn a_call_writes_a_bounded_number_of_lines() {
        let origin = Origin::new("test".into(), 1);
        let written = (0..MAX_LINES_PER_CALL + 10).filter(|_| origin.take_line()).count();
        assert_eq!(written, MAX_LINES_PER_CALL as usize);
    }
}
