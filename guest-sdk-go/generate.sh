#!/usr/bin/env bash
# Generates the Go bindings of the wasm-ccm:provider batching-cloud-provider world (the repository's
# wit/, or WIT_DIR) into internal/wit/imports and internal/wit/exports/wit_exports
# with wit-bindgen's Go generator (wit-bindgen-cli 0.63, which
# providers/build.sh installs). The generated code calls internal/cabi for the
# canonical ABI, and the hand-written packages internal/wit/exports/export_*
# for the world's exports; it builds for GOOS=wasip1 only.
set -euo pipefail

sdk=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wit=${WIT_DIR:-$sdk/../wit}
module=github.com/wasm-ccm/wasm-ccm/guest-sdk-go
out=$sdk/internal/wit
generated=("$out/imports" "$out/exports/wit_exports")

rm -rf "${generated[@]}"
if ! log=$(wit-bindgen go --format=false --pkg-name "$module/internal/wit" --out-dir "$out" \
    --world batching-cloud-provider "$wit" 2>&1); then
    echo "$log" >&2
    exit 1
fi
find "${generated[@]}" -type f \( -name '*.go' -o -name '*.s' \) -exec sed -i \
    -e "s#\"go.bytecodealliance.org/pkg/wit/#\"$module/internal/cabi/#" \
    -e '1i //go:build wasip1\n' {} +
"$(go env GOROOT)/bin/gofmt" -w "${generated[@]}"
