//! The signing and OCI clients the interoperability tests run: cosign v3, oras and
//! wkg, at the versions `tests/tools/install-signing-tools.sh` pins and
//! installs (`tests/setup.sh` runs it), from the directory it installs them
//! to.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, bail};

use crate::repository;

/// The script that installs the tools and pins their versions.
const INSTALLER: &str = "tests/tools/install-signing-tools.sh";

/// A client installed by the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// cosign v3, `github.com/sigstore/cosign/v3/cmd/cosign`.
    Cosign,
    /// oras, `oras.land/oras/cmd/oras`.
    Oras,
    /// wkg, the `wkg` crate.
    Wkg,
}

impl Tool {
    /// The command's name.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Cosign => "cosign",
            Tool::Oras => "oras",
            Tool::Wkg => "wkg",
        }
    }

    /// The version the script pins, read from it.
    ///
    /// # Panics
    /// When the script does not pin one.
    pub fn version(self) -> String {
        let variable = format!("{}_VERSION=", self.name().to_ascii_uppercase());
        let script = std::fs::read_to_string(repository().join(INSTALLER)).expect("the installer script");
        script
            .lines()
            .find_map(|line| line.strip_prefix(&variable))
            .map(|version| version.trim().to_owned())
            .unwrap_or_else(|| panic!("{INSTALLER} pins no {variable}"))
    }

    /// The installed binary: `$WASM_CCM_CACHE/tools/<name>-<version>/bin/<name>`
    /// (default `~/.cache/wasm-ccm`).
    ///
    /// # Panics
    /// When it is not there, saying how to install it: the tests that run
    /// these clients need them, as others need `docker-registry`.
    pub fn path(self) -> PathBuf {
        let cache = std::env::var_os("WASM_CCM_CACHE").map(PathBuf::from).unwrap_or_else(|| {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
            base.join("wasm-ccm")
        });
        let version = self.version();
        let path = cache.join("tools").join(format!("{}-{version}", self.name())).join("bin").join(self.name());
        assert!(
            path.is_file(),
            "{} {version} is not installed at {}: install it with tests/setup.sh (or {INSTALLER})",
            self.name(),
            path.display()
        );
        path
    }

    /// Runs the tool with `args` in `dir`, with `env`, and returns its
    /// output when it succeeds.
    ///
    /// # Errors
    /// When it cannot start or exits unsuccessfully, with what it printed.
    pub fn run(self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Output> {
        let output = Command::new(self.path())
            .args(args)
            .current_dir(dir)
            .envs(env.iter().copied())
            // No user configuration of the tools reaches the tests.
            .env("HOME", dir)
            .env("DOCKER_CONFIG", dir.join(".docker"))
            .env("XDG_CONFIG_HOME", dir.join(".config"))
            .output()
            .with_context(|| format!("cannot run {}", self.name()))?;
        if !output.status.success() {
            bail!(
                "{} {} exited with {}:\n{}{}",
                self.name(),
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(output)
    }
}

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

    /// `cosign sign-blob --bundle` of `file`, offline: the bundle's bytes.
    ///
    /// # Errors
    /// When cosign fails.
    pub fn sign_blob_bundle(&self, file: &Path) -> anyhow::Result<Vec<u8>> {
        let bundle = self.dir.path().join("blob.sigstore.json");
        let (key, bundle_arg, file) = (self.private_key(), bundle.display().to_string(), file.display().to_string());
        self.cosign(&[
            "sign-blob",
            "--key",
            &key.display().to_string(),
            "--signing-config",
            "offline.json",
            "--bundle",
            &bundle_arg,
            "--yes",
            &file,
        ])?;
        Ok(std::fs::read(bundle)?)
    }

    /// `cosign attest-blob --bundle` of `file`, offline: a bundle of a
    /// DSSE envelope whose in-toto statement names the file's digest.
    ///
    /// # Errors
    /// When cosign fails.
    pub fn attest_blob_bundle(&self, file: &Path) -> anyhow::Result<Vec<u8>> {
        let bundle = self.dir.path().join("attestation.sigstore.json");
        let predicate = self.dir.path().join("predicate.json");
        std::fs::write(&predicate, r#"{"provider": "wasm-ccm"}"#)?;
        let (key, bundle_arg, file) = (self.private_key(), bundle.display().to_string(), file.display().to_string());
        self.cosign(&[
            "attest-blob",
            "--key",
            &key.display().to_string(),
            "--signing-config",
            "offline.json",
            "--predicate",
            "predicate.json",
            "--type",
            "custom",
            "--bundle",
            &bundle_arg,
            "--yes",
            &file,
        ])?;
        Ok(std::fs::read(bundle)?)
    }

    /// `cosign sign-blob --output-signature` of `file` in the format
    /// earlier cosigns wrote (base64 of the signature), offline.
    ///
    /// # Errors
    /// When cosign fails.
    pub fn sign_blob_legacy(&self, file: &Path) -> anyhow::Result<Vec<u8>> {
        let signature = self.dir.path().join("blob.sig");
        let (key, signature_arg, file) =
            (self.private_key(), signature.display().to_string(), file.display().to_string());
        self.cosign(&[
            "sign-blob",
            "--key",
            &key.display().to_string(),
            "--new-bundle-format=false",
            "--tlog-upload=false",
            "--use-signing-config=false",
            "--output-signature",
            &signature_arg,
            "--yes",
            &file,
        ])?;
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
        let key = self.private_key().display().to_string();
        let mut args = vec!["sign", "--key", &key, "--allow-http-registry", "--yes"];
        if legacy {
            args.extend(["--new-bundle-format=false", "--tlog-upload=false", "--use-signing-config=false"]);
        } else {
            args.extend(["--signing-config", "offline.json"]);
        }
        args.push(image);
        self.cosign(&args)?;
        Ok(())
    }
}
