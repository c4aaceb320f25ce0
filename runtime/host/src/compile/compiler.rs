//! Where Cranelift compiles a component: on a thread of this process, or
//! in a child process under CPU-time and memory limits.
//!
//! A component is untrusted input to the compiler: a hostile one can take
//! minutes of CPU and gigabytes of memory to compile, and a compile cannot
//! be interrupted. In a child process, one given up on is killed, its
//! limits bound it even past the parent's timeout, and its memory never
//! counts against the controller's. The child is an executable that calls
//! [`serve_child`], `wasm-ccm` itself in the command; the parent writes it
//! a header line and the component on its standard input, and reads the
//! compiled code ([`Component::serialize`]) from its standard output.

use std::ffi::OsString;
use std::io::{BufRead as _, Read as _, Write as _};
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use wasmtime::component::Component;

use crate::compile::tier::{OptLevel, Tier, compiler_config};
use crate::error::LoadError;

/// The first word of the header line, and the version of this protocol.
const HEADER: &str = "wasm-ccm-compile/2";
/// The exit status of a child whose component does not compile.
const INVALID: u8 = 3;
/// The exit status of a child that ran out of memory.
const OUT_OF_MEMORY: u8 = 4;
/// How much of a child's standard error the parent reads.
const MAX_STDERR: u64 = 16 << 10;
/// The niceness a compile runs at. It compiles on every core, and the
/// controllers, whose reconciles go on during a reload, take the CPU before
/// it: a component that takes long to compile, hostile or not, slows
/// nothing else.
const NICENESS: i32 = 10;

/// Where an engine compiles components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compiler {
    /// On a thread of this process. A compile given up on cannot be
    /// stopped: it runs to its end and keeps its turn (see
    /// [`EngineSettings::compile_parallelism`](crate::EngineSettings::compile_parallelism))
    /// until then, and its memory is this process's. For library users and
    /// tests without a child executable.
    InProcess,
    /// In a child process, under limits; one given up on is killed and its
    /// turn given back at once.
    Child(ChildCompiler),
}

/// A child process that compiles one component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildCompiler {
    /// The executable: one whose `args` make it call [`serve_child`].
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The CPU time it may use, all its threads together (`RLIMIT_CPU`).
    pub cpu_time: Duration,
    /// The memory it may allocate, in bytes (`RLIMIT_DATA`).
    pub memory: u64,
}

impl ChildCompiler {
    /// `program` with `args`, with the default limits: 2 minutes of CPU
    /// time and 2 GiB of memory.
    pub fn new(program: impl Into<PathBuf>, args: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        ChildCompiler {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cpu_time: Duration::from_secs(120),
            memory: 2 << 30,
        }
    }

