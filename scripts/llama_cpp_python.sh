#!/usr/bin/env bash
# Install llama-cpp-python[server] into a venv without compiling llama.cpp a second time: its Python package is built
# with LLAMA_BUILD=OFF (no native code), and its lib/ gets the shared libraries of the one portable build
# (scripts/llama_server.sh, from the very sources this sdist vendors). The venv records which build it has
# (VENV/.llama-cpp-python-build): another build is replaced, the same one skipped.
#   bash scripts/llama_cpp_python.sh [VENV]        (default .venv)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/llama_flags.sh"
venv="${1:-.venv}"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
server="$(bash "$here/llama_server.sh")"  # builds the libraries if this machine has not
libs="$(dirname "$server")"
record="$venv/.llama-cpp-python-build"
if [ "$(cat "$record" 2>/dev/null)" = "$version-$LLAMA_BUILD_STAMP-shared" ] && "$venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
  exit 0
fi
wheels="${PCFJ_ENGINE_CACHE:-$HOME/.cache/pcfjudge}/wheels/llama-cpp-python-$version-nobuild"
if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  rm -rf "$wheels.tmp" && mkdir -p "$wheels.tmp"
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" "$venv/bin/pip" wheel -q --disable-pip-version-check --no-cache-dir \
    --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" -w "$wheels.tmp" >&2
  rm -rf "$wheels" && mv "$wheels.tmp" "$wheels"
fi
wheel="$(ls "$wheels"/llama_cpp_python-*.whl | head -n 1)"
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
"$venv/bin/pip" install -q --disable-pip-version-check "llama-cpp-python[server] @ file://$wheel"
package="$("$venv/bin/python" -c 'import importlib.util as u; print(next(iter(u.find_spec("llama_cpp").submodule_search_locations)))')"
mkdir -p "$package/lib"
cp "$libs"/lib*.so* "$package/lib/"
echo "$version-$LLAMA_BUILD_STAMP-shared" > "$record"
