#!/usr/bin/env bash
# Install llama-cpp-python[server] into a venv, compiled portably (scripts/llama_flags.sh), once per machine.
#   bash scripts/llama_cpp_python.sh [VENV]        (default .venv)
# pip's wheel cache is keyed by the sdist, not by CMAKE_ARGS: a machine that once built the native wheel would keep
# reinstalling it. So the wheel is built here with pip's cache off into a directory named by the flags' hash, and the
# venv records which build it has (VENV/.llama-cpp-python-build): another build is replaced, the same one skipped.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/llama_flags.sh"
venv="${1:-.venv}"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
wheels="${PCFJ_ENGINE_CACHE:-$HOME/.cache/pcfjudge}/wheels/llama-cpp-python-$version-$LLAMA_BUILD_STAMP"
record="$venv/.llama-cpp-python-build"
if [ "$(cat "$record" 2>/dev/null)" = "$version-$LLAMA_BUILD_STAMP" ] && "$venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
  exit 0
fi
if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "compiling llama-cpp-python $version (portable build $LLAMA_BUILD_STAMP; minutes on 2 cores)" >&2
  rm -rf "$wheels.tmp" && mkdir -p "$wheels.tmp"
  CMAKE_ARGS="$LLAMA_CMAKE_FLAGS" "$venv/bin/pip" wheel -q --disable-pip-version-check --no-cache-dir --no-deps \
    --no-binary llama-cpp-python "llama-cpp-python==$version" -w "$wheels.tmp" >&2
  rm -rf "$wheels" && mv "$wheels.tmp" "$wheels"
fi
wheel="$(ls "$wheels"/llama_cpp_python-*.whl | head -n 1)"
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
"$venv/bin/pip" install -q --disable-pip-version-check "llama-cpp-python[server] @ file://$wheel"
echo "$version-$LLAMA_BUILD_STAMP" > "$record"
