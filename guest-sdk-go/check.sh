#!/usr/bin/env bash
# Checks the repository's Go modules (the SDK, its template and its upstream
# adapter, the Go fake provider, upstream's fake served through the adapter
# and the Go test guest): gofmt, go vet natively and for wasip1, and
# their native tests. Run after providers/build.sh, which installs Go and
# generates the SDK's bindings (vet skips its unsafe-pointer check on them).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export GOPROXY=off GOTOOLCHAIN=local GOFLAGS=-mod=mod

unformatted=$("$(go env GOROOT)/bin/gofmt" -l "$root/guest-sdk-go" "$root/providers/fake-go" "$root/providers/upstream-fake-go" "$root/tests/guests/hostile-go")
if [ -n "$unformatted" ]; then
    echo "check.sh: not gofmt-formatted:" >&2
    echo "$unformatted" >&2
    exit 1
fi
for module in guest-sdk-go guest-sdk-go/template guest-sdk-go/upstream providers/fake-go providers/upstream-fake-go tests/guests/hostile-go; do
    (
        cd "$root/$module"
        go vet ./...
        GOOS=wasip1 GOARCH=wasm go vet -unsafeptr=false ./...
        go test ./...
    )
done
