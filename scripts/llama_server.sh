#!/usr/bin/env bash
# The one llama.cpp build of the engine tests: from the llama.cpp sources that the llama-cpp-python sdist vendors,
# once per machine, into ~/.cache/pcfjudge, compiled portably (scripts/llama_flags.sh: no -march=native, no AMX) and
# as shared libraries: llama.cpp's own OpenAI-compatible server (llama-server; the engine tests use it for the
# json_schema dialect), llama-quantize (scripts/second_model.sh makes the juries' second model with it), and the
# libraries llama-cpp-python's server loads (scripts/llama_cpp_python.sh puts them in its package: the same build, so
# the same ABI). Prints the server binary's path.
#   bash scripts/llama_server.sh            build it if missing; print its path
#   bash scripts/llama_server.sh --path     print the path this machine's build has (or would have)
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/llama_flags.sh"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
cache="${PCFJ_ENGINE_CACHE:-$HOME/.cache/pcfjudge}/llama-cpp-$version-$LLAMA_BUILD_STAMP-shared"
bin="$cache/bin/llama-server"
if { [ -x "$bin" ] && [ -x "$cache/bin/llama-quantize" ] && [ -s "$cache/bin/libllama.so" ]; } || [ "${1:-}" = "--path" ]; then
  echo "$bin"; exit 0
fi
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work" >&2
tar xzf "$work/llama_cpp_python-$version.tar.gz" -C "$work"
src="$work/llama_cpp_python-$version/vendor/llama.cpp"
# Binaries and libraries all land in build/bin (llama.cpp's output directories) and find each other there ($ORIGIN).
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN' $LLAMA_CMAKE_FLAGS >&2
cmake --build "$work/build" --target llama-server llama-quantize mtmd -j "$(nproc)" >&2
rm -rf "$cache/bin.tmp" && mkdir -p "$cache/bin.tmp"
cp -L "$work/build/bin/llama-server" "$work/build/bin/llama-quantize" "$work/build/bin"/lib*.so* "$cache/bin.tmp/"
rm -rf "$cache/bin" && mv "$cache/bin.tmp" "$cache/bin"
echo "$bin"
