//! A provider that attacks its host, for the sandbox tests.
//!
//! `ensure-load-balancer` reads the attack from the Service's annotation
//! `hostile/attack` and its argument from `hostile/arg`; without an attack
//! it succeeds, so a test can check that the host recovers. What an attack
//! observed comes back as the status's host name.
//!
//! `update-load-balancer` reads only the nodes' provider IDs, as a provider
//! that targets instances does, for the benchmarks of passing nodes.
//!
//! The attack `count` answers how many times this instance was asked it, so
//! that a test can tell a kept instance from a fresh one.
//!
//! `initialize` draws a random number the attack `born` answers, so that a
//! test can tell calls that start from one initialised state apart from
//! calls that each initialise, and reads the monotonic clock, which the
//! attack `clock` answers beside the clock's time in the call. With the
//! configuration `hold-a-resource-on-initialize` it keeps a host resource
//! past `initialize`; with `read-the-clock-late` it sleeps 50 ms before it
//! reads the clock; with `spin-on-initialize` and `grow-on-initialize` its
//! `initialize` loops forever or takes 1 GiB.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failure stops the test that met it"
)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use wasm_ccm_sdk::http::{AwsSigv4, Request, RequestAuth, Response};
use wasm_ccm_sdk::log::Level;
use wasm_ccm_sdk::types::{LoadBalancerIngress, LoadBalancerStatus, NodeAddressType, Service};
use wasm_ccm_sdk::{Error, LoadBalancer, NodeSet, Provider};

/// The `ensure-load-balancer` calls of `count` this instance has served.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// The hostile provider.
pub struct Hostile {
    /// Drawn in `initialize`.
    born: u64,
    /// The monotonic clock's time in `initialize`.
    born_at: u64,
}

impl Provider for Hostile {
    const NAME: &'static str = "hostile";

    fn new(config: &[u8], _cluster_name: &str) -> Result<Self, Error> {
        if config == b"trap-on-initialize" {
            panic!("initialize refuses to start");
        }
        if config == b"spin-on-initialize" {
            spin();
        }
        if config == b"grow-on-initialize" {
            grow(1024);
        }
        if config == b"hold-a-resource-on-initialize" {
            std::mem::forget(wasip2::clocks::monotonic_clock::subscribe_duration(1));
        }
        if config == b"read-the-clock-late" {
            wasip2::clocks::monotonic_clock::subscribe_duration(50_000_000).block();
        }
        let born_at = wasip2::clocks::monotonic_clock::now();
        Ok(Hostile { born: wasip2::random::random::get_random_u64(), born_at })
    }

    fn load_balancer(&self) -> Option<&dyn LoadBalancer> {
        Some(self)
    }
}

fn annotation<'a>(service: &'a Service, key: &str) -> &'a str {
    service.annotations.iter().find(|kv| kv.key == key).map_or("", |kv| kv.value.as_str())
}

fn observed(what: String) -> LoadBalancerStatus {
    LoadBalancerStatus {
        ingress: vec![LoadBalancerIngress { ip: None, hostname: Some(what), ip_mode: None, ports: Vec::new() }],
    }
}

/// A response's status and body, and the header an echoing server copies
/// the request's `Authorization` into, when there is one.
fn echoed(response: &Response) -> String {
    let mut seen = format!("status {} body {}", response.status(), response.text());
    if let Some(echo) = response.header("x-authorization") {
        seen.push_str(&format!(" header {echo}"));
    }
    seen
}

fn spin() -> ! {
    let mut counter = 0u64;
    loop {
        counter = black_box(counter.wrapping_add(1));
    }
}

fn grow(mebibytes: usize) -> usize {
    let mut chunks = Vec::new();
    for _ in 0..mebibytes {
        let chunk = vec![1u8; 1 << 20];
        chunks.push(black_box(chunk));
    }
    chunks.len()
}

/// The byte `scribble` fills memory with.
const MARK: u8 = 0xa5;

/// Fills `kibibytes` KiB of fresh heap with [`MARK`] and leaves it there;
/// returns where, and how much of it reads back marked.
fn scribble(kibibytes: usize) -> (usize, usize) {
    let marked = vec![MARK; kibibytes << 10];
    let address = marked.as_ptr() as usize;
    std::mem::forget(marked);
    (address, count_marked(address, kibibytes << 10))
}

/// How many of the `len` bytes of linear memory at `address` hold
/// [`MARK`], growing the memory first to reach them.
#[allow(unsafe_code)]
fn count_marked(address: usize, len: usize) -> usize {
    let end = address.saturating_add(len);
    grow_to(end);
    // The attack: reading linear memory this instance never wrote, where
    // an earlier instance in the same pool slot did. Volatile, so that the
    // reads happen.
    (address..end).filter(|&at| unsafe { std::ptr::read_volatile(at as *const u8) } == MARK).count()
}

/// Grows linear memory to hold `end` bytes.
#[cfg(target_arch = "wasm32")]
fn grow_to(end: usize) {
    const PAGE: usize = 64 << 10;
    let pages = memory_pages();
    if end > pages * PAGE {
        core::arch::wasm32::memory_grow(0, end.div_ceil(PAGE) - pages);
    }
}

