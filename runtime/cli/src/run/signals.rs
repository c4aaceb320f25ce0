//! Stopping on a signal: the first SIGTERM or SIGINT asks the controllers to
//! stop and finish what they are doing; a second one exits at once.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Cancels `stop` on the first SIGTERM or SIGINT and exits the process on
/// the second.
///
/// # Errors
/// When the signal handlers cannot be installed.
pub fn stop_on_signal(stop: CancellationToken) -> std::io::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        for received in 0.. {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            if received == 0 {
                tracing::info!("stopping: finishing work in flight (signal again to exit at once)");
                stop.cancel();
            } else {
                tracing::warn!("exiting at once");
                std::process::exit(130);
            }
        }
    });
    Ok(())
}
