#!/usr/bin/env bash
# Builds WebAssembly provider components.
#
#   providers/build.sh               every provider and test guest of this repository, into
#                                    target/wasm/<crate>.wasm
#   providers/build.sh DIR...        the provider crate in each DIR (such as one written by
#                                    `wasm-ccm provider new`), into DIR/target/wasm/<crate>.wasm
#
# With rustup's wasm32-wasip2 target installed this is a plain cargo build.
# Without it, the standard library is built from source with Debian's
# rustc-web (rust-web-src carries std's source and vendored dependencies,
# wasi-libc the C library), linked by the wasm-component-ld that rustup's
# host toolchain ships; the packages are installed when missing. Every build
# shares this repository's target/guest, so the standard library is built
# once.
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

if [ $# -gt 0 ]; then
    for dir in "$@"; do
        dir=$(cd "$dir" && pwd)
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
