//! `wasm-ccm provider verify`: check a provider's sha256 pin and signature
//! exactly as `wasm-ccm run` does before loading it.

use std::path::PathBuf;

use anyhow::Context;
use wasm_ccm_distribution::{PublicKey, Verification, pull, verify_bytes};
use wasm_ccm_plan::RegistryArgs;

use crate::options::target::{Target, read, refuse_registry_flags};

/// `provider verify` flags.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// A component file, or `oci://registry[:port]/repository[:tag|@sha256:<hex>]`.
    pub target: Target,
    /// The sha256 digest the component's bytes must have (`sha256:<hex>`
    /// or the hex alone).
    #[arg(long, value_name = "DIGEST")]
    pub sha256: Option<String>,
    /// A cosign public key (PEM) the provider must be signed with: by
    /// `cosign sign --key` in a registry, by `cosign sign-blob --key` for a
    /// file.
    #[arg(long, value_name = "FILE")]
    pub public_key: Option<PathBuf>,
    /// For a file: its `cosign sign-blob` signature (base64). A registry
    /// provider's signatures are read from the registry.
    #[arg(long, value_name = "FILE", requires = "public_key")]
    pub signature: Option<PathBuf>,
    /// How to reach the registry.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Verifies the provider and prints what was checked.
///
/// # Errors
/// When there is nothing to check, a file cannot be read, or the provider
/// does not verify: the error names the check that failed.
pub async fn verify(args: VerifyArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.sha256.is_some() || args.public_key.is_some(),
        "nothing to verify {} against: give --sha256, --public-key, or both",
        args.target
    );
    let public_key = match &args.public_key {
        Some(path) => {
            let pem = std::fs::read(path).with_context(|| format!("cannot read --public-key {}", path.display()))?;
            Some(PublicKey::from_pem(&pem).with_context(|| format!("--public-key {}", path.display()))?)
        }
        None => None,
    };
    let verification = Verification { pin: args.sha256.clone(), public_key };
    let failed = || format!("{} does not verify", args.target);
    let digest = match &args.target {
        Target::File(path) => {
            refuse_registry_flags(&args.registry, &args.target)?;
            let wasm = read(path)?;
            let signature = match &args.signature {
                Some(path) => {
                    Some(std::fs::read(path).with_context(|| format!("cannot read --signature {}", path.display()))?)
                }
                None if verification.public_key.is_some() => {
                    anyhow::bail!("--public-key needs --signature for the file {}", path.display())
                }
                None => None,
            };
            verify_bytes(&wasm, signature.as_deref(), &verification).with_context(failed)?
        }
        Target::Oci(reference) => {
            anyhow::ensure!(
                args.signature.is_none(),
                "--signature is for files; the signatures of {reference} are read from the registry"
            );
            let options = args.registry.options(reference)?;
            let pulled = pull(reference, &options, &verification).await.with_context(failed)?;
            println!("manifest  {}", pulled.manifest_digest);
            pulled.digest
        }
    };
    println!("verified  {}", args.target);
    println!("digest    {digest}");
    if args.sha256.is_some() {
        println!("pin       matches");
    }
    if let Some(path) = &args.public_key {
        println!("signature verifies with {}", path.display());
    }
    Ok(())
}
