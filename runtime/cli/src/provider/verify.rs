//! `wasm-ccm provider verify`: check a provider's sha256 pin and signature
//! exactly as `wasm-ccm run` does before loading it.

use std::path::PathBuf;

use anyhow::Context;
use wasm_ccm_config::RegistryArgs;
use wasm_ccm_distribution::{LogKey, PublicKey, TransparencyLog, Verification, pull, verify_bytes};

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
    /// For a file: what `cosign sign-blob` wrote for it, its sigstore
    /// bundle (`--bundle`) or its bare base64 signature. A registry
    /// provider's signatures are read from the registry.
    #[arg(long, value_name = "FILE", requires = "public_key")]
    pub signature: Option<PathBuf>,
    /// The transparency log's public key (PEM; Rekor's), to check a
    /// sigstore bundle's log entries with. Without it, or
    /// `--insecure-ignore-tlog`, a bundle with a log entry is refused.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure_ignore_tlog")]
    pub tlog_public_key: Option<PathBuf>,
    /// Ignore the transparency log entries of sigstore bundles: the
    /// signature with `--public-key` alone decides.
    #[arg(long)]
    pub insecure_ignore_tlog: bool,
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
    let transparency_log = match (&args.tlog_public_key, args.insecure_ignore_tlog) {
        (_, true) => TransparencyLog::Ignore,
        (Some(path), false) => {
            let pem =
                std::fs::read(path).with_context(|| format!("cannot read --tlog-public-key {}", path.display()))?;
            TransparencyLog::Key(
                LogKey::from_pem(&pem).with_context(|| format!("--tlog-public-key {}", path.display()))?,
            )
        }
        (None, false) => TransparencyLog::Unconfigured,
    };
    let verification = Verification { pin: args.sha256.clone(), public_key, transparency_log };
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