    /// Compiles `wasm` for `engine`, whose compiler is `tier`'s at
    /// `opt_level`, in a child process; dropping the future kills the child.
    ///
    /// # Errors
    /// When the child cannot be run, the component does not compile, or the
    /// child goes past its limits.
    pub(crate) async fn compile(
        &self,
        engine: &wasmtime::Engine,
        tier: Tier,
        opt_level: OptLevel,
        wasm: &[u8],
    ) -> Result<Component, LoadError> {
        let program = self.program.display();
        let mut child = tokio::process::Command::new(&self.program)
            .args(&self.args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| LoadError::Engine(format!("cannot start the compiler process {program}: {err}")))?;
        let header = Header {
            tier,
            opt_level,
            cpu_seconds: self.cpu_time.as_secs().max(1),
            memory: self.memory,
            size: wasm.len(),
        };
        let (mut stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let write = async {
            if let Some(stdin) = stdin.as_mut() {
                // A child that stopped reading says why on stderr.
                let _ = stdin.write_all(header.line().as_bytes()).await;
                let _ = stdin.write_all(wasm).await;
            }
            drop(stdin);
        };
        let mut code = Vec::new();
        let mut message = Vec::new();
        let read_code = async {
            match stdout {
                Some(stdout) => stdout.take(self.memory).read_to_end(&mut code).await.map(drop),
                None => Ok(()),
            }
        };
        let read_message = async {
            if let Some(stderr) = stderr {
                let _ = stderr.take(MAX_STDERR).read_to_end(&mut message).await;
            }
        };
        let ((), read, ()) = tokio::join!(write, read_code, read_message);
        let status = child.wait().await;
        let message = String::from_utf8_lossy(&message).trim().to_owned();
        let status =
            status.map_err(|err| LoadError::Engine(format!("the compiler process {program} failed: {err}")))?;
        if !status.success() {
            return Err(self.failure(status, message));
        }
        read.map_err(|err| LoadError::Engine(format!("cannot read the compiler process's output: {err}")))?;
        #[allow(unsafe_code)]
        // SAFETY: `Component::deserialize` requires bytes that
        // `Component::serialize` produced; given other bytes it may run
        // arbitrary machine code. These bytes are what our own compiler
        // process wrote after compiling the component this process chose
        // (checked for its size and header) with `Component::new` and
        // `Component::serialize`, over a pipe only the two processes hold.
        // Its executable is the operator's, as is this process's: whoever can
        // replace it can replace this one. A component that subverted the
        // compiler to write other bytes would have run its code in this
        // process as well had it been compiled here: compiling in a child
        // trusts Cranelift with hostile input no more than compiling in
        // process does. wasmtime refuses bytes of another engine
        // configuration or version.
        let component = unsafe { Component::deserialize(engine, &code) };
        component.map_err(|err| LoadError::Engine(format!("cannot load the compiler process's output: {err:#}")))
    }

    /// Why a child that did not succeed failed.
    fn failure(&self, status: std::process::ExitStatus, message: String) -> LoadError {
        let out_of_memory = || LoadError::CompileLimit(format!("its memory of {} bytes", self.memory));
        match status.code() {
            Some(code) if code == i32::from(INVALID) => return LoadError::Invalid(message),
            Some(code) if code == i32::from(OUT_OF_MEMORY) => return out_of_memory(),
            _ => {}
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt as _;

            use rustix::process::Signal;
            // Past its soft limit the kernel sends SIGXCPU, past its hard
            // limit SIGKILL.
            if status.signal().is_some_and(|signal| [Signal::XCPU, Signal::KILL].map(Signal::as_raw).contains(&signal))
            {
                return LoadError::CompileLimit(format!("its CPU time of {:?}", self.cpu_time));
            }
        }
        // What the standard library says before it aborts on a failed
        // allocation.
        if message.contains("memory allocation of") {
            return out_of_memory();
        }
        LoadError::Engine(format!("the compiler process {} ended with {status}: {message}", self.program.display()))
    }
}

/// Compiles `bytes` into a component for `engine`, on this thread.
pub(crate) fn build(engine: &wasmtime::Engine, bytes: &[u8]) -> Result<Component, LoadError> {
    Component::new(engine, bytes).map_err(|err| LoadError::Invalid(format!("{err:#}")))
}

/// What the parent tells the child before the component.
#[derive(Debug, PartialEq, Eq)]
struct Header {
    tier: Tier,
    opt_level: OptLevel,
    cpu_seconds: u64,
    memory: u64,
    size: usize,
}

impl Header {
    fn line(&self) -> String {
        let opt_level = match self.opt_level {
            OptLevel::None => "none",
            OptLevel::SpeedAndSize => "speed-and-size",
            _ => "speed",
        };
        let tier = self.tier.as_str();
        format!("{HEADER} {tier} {opt_level} {} {} {}\n", self.cpu_seconds, self.memory, self.size)
    }

    fn parse(line: &str) -> Option<Header> {
        let mut words = line.split_whitespace();
        (words.next()? == HEADER).then_some(())?;
        let tier = words.next()?;
        let tier = [Tier::Baseline, Tier::Optimizing].into_iter().find(|known| known.as_str() == tier)?;
        let opt_level = match words.next()? {
            "none" => OptLevel::None,
            "speed-and-size" => OptLevel::SpeedAndSize,
            "speed" => OptLevel::Speed,
            _ => return None,
        };
        let mut number = || words.next()?.parse::<u64>().ok();
        let (cpu_seconds, memory, size) = (number()?, number()?, usize::try_from(number()?).ok()?);
        Some(Header { tier, opt_level, cpu_seconds, memory, size })
    }
}

/// The child's side: reads a header and a component from standard input,
/// limits its own CPU time and memory as the header says, compiles the
/// component and writes its compiled code to standard output. The exit
/// status is 0 when it compiled, 3 when it does not compile and 4 when it
/// ran out of memory (the reason on standard error), and 2 when the
/// parent's request is not understood.
pub fn serve_child() -> ExitCode {
    match compile_stdin() {
        Ok(()) => ExitCode::SUCCESS,
        Err(ChildFailure::Invalid(reason)) => {
            eprintln!("{reason}");
            ExitCode::from(INVALID)
        }
        Err(ChildFailure::OutOfMemory(reason)) => {
            eprintln!("{reason}");
            ExitCode::from(OUT_OF_MEMORY)
        }
        Err(ChildFailure::Request(reason)) => {
            eprintln!("the compile request cannot be served: {reason}");
            ExitCode::from(2)
        }
    }
}

enum ChildFailure {
    /// The component does not compile.
    Invalid(String),
    /// Compiling it needed more memory than the limit.
    OutOfMemory(String),
    /// The request, the limits or the pipes failed.
    Request(String),
}

fn compile_stdin() -> Result<(), ChildFailure> {
    let request = |what: &str, err: &dyn std::fmt::Display| ChildFailure::Request(format!("{what}: {err}"));
    let mut stdin = std::io::stdin().lock();
    let mut line = Vec::new();
    (&mut stdin).take(256).read_until(b'\n', &mut line).map_err(|err| request("cannot read the header", &err))?;
    let header = Header::parse(&String::from_utf8_lossy(&line))
        .ok_or_else(|| ChildFailure::Request(format!("not a {HEADER} header")))?;
    limit_self(&header).map_err(|err| request("cannot set the compiler's limits", &err))?;
    let mut wasm = Vec::with_capacity(header.size);
    stdin.take(header.size as u64).read_to_end(&mut wasm).map_err(|err| request("cannot read the component", &err))?;
    // On every core, as in the parent: a provider's compile is what the
    // controllers wait for at start and at a reload. Its CPU-time limit
    // counts all its threads.
    let config = compiler_config(header.tier, header.opt_level);
    let engine = wasmtime::Engine::new(&config)
        .map_err(|err| request("cannot set up the compiler", &format_args!("{err:#}")))?;
    let component = Component::new(&engine, &wasm).map_err(|err| {
        let reason = format!("{err:#}");
        if reason.contains(&out_of_memory_message()) {
            ChildFailure::OutOfMemory(reason)
        } else {
            ChildFailure::Invalid(reason)
        }
    })?;
    let code = component.serialize().map_err(|err| request("cannot serialise the code", &format_args!("{err:#}")))?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&code).and_then(|()| stdout.flush()).map_err(|err| request("cannot write the code", &err))
}

