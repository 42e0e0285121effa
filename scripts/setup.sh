#!/usr/bin/env bash
# Installs kern's build and test dependencies from Debian 12's packages and
# npm (the llama.cpp oracle). Idempotent: safe to run twice.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

pkgs=(meson ninja-build pkg-config g++ rapidjson-dev libcli11-dev libspdlog-dev libfmt-dev
      catch2 libflatbuffers-dev flatbuffers-compiler libssl-dev libpcre2-dev python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
