#!/usr/bin/env bash
# Installs the third-party servers the integration tests start on loopback:
# moto_server, an AWS API emulator, from PyPI.
set -euo pipefail

if ! command -v moto_server >/dev/null 2>&1; then
    echo "setup.sh: installing moto[server]" >&2
    python3 -m pip install --quiet --disable-pip-version-check "moto[server]>=5,<6"
fi
