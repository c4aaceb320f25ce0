//! What the host refuses to load, and why it says so.

use std::time::Duration;

use wasm_ccm_cloud::ProviderError;
use wasm_ccm_host::{Allocation, Engine, EngineSettings, LoadError, LoadedProvider};
use wasm_ccm_tests::{engine, guest, spec};

async fn load_error(wasm: &[u8], config: &[u8]) -> LoadError {
    match LoadedProvider::load(&engine(), spec("candidate", wasm.into(), config)).await {
        Ok(_) => panic!("the candidate loaded"),
        Err(err) => err,
    }
}

#[tokio::test]
async fn garbage_bytes() {
    let err = load_error(b"this is not WebAssembly", b"").await;
    assert!(matches!(err, LoadError::NotWasm(_)), "{err:?}");
    assert!(err.to_string().starts_with("not a WebAssembly binary"), "{err}");
}

#[tokio::test]
async fn a_core_module() {
    let module = wat::parse_str("(module (func (export \"ensure\")))").unwrap();
    let err = load_error(&module, b"").await;
    assert!(matches!(err, LoadError::CoreModule), "{err:?}");
    assert!(err.to_string().contains("not a component"), "{err}");
}

#[tokio::test]
async fn a_truncated_component() {
    let fake = guest("provider-fake");
    let err = load_error(&fake[..fake.len() / 2], b"").await;
    assert!(matches!(err, LoadError::Invalid(_)), "{err:?}");
}

#[tokio::test]
async fn a_component_of_another_world() {
    let err = load_error(&guest("guest-other-world"), b"").await;
    let LoadError::WrongWorld { missing, .. } = &err else { panic!("{err:?}") };
    for interface in ["provider", "load-balancer", "instances-v2", "instances", "zones", "clusters", "routes"] {
        assert!(missing.contains(&format!("missing export wasm-ccm:provider/{interface}@0.2.0")), "{missing}");
    }
}

/// A provider built against the first contract, which took nodes by value.
#[tokio::test]
async fn another_contract_version() {
    let component = wat::parse_str(
        r#"(component
            (instance $provider)
            (export "wasm-ccm:provider/provider@0.1.0" (instance $provider)))"#,
    )
    .unwrap();
    let err = load_error(&component, b"").await.to_string();
    assert!(err.contains("not a wasm-ccm provider (contract wasm-ccm:provider@0.2.0)"), "{err}");
    assert!(err.contains("exports wasm-ccm:provider/provider@0.1.0, built against another contract version"), "{err}");
}

#[tokio::test]
async fn imports_the_host_does_not_provide() {
    let component = wat::parse_str(
        r#"(component
            (import "wasi:sockets/tcp@0.2.0" (instance))
            (import "wasi:http/outgoing-handler@0.2.0" (instance)))"#,
    )
    .unwrap();
    let err = load_error(&component, b"").await;
    assert!(matches!(err, LoadError::UnsupportedImports(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("wasi:sockets/tcp@0.2.0") && message.contains("wasi:http/outgoing-handler@0.2.0"),
        "{message}"
    );
}

#[tokio::test]
async fn a_provider_whose_initialize_traps() {
    let err = load_error(&guest("guest-hostile"), b"trap-on-initialize").await;
    let LoadError::Startup(ProviderError::Panic { message }) = &err else { panic!("{err:?}") };
    assert!(message.contains("initialize refuses to start"), "{message}");
}

/// An engine on the default pooling allocator, but a small one, with these
/// compile limits.
fn limited_engine(max_component_size: usize, compile_timeout: Duration) -> Engine {
    let settings = EngineSettings {
        allocation: Allocation::Pooling { instances: 4 },
        max_component_size,
        compile_timeout,
        ..EngineSettings::default()
    };
    Engine::new(settings).expect("an engine")
}

#[tokio::test]
async fn a_component_over_the_size_limit_is_not_compiled() {
    let fake = guest("provider-fake");
    let engine = limited_engine(fake.len() - 1, Duration::from_secs(60));
    let err = LoadedProvider::load(&engine, spec("large", fake.clone(), b"")).await.err().expect("refused");
    assert!(matches!(err, LoadError::TooLarge { limit, .. } if limit == fake.len() - 1), "{err:?}");
    assert!(err.to_string().contains("over the"), "{err}");
}

#[tokio::test]
async fn a_compile_past_its_timeout_is_given_up() {
    let engine = limited_engine(32 << 20, Duration::from_millis(1));
    let err = LoadedProvider::load(&engine, spec("slow", guest("provider-aws"), b"")).await.err().expect("refused");
    assert!(matches!(err, LoadError::CompileTimeout { .. }), "{err:?}");
    assert_eq!(err.to_string(), "compiling the component took longer than 1ms");
}
