//! What the signing tests give cosign v3 ([`Tool::Cosign`]): a key pair
//! and its password, and a signing configuration for signing offline.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::tools::Tool;

/// cosign's signing configuration without a transparency log, timestamp
/// authority or certificate authority: how cosign v3 signs offline with a
/// key (its `--tlog-upload=false` is deprecated for this).
pub const OFFLINE_SIGNING_CONFIG: &str = r#"{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json","caUrls":[],"oidcUrls":[],"rekorTlogUrls":[],"tsaUrls":[],"rekorTlogConfig":{"selector":"ANY"},"tsaConfig":{"selector":"ANY"}}"#;

/// A cosign key pair made by `cosign generate-key-pair` in a directory of
/// its own, with the offline signing configuration beside it.
pub struct CosignKeys {
    dir: tempfile::TempDir,
}

/// The password of the keys the tests make.
pub const COSIGN_PASSWORD: &str = "wasm-ccm-tests";

impl CosignKeys {
    /// Makes `cosign.key` and `cosign.pub`, and `offline.json`.
    ///
    /// # Errors
    /// When cosign fails.
    pub fn generate() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        Tool::Cosign.run(dir.path(), &["generate-key-pair"], &[("COSIGN_PASSWORD", COSIGN_PASSWORD)])?;
        std::fs::write(dir.path().join("offline.json"), OFFLINE_SIGNING_CONFIG)?;
        Ok(CosignKeys { dir })
    }

    /// The encrypted private key.
    pub fn private_key(&self) -> PathBuf {
        self.dir.path().join("cosign.key")
    }

    /// The public key.
    pub fn public_key(&self) -> PathBuf {
        self.dir.path().join("cosign.pub")
    }

    /// The PEM of the public key.
    ///
    /// # Panics
    /// When it cannot be read.
    pub fn public_key_pem(&self) -> Vec<u8> {
        std::fs::read(self.public_key()).expect("cosign.pub")
    }

    /// Runs cosign in this directory with the password in its environment.
    ///
    /// # Errors
    /// As [`Tool::run`].
    pub fn cosign(&self, args: &[&str]) -> anyhow::Result<Output> {
        Tool::Cosign.run(self.dir.path(), args, &[("COSIGN_PASSWORD", COSIGN_PASSWORD)])
    }

    /// `cosign COMMAND --key cosign.key`, signing offline in `form`, with
    /// `args`, of `target`.
    fn sign(&self, command: &str, form: Form, args: &[&str], target: &str) -> anyhow::Result<Output> {
        let key = self.private_key().display().to_string();
        let mut all = vec![command, "--key", &key];
        all.extend(form.flags());
        all.extend(args);
        all.extend(["--yes", target]);
        self.cosign(&all)
    }

    /// `cosign sign-blob --bundle` of `file`, offline: the bundle's bytes.
    ///
    /// # Errors
    /// When cosign fails.
    pub fn sign_blob_bundle(&self, file: &Path) -> anyhow::Result<Vec<u8>> {
        let bundle = self.dir.path().join("blob.sigstore.json");
        let bundle_arg = bundle.display().to_string();
        self.sign("sign-blob", Form::Bundle, &["--bundle", &bundle_arg], &file.display().to_string())?;
        Ok(std::fs::read(bundle)?)
    }

    /// `cosign attest-blob --bundle` of `file`, offline: a bundle of a
    /// DSSE envelope whose in-toto statement names the file's digest.
    ///
    /// # Errors
    /// When cosign fails.
    pub fn attest_blob_bundle(&self, file: &Path) -> anyhow::Result<Vec<u8>> {
        let bundle = self.dir.path().join("attestation.sigstore.json");
        std::fs::write(self.dir.path().join("predicate.json"), r#"{"provider": "wasm-ccm"}"#)?;
        let bundle_arg = bundle.display().to_string();
        let args = ["--predicate", "predicate.json", "--type", "custom", "--bundle", &bundle_arg];
        self.sign("attest-blob", Form::Bundle, &args, &file.display().to_string())?;
        Ok(std::fs::read(bundle)?)
    }

    /// `cosign sign-blob --output-signature` of `file` in the format
    /// earlier cosigns wrote (base64 of the signature), offline.
    ///
    /// # Errors
    /// When cosign fails.
    pub fn sign_blob_legacy(&self, file: &Path) -> anyhow::Result<Vec<u8>> {
        let signature = self.dir.path().join("blob.sig");
        let signature_arg = signature.display().to_string();
        self.sign("sign-blob", Form::Legacy, &["--output-signature", &signature_arg], &file.display().to_string())?;
        Ok(std::fs::read(signature)?)
    }

    /// `cosign sign` of `image` (`registry/repository@sha256:...`) in a
    /// plain HTTP registry, offline: an OCI 1.1 referrer holding a sigstore
    /// bundle, or with `legacy` the `sha256-<hex>.sig` tag earlier cosigns
    /// wrote.
    ///
    /// # Errors
    /// When cosign fails.
    pub fn sign_image(&self, image: &str, legacy: bool) -> anyhow::Result<()> {
        let form = if legacy { Form::Legacy } else { Form::Bundle };
        self.sign("sign", form, &["--allow-http-registry"], image)?;
        Ok(())
    }
}

/// How cosign v3 signs offline with a key.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// Into a sigstore bundle, with the offline signing configuration.
    Bundle,
    /// In the form earlier cosigns wrote: a bare signature, or a `.sig`
    /// tag, with no transparency log.
    Legacy,
}

impl Form {
    fn flags(self) -> &'static [&'static str] {
        match self {
            Form::Bundle => &["--signing-config", "offline.json"],
            Form::Legacy => &["--new-bundle-format=false", "--tlog-upload=false", "--use-signing-config=false"],
        }
    }
}
