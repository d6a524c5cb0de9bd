#!/usr/bin/env bash
# Installs every system package Ember needs to build and test (Debian 12).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS=(cmake ninja-build g++ pkg-config ccache
      llvm-19-dev libasmjit-dev libxsimd-dev libtbb-dev catch2
      nlohmann-json3-dev libcli11-dev libxxhash-dev libeigen3-dev
      libzstd-dev zlib1g-dev libedit-dev libxml2-dev libffi-dev libcurl4-openssl-dev
      python3-venv)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
