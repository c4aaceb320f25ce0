//! The epoch ticker that enforces call deadlines: it advances the engines'
//! epochs every [`EPOCH_TICK`] while a call runs, and sleeps while none
//! does, so that an idle host is not woken a hundred times a second.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the epoch advances while a call runs: the granularity of
/// deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The thread advancing the epochs; stopped when dropped.
pub(crate) struct EpochTicker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// Calls running now.
    running: usize,
    stop: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl EpochTicker {
    /// Starts the thread advancing the epochs of `engines`.
    pub(crate) fn start(engines: Vec<wasmtime::Engine>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new().name("wasm-epoch".into()).spawn(move || {
                loop {
                    {
                        let mut state = shared.lock();
                        while state.running == 0 && !state.stop {
                            state = shared.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
                        }
                        if state.stop {
                            return;
                        }
                    }
                    std::thread::sleep(EPOCH_TICK);
                    if shared.lock().running > 0 {
                        engines.iter().for_each(wasmtime::Engine::increment_epoch);
                    }
                }
            })?
        };
        Ok(EpochTicker { shared, thread: Some(thread) })
    }

    /// Keeps the epochs advancing until the guard is dropped: held by
    /// every call for as long as it runs.
    pub(crate) fn running(&self) -> Running {
        let mut state = self.shared.lock();
        state.running += 1;
        if state.running == 1 {
            self.shared.wake.notify_one();
        }
        Running { shared: self.shared.clone() }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A call running: the epochs advance while any is held.
pub(crate) struct Running {
    shared: Arc<Shared>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shared.lock().running -= 1;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// Spins a guest loop whose deadline is one tick away, on a thread of
    /// its own; the receiver hears when the loop was stopped.
    fn spin(engine: &wasmtime::Engine) -> mpsc::Receiver<()> {
        let module = wasmtime::Module::new(engine, r#"(module (func (export "spin") (loop (br 0))))"#).unwrap();
        let mut store = wasmtime::Store::new(engine, ());
        store.set_epoch_deadline(1);
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
        let spin = instance.get_typed_func::<(), ()>(&mut store, "spin").unwrap();
        let (stopped, heard) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = spin.call(&mut store, ());
            let _ = stopped.send(());
        });
        heard
    }

    #[test]
    fn the_epoch_advances_only_while_a_call_runs() {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = wasmtime::Engine::new(&config).unwrap();
        let ticker = EpochTicker::start(vec![engine.clone()]).unwrap();
        let stopped = spin(&engine);
        let idle = EPOCH_TICK * 20;
        assert!(stopped.recv_timeout(idle).is_err(), "no call running: the epoch stays, the loop spins on");
        let running = ticker.running();
        stopped.recv_timeout(Duration::from_secs(10)).expect("a call running: the epoch advances past the deadline");
        drop(running);
        assert_eq!(ticker.shared.lock().running, 0);
        let again = spin(&engine);
        assert!(again.recv_timeout(idle).is_err(), "the epoch stays again once no call runs");
        let _running = ticker.running();
        again.recv_timeout(Duration::from_secs(10)).expect("and advances again with the next call");
    }
}
