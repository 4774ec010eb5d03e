#!/usr/bin/env bash
# Build llama.cpp's own OpenAI-compatible server (llama-server) from the llama.cpp sources that the
# llama-cpp-python sdist vendors, once per machine, into ~/.cache/pcfjudge (the engine tests use it for the
# json_schema dialect; llama-cpp-python's server speaks json_object + schema), compiled portably
# (scripts/llama_flags.sh: no -march=native, no AMX), with llama-quantize beside it (scripts/second_model.sh makes
# the juries' second engine model with it). Prints the server binary's path.
#   bash scripts/llama_server.sh            build it if missing; print its path
#   bash scripts/llama_server.sh --path     print the path this machine's build has (or would have)
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/llama_flags.sh"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
cache="${PCFJ_ENGINE_CACHE:-$HOME/.cache/pcfjudge}/llama-server-$version-$LLAMA_BUILD_STAMP"
bin="$cache/bin/llama-server"
if { [ -x "$bin" ] && [ -x "$cache/bin/llama-quantize" ]; } || [ "${1:-}" = "--path" ]; then echo "$bin"; exit 0; fi
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work" >&2
tar xzf "$work/llama_cpp_python-$version.tar.gz" -C "$work"
src="$work/llama_cpp_python-$version/vendor/llama.cpp"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON $LLAMA_CMAKE_FLAGS >&2
cmake --build "$work/build" --target llama-server llama-quantize -j "$(nproc)" >&2
mkdir -p "$cache/bin"
cp "$work/build/bin/llama-quantize" "$cache/bin/llama-quantize.tmp" && mv "$cache/bin/llama-quantize.tmp" "$cache/bin/llama-quantize"
cp "$work/build/bin/llama-server" "$bin.tmp" && mv "$bin.tmp" "$bin"
echo "$bin"
