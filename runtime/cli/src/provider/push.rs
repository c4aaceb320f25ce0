//! `wasm-ccm provider push`: put a provider component in a registry in the
//! CNCF WebAssembly artifact format, and optionally sign it as `cosign sign
//! --key` does.

use std::path::PathBuf;

use anyhow::Context;
use wasm_ccm_config::RegistryArgs;
use wasm_ccm_distribution::{Reference, SigningKey, push as push_artifact, sign, signature_tag};

use crate::options::target::read;

/// The environment variable holding the password of an encrypted
/// `cosign.key`, as cosign reads it.
const PASSWORD_VARIABLE: &str = "COSIGN_PASSWORD";

/// `provider push` flags.
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The component file.
    pub file: PathBuf,
    /// Where to push it: `oci://registry[:port]/repository:tag`.
    pub reference: Reference,
    /// How to reach the registry.
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Sign the pushed manifest with this private key: PKCS#8 PEM, or
    /// cosign's encrypted `cosign.key` with its password in
    /// `COSIGN_PASSWORD`.
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
}

/// Pushes the file, signs it if asked, and prints the manifest digest and
/// the component's digest (the value to pin).
///
/// # Errors
/// When the file or key cannot be read, the file is not WebAssembly, or the
/// registry refuses the push or the signature.
pub async fn push(args: PushArgs) -> anyhow::Result<()> {
    let wasm = read(&args.file)?;
    // The key is read first, so that a wrong key or password pushes nothing.
    let key = match &args.sign_key {
        Some(path) => Some(signing_key(path)?),
        None => None,
    };
    let options = args.registry.options(&args.reference)?;
    let manifest_digest = push_artifact(&wasm, &args.reference, &options)
        .await
        .with_context(|| format!("cannot push {} to {}", args.file.display(), args.reference))?;
    let pushed = args.reference.with_digest(&manifest_digest)?;
    println!("pushed    {pushed}");
    println!("manifest  {manifest_digest}");
    println!("digest    {}", wasm_ccm_distribution::sha256_digest(&wasm));
    println!("size      {} bytes", wasm.len());
    if let Some(key) = key {
        // The digest just pushed, not whatever the tag points to by now.
        let signed = sign(&pushed, &key, &options).await.with_context(|| format!("cannot sign {pushed}"))?;
        println!("signed    {signed} (tag {})", signature_tag(&signed));
    }
    Ok(())
}

/// Reads a private key, decrypting a cosign key with `COSIGN_PASSWORD`.
fn signing_key(path: &std::path::Path) -> anyhow::Result<SigningKey> {
    let pem = std::fs::read(path).with_context(|| format!("cannot read --sign-key {}", path.display()))?;
    let password = std::env::var_os(PASSWORD_VARIABLE).map(|password| password.into_encoded_bytes());
    SigningKey::from_pem(&pem, password.as_deref()).with_context(|| format!("--sign-key {}", path.display()))
}