/// Built for the host only to be linted: there is no linear memory.
#[cfg(not(target_arch = "wasm32"))]
fn grow_to(_end: usize) {}

/// Linear memory's size in 64 KiB pages.
#[cfg(target_arch = "wasm32")]
fn memory_pages() -> usize {
    core::arch::wasm32::memory_size(0)
}

/// Built for the host only to be linted: there is no linear memory.
#[cfg(not(target_arch = "wasm32"))]
fn memory_pages() -> usize {
    0
}

/// Reads the names, provider IDs and internal addresses of every node;
/// says how many bytes that was and the memory's size in pages before and
/// after.
fn read_nodes(nodes: &NodeSet<'_>) -> String {
    let before = memory_pages();
    let internal = nodes.addresses(NodeAddressType::InternalIp);
    let views = [nodes.names(), nodes.provider_ids(), &internal];
    let bytes: usize = views.iter().flat_map(|strings| strings.iter()).map(str::len).sum();
    format!("read {bytes} bytes, memory {before} pages then {}", memory_pages())
}

impl LoadBalancer for Hostile {
    fn update_load_balancer(&self, _cluster: &str, _service: &Service, nodes: &NodeSet<'_>) -> Result<(), Error> {
        let targets = nodes.provider_ids().iter().filter(|id| !id.is_empty()).count();
        if targets == nodes.len() { Ok(()) } else { Err(Error::other("a node without a provider ID")) }
    }

