#!/usr/bin/env bash
# Installs the tools the chart and monitoring tests run, once; a second run changes nothing:
#
#   helm                       helm.sh/helm/v4/cmd/helm, built from its Go module
#   Prometheus Operator CRDs   ServiceMonitor and PrometheusRule, from the operator's Go module
#   promtool                   from Debian's prometheus package, in /usr/bin
#
# helm and the CRDs go into $WASM_CCM_CACHE/tools (default ~/.cache/wasm-ccm/tools), one
# directory per version. Prints the versions installed on stderr.
#
#   tests/tools/install-helm-promtool.sh                 install
#   tests/tools/install-helm-promtool.sh --print HELM    print where helm is (or will be)
#   tests/tools/install-helm-promtool.sh --print PROMETHEUS_OPERATOR_CRDS
set -euo pipefail

# The versions tested; README.md's ecosystem table names the same.
HELM_VERSION=v4.3.1
PROMETHEUS_OPERATOR_CRDS_VERSION=v0.85.0
tools="${WASM_CCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wasm-ccm}/tools"
helm_dir="$tools/helm-$HELM_VERSION"
crds_dir="$tools/prometheus-operator-crds-$PROMETHEUS_OPERATOR_CRDS_VERSION"

if [ "${1:-}" = --print ]; then
    case "${2:-}" in
        HELM) echo "$helm_dir/helm" ;;
        PROMETHEUS_OPERATOR_CRDS) echo "$crds_dir" ;;
        *) echo "usage: $0 --print HELM|PROMETHEUS_OPERATOR_CRDS" >&2; exit 2 ;;
    esac
    exit 0
fi

say() { echo "install-helm-promtool: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
ensure_go() {
    PATH="$PATH:/usr/local/go/bin"
    command -v go >/dev/null 2>&1 || { say "Go is needed to build helm and is not installed"; exit 1; }
    export GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED=0
}

if [ ! -x "$helm_dir/helm" ]; then
    ensure_go
    say "building helm $HELM_VERSION"
    mkdir -p "$helm_dir.partial"
    GOBIN="$helm_dir.partial" go install -trimpath \
        -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
        "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
    rm -rf "$helm_dir" && mv "$helm_dir.partial" "$helm_dir"
fi
say "helm $("$helm_dir/helm" version --template '{{.Version}}') in $helm_dir"

if [ ! -s "$crds_dir/monitoring.coreos.com_prometheusrules.yaml" ]; then
    ensure_go
    say "fetching the Prometheus Operator $PROMETHEUS_OPERATOR_CRDS_VERSION's CustomResourceDefinitions"
    source=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_CRDS_VERSION" \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
    mkdir -p "$crds_dir.partial"
    for crd in servicemonitors prometheusrules; do
        cp "$source/example/prometheus-operator-crd/monitoring.coreos.com_$crd.yaml" "$crds_dir.partial/"
    done
    rm -rf "$crds_dir" && mv "$crds_dir.partial" "$crds_dir"
fi
say "Prometheus Operator $PROMETHEUS_OPERATOR_CRDS_VERSION CRDs in $crds_dir"

if ! command -v promtool >/dev/null 2>&1; then
    say "installing promtool (Debian's prometheus)"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
say "promtool $(promtool --version 2>&1 | sed -n 's/^promtool, version \([^ ]*\).*/\1/p') in $(dirname "$(command -v promtool)")"
