"""Synthetic RewardBench 2 files for the eval-harness tests (records from ``pcfjudge_lab.eval.rewardbench2.synthetic``)."""

from __future__ import annotations

import json
from pathlib import Path

from pcfjudge_lab.eval.rewardbench2.synthetic import records


def write_rewardbench2(path: Path, n: int, *, seed: int = 7) -> Path:
    """``n`` Factuality records plus one non-Factuality record the loader must skip."""
    other = {"id": 0, "prompt": "Write a poem.", "chosen": ["a"], "rejected": ["b", "c", "d"], "subset": "Focus"}
    path.write_text("".join(json.dumps(r) + "\n" for r in [*records(n, seed=seed), other]), encoding="utf-8")
    return path