/// How the system describes running out of memory (`ENOMEM`): wasmtime
/// keeps only the text of a failed mapping, in the compile error.
fn out_of_memory_message() -> String {
    #[cfg(unix)]
    let message = std::io::Error::from_raw_os_error(rustix::io::Errno::NOMEM.raw_os_error()).to_string();
    #[cfg(not(unix))]
    let message = std::io::Error::from(std::io::ErrorKind::OutOfMemory).to_string();
    message
}

/// Applies the header's CPU time and memory limits to this process: the
/// soft CPU limit sends SIGXCPU, a second later the hard one SIGKILL. Its
/// threads run at [`NICENESS`].
#[cfg(unix)]
fn limit_self(header: &Header) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let cpu = Rlimit { current: Some(header.cpu_seconds), maximum: Some(header.cpu_seconds + 1) };
    setrlimit(Resource::Cpu, cpu)?;
    setrlimit(Resource::Data, Rlimit { current: Some(header.memory), maximum: Some(header.memory) })?;
    // At worst the compile runs at the parent's priority, as it did.
    let _ = yield_to_the_controllers();
    Ok(())
}

/// Lowers the calling thread's priority to [`NICENESS`], unless it is lower
/// already; the threads it starts afterwards, the compiler's among them,
/// inherit it.
#[cfg(unix)]
fn yield_to_the_controllers() -> std::io::Result<()> {
    use rustix::process::{getpriority_process, setpriority_process};
    if getpriority_process(None)? < NICENESS {
        setpriority_process(None, NICENESS)?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn limit_self(_header: &Header) -> std::io::Result<()> {
    Err(std::io::Error::other("resource limits need a Unix system"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_compile_yields_the_cpu_to_the_controllers() {
        // Linux keeps a niceness per thread: this test's thread alone.
        std::thread::spawn(|| {
            yield_to_the_controllers().unwrap();
            assert_eq!(rustix::process::getpriority_process(None).unwrap(), NICENESS);
            let compiler = std::thread::spawn(|| rustix::process::getpriority_process(None).unwrap());
            assert_eq!(compiler.join().unwrap(), NICENESS, "a thread started afterwards inherits it");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_header_reads_back() {
        for tier in [Tier::Baseline, Tier::Optimizing] {
            let header = Header { tier, opt_level: OptLevel::None, cpu_seconds: 120, memory: 2 << 30, size: 12345 };
            assert_eq!(Header::parse(header.line().trim_end()), Some(header));
        }
        for bad in [
            "",
            "wasm-ccm-compile/1 speed 1 2 3",
            "wasm-ccm-compile/2 speed 1 2 3",
            "wasm-ccm-compile/2 optimizing fast 1 2 3",
            "wasm-ccm-compile/2 winch speed 1 2 3",
            "wasm-ccm-compile/2 baseline speed 1 2",
        ] {
            assert_eq!(Header::parse(bad), None, "{bad}");
        }
    }
}
