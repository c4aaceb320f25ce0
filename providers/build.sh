#!/usr/bin/env bash
# Builds every provider and test guest into a WebAssembly component, written
# to target/wasm/<crate>.wasm.
#
# With rustup's wasm32-wasip2 target installed this is a plain cargo build.
# Without it, the standard library is built from source with Debian's
# rustc-web (rust-web-src carries std's source and vendored dependencies,
# wasi-libc the C library), linked by the wasm-component-ld that rustup's
# host toolchain ships; the packages are installed when missing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
guests=(provider-fake guest-hostile guest-other-world guest-sloppy)
[ -d "$root/providers/aws" ] && guests+=(provider-aws)
target=wasm32-wasip2
target_dir="$root/target/guest"
out="$root/target/wasm"

packages=()
for guest in "${guests[@]}"; do packages+=(-p "$guest"); done

if rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    cargo build --locked --profile guest --target "$target" --target-dir "$target_dir" "${packages[@]}"
else
    if [ ! -x /usr/bin/cargo ] || [ ! -d /usr/lib/rustlib/src/rust/library ] || [ ! -d /usr/lib/wasm32-wasi ]; then
        echo "build.sh: installing Debian's rustc-web, rust-web-src and wasi-libc" >&2
        sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
        sudo_if_needed apt-get update -qq
        DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq rustc-web cargo-web rust-web-src wasi-libc >/dev/null
    fi
    host=$(rustc -vV | sed -n 's/^host: //p')
    bin="$(rustc --print sysroot)/lib/rustlib/$host/bin"
    CARGO_TARGET_WASM32_WASIP2_LINKER="$bin/wasm-component-ld" \
    RUSTFLAGS="-Clink-arg=--wasm-ld-path=$bin/gcc-ld/wasm-ld -Clink-self-contained=no -L/usr/lib/wasm32-wasi" \
    RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 /usr/bin/cargo build --locked --profile guest --target "$target" --target-dir "$target_dir" \
        -Zbuild-std=std,panic_abort "${packages[@]}"
fi

mkdir -p "$out"
for guest in "${guests[@]}"; do
    file="${guest//-/_}.wasm"
    cp "$target_dir/$target/guest/$file" "$out/$file"
    echo "built $out/$file ($(stat -c %s "$out/$file") bytes)"
done
