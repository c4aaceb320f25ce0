//! The WASI a provider gets: clocks, randomness and the interfaces the Rust
//! standard library links against, with nothing behind them. No files (no
//! preopened directory), no environment, no arguments, no sockets (not even
//! linked), an empty stdin; stdout and stderr go to the log.

use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random};
use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
use wasmtime_wasi::{HostMonotonicClock, WasiCtx, WasiCtxBuilder, WasiView};

use crate::imports::log::GuestOutput;

/// The WASI interfaces [`add_to_linker`] provides, by name without version.
pub(crate) const PROVIDED: &[&str] = &[
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/wall-clock",
    "wasi:clocks/monotonic-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:cli/exit",
    "wasi:cli/environment",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
];

/// `wasi:io` works on the resource table alone.
struct Io;

impl HasData for Io {
    type Data<'a> = &'a mut ResourceTable;
}

/// Links the interfaces of [`PROVIDED`].
pub(crate) fn add_to_linker<T: WasiView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use wasmtime_wasi_io::bindings::wasi::io;
    io::error::add_to_linker::<T, Io>(linker, |state| state.ctx().table)?;
    io::poll::add_to_linker::<T, Io>(linker, |state| state.ctx().table)?;
    io::streams::add_to_linker::<T, Io>(linker, |state| state.ctx().table)?;
    clocks::wall_clock::add_to_linker::<T, WasiClocks>(linker, T::clocks)?;
    clocks::monotonic_clock::add_to_linker::<T, WasiClocks>(linker, T::clocks)?;
    random::random::add_to_linker::<T, WasiRandom>(linker, T::random)?;
    random::insecure::add_to_linker::<T, WasiRandom>(linker, T::random)?;
    random::insecure_seed::add_to_linker::<T, WasiRandom>(linker, T::random)?;
    cli::exit::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    cli::environment::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    cli::stdin::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    cli::stdout::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    cli::stderr::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    cli::terminal_input::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    cli::terminal_output::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    cli::terminal_stdin::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    cli::terminal_stdout::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    cli::terminal_stderr::add_to_linker::<T, WasiCli>(linker, T::cli)?;
    filesystem::types::add_to_linker::<T, WasiFilesystem>(linker, T::filesystem)?;
    filesystem::preopens::add_to_linker::<T, WasiFilesystem>(linker, T::filesystem)?;
    Ok(())
}

/// A provider's monotonic clock: nanoseconds since it was loaded, in all its
/// calls. A call's instance starts from the snapshot of the one that ran
/// `initialize`, with what that one read of the clock: a clock that began
/// with each call would run back from it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SinceLoad(Instant);

impl SinceLoad {
    pub(crate) fn start() -> Self {
        SinceLoad(Instant::now())
    }
}

impl HostMonotonicClock for SinceLoad {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A call's WASI context: stdout and stderr into the log, nothing else;
/// the provider's monotonic `clock`; randomness from the system, or drawn
/// from `seed`.
pub(crate) fn context(stdout: GuestOutput, stderr: GuestOutput, clock: SinceLoad, seed: Option<[u8; 32]>) -> WasiCtx {
    let mut builder = WasiCtxBuilder::new();
    builder.stdout(stdout).stderr(stderr).allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    builder.monotonic_clock(clock);
    if let Some(seed) = seed {
        let mut secure = StdRng::from_seed(seed);
        let insecure = StdRng::from_rng(&mut secure);
        let insecure_seed = u128::from(secure.next_u64()) << 64 | u128::from(secure.next_u64());
        builder.insecure_random(insecure).insecure_random_seed(insecure_seed).secure_random(secure);
    }
    builder.build()
}
