#!/usr/bin/env bash
# Installs the third-party servers the integration tests start on loopback:
# moto_server, an AWS API emulator, from PyPI; docker-registry, an OCI
# distribution registry (CNCF Distribution), from Debian; the tools the deploy/
# tests run; and the clients the interoperability tests run (below). The
# control plane is tests/envtest/control-plane/build.sh's.
set -euo pipefail

if ! command -v moto_server >/dev/null 2>&1; then
    echo "setup.sh: installing moto[server]" >&2
    python3 -m pip install --quiet --disable-pip-version-check "moto[server]>=5,<6"
fi

packages=()
command -v docker-registry >/dev/null 2>&1 || packages+=(docker-registry)
if [ ${#packages[@]} -gt 0 ]; then
    echo "setup.sh: installing ${packages[*]}" >&2
    as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${packages[@]}" >/dev/null
fi

# helm, the Prometheus Operator's CRDs and promtool, for the chart and
# monitoring tests.
"$(dirname "${BASH_SOURCE[0]}")/tools/install-helm-promtool.sh"
# --- Signing and OCI clients: cosign v3, oras and wkg ---------------------------------------
# Each at the version tests/tools/install-signing-tools.sh pins, built once into
# ~/.cache/wasm-ccm/tools/<name>-<version>/ (cosign and oras from the Go module proxy, wkg
# with cargo install); the script prints their versions.
"$(dirname "${BASH_SOURCE[0]}")/tools/install-signing-tools.sh"