    fn ensure_load_balancer(
        &self,
        _cluster: &str,
        service: &Service,
        nodes: &NodeSet<'_>,
    ) -> Result<LoadBalancerStatus, Error> {
        let arg = annotation(service, "hostile/arg");
        match annotation(service, "hostile/attack") {
            // A host name any provider may answer: no name inside the cluster.
            "" => Ok(observed(format!("ok-with-{}-nodes.hostile.example", nodes.len()))),
            "born" => Ok(observed(format!("born {}", self.born))),
            // The calls this instance has served, this one included.
            "count" => Ok(observed(format!("call {}", CALLS.fetch_add(1, Ordering::Relaxed) + 1))),
            "clock" => Ok(observed(format!("{} {}", self.born_at, wasip2::clocks::monotonic_clock::now()))),
            "read-nodes" => Ok(observed(read_nodes(nodes))),
            "spin" => spin(),
            "sleep" => {
                std::thread::sleep(Duration::from_secs(3600));
                Ok(observed("slept".into()))
            }
            "grow" => Ok(observed(format!("grew {} MiB", grow(arg.parse().unwrap_or(1024))))),
            // `IP,IP,...`: an entry for each.
            "addresses" => Ok(LoadBalancerStatus {
                ingress: arg
                    .split(',')
                    .map(|ip| LoadBalancerIngress {
                        ip: Some(ip.to_owned()),
                        hostname: None,
                        ip_mode: None,
                        ports: Vec::new(),
                    })
                    .collect(),
            }),
            "panic" => panic!("{arg}"),
            "scribble" => {
                // `KIB`: marks KIB KiB of memory and leaves them marked.
                let (address, marked) = scribble(arg.parse().unwrap_or(256));
                Ok(observed(format!("{marked} marked at {address}")))
            }
            "peek" => {
                // `ADDRESS KIB`: counts the marked bytes there.
                let (address, kibibytes) = arg.split_once(' ').unwrap_or((arg, "256"));
                let (Ok(address), Ok(kibibytes)) = (address.parse(), kibibytes.parse::<usize>()) else {
                    return Err(Error::other("peek takes an address and a size in KiB"));
                };
                Ok(observed(format!("{} marked", count_marked(address, kibibytes << 10))))
            }
            "error" => {
                // `KIB`: an error of KIB KiB of text; `retry KIB`: a retry's.
                let (retry, size) = arg.split_once(' ').map_or((false, arg), |(kind, size)| (kind == "retry", size));
                let message = "e".repeat(size.parse::<usize>().unwrap_or(200) << 10);
                Err(if retry { Error::retry(Duration::from_secs(1), message) } else { Error::other(message) })
            }
            "http" => {
                let response = Request::get(arg).send()?;
                Ok(observed(format!("status {} body {}", response.status(), response.text())))
            }
            "http-many" => {
                // `COUNT URL`: COUNT requests one after the other.
                let (count, url) = arg.split_once(' ').unwrap_or((arg, ""));
                let count: usize = count.parse().map_err(|_| Error::other("http-many takes a count and a URL"))?;
                let mut ok = 0;
                for _ in 0..count {
                    ok += usize::from(Request::get(url).send()?.is_success());
                }
                Ok(observed(format!("{ok} of {count} ok")))
            }
            "refused-many" => {
                // `COUNT URL`: COUNT requests the host refuses and COUNT
                // credentials not bound to the provider, errors ignored.
                let (count, url) = arg.split_once(' ').unwrap_or((arg, ""));
                let count: usize = count.parse().map_err(|_| Error::other("refused-many takes a count and a URL"))?;
                let mut refused = 0;
                for _ in 0..count {
                    refused += usize::from(Request::get(url).send().is_err());
                    refused += usize::from(wasm_ccm_sdk::credentials::get_string("not-bound").is_err());
                }
                Ok(observed(format!("refused {refused}")))
            }
            "http-auth" => {
                let response = Request::get(arg).bearer("token").send()?;
                Ok(observed(format!("status {} body {}", response.status(), response.text())))
            }
            "bearer" => {
                // `NAME URL`: the credential NAME as a bearer token.
                let (name, url) = arg.split_once(' ').unwrap_or((arg, ""));
                Ok(observed(echoed(&Request::get(url).bearer(name).send()?)))
            }
            "sigv4" => {
                // `ACCESS-KEY-ID SECRET SESSION-TOKEN|- REGION SERVICE URL`.
                let parts: Vec<&str> = arg.splitn(6, ' ').collect();
                let [access_key_id, secret_access_key, session_token, region, service, url] = parts[..] else {
                    return Err(Error::other("sigv4 takes six arguments"));
                };
                let auth = RequestAuth::AwsSigv4(AwsSigv4 {
                    region: region.into(),
                    service: service.into(),
                    access_key_id: access_key_id.into(),
                    secret_access_key: secret_access_key.into(),
                    session_token: (session_token != "-").then(|| session_token.into()),
                });
                Ok(observed(echoed(&Request::get(url).auth(auth).send()?)))
            }
            "self-signed" => {
                // `ACCESS-KEY-ID SESSION-TOKEN|- REGION SERVICE URL`: signed
                // as an SDK with placeholder keys would, with a signature
                // the host must not let through where a key is sealed.
                let parts: Vec<&str> = arg.splitn(5, ' ').collect();
                let [access_key_id, session_token, region, service, url] = parts[..] else {
                    return Err(Error::other("self-signed takes five arguments"));
                };
                let authorization = format!(
                    "AWS4-HMAC-SHA256 Credential={access_key_id}/20261128/{region}/{service}/aws4_request, \
                     SignedHeaders=host;x-amz-date, Signature={}",
                    "0".repeat(64)
                );
                let mut request =
                    Request::get(url).header("authorization", authorization).header("x-amz-date", "20261128T000000Z");
                if session_token != "-" {
                    request = request.header("x-amz-security-token", session_token);
                }
                Ok(observed(echoed(&request.send()?)))
            }
            "log-flood" => {
                // ARG MiB of NULs as one message and as 100 fields, then a
                // thousand more lines than a call may write.
                let nuls = "\0".repeat(arg.parse::<usize>().unwrap_or(50) << 20);
                wasm_ccm_sdk::log::emit(Level::Warn, &nuls, &[]);
                let fields: Vec<(&str, &str)> = (0..100).map(|_| ("nuls", &nuls[..1 << 16])).collect();
                wasm_ccm_sdk::log::emit(Level::Warn, "fields", &fields);
                for _ in 0..2000 {
                    wasm_ccm_sdk::log::emit(Level::Warn, &nuls[..1 << 16], &[]);
                }
                Ok(observed("logged".into()))
            }
            "resources" => {
                // Pollables kept until the host refuses more.
                let mut kept = 0usize;
                loop {
                    std::mem::forget(wasip2::clocks::monotonic_clock::subscribe_duration(1));
                    kept += 1;
                    if kept == 10_000_000 {
                        return Ok(observed(format!("kept {kept} pollables")));
                    }
                }
            }
            "credential" => {
                let value = wasm_ccm_sdk::credentials::get_string(arg)?;
                Ok(observed(format!("credential {value}")))
            }
            "file" => {
                // Through WASI itself: the standard library's file system
                // would hold the standard streams past `initialize`.
                let directories = wasip2::filesystem::preopens::get_directories();
                let Some((directory, _)) = directories.first() else {
                    return Err(Error::other(format_args!("file: no directory is open to read {arg}")));
                };
                let flags = wasip2::filesystem::types::DescriptorFlags::READ;
                let opened = directory.open_at(
                    wasip2::filesystem::types::PathFlags::empty(),
                    arg.trim_start_matches('/'),
                    wasip2::filesystem::types::OpenFlags::empty(),
                    flags,
                );
                match opened {
                    Ok(_) => Ok(observed(format!("opened {arg}"))),
                    Err(err) => Err(Error::other(format_args!("file: {err}"))),
                }
            }
            "env" => Ok(observed(format!(
                "{} variables, {} arguments",
                std::env::vars_os().count(),
                std::env::args_os().count()
            ))),
            "stdout" => {
                println!("{arg}");
                eprintln!("{arg} on stderr");
                Ok(observed("printed".into()))
            }
            other => Err(Error::other(format_args!("unknown attack {other:?}"))),
        }
    }
}

wasm_ccm_sdk::export_provider!(Hostile);
