"""Synthetic benchmark files for the eval-harness tests (RewardBench 2 and JudgeBench record formats)."""

from __future__ import annotations

import json
import random
from pathlib import Path


def write_rewardbench2(path: Path, n: int, *, seed: int = 7) -> Path:
    """``n`` Factuality records (1 chosen, 3 rejected, distinct texts) plus one non-Factuality record to skip."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            fact = rng.randrange(10_000)
            record = {
                "id": i,
                "prompt": f"Synthetic question {i}: what is fact {fact}?",
                "chosen": [f"Fact {fact} is {rng.randrange(100)} (item {i}, correct)."],
                "rejected": [f"Fact {fact} is {rng.randrange(100, 200)} (item {i}, wrong {j})." for j in range(3)],
                "num_correct": 1,
                "num_incorrect": 3,
                "total_completions": 4,
                "models": ["m1", "m2", "m3", "m4"],
                "subset": "Factuality",
                "additional_metadata": {},
            }
            handle.write(json.dumps(record) + "\n")
        other = {"id": 0, "prompt": "Write a poem.", "chosen": ["a"], "rejected": ["b", "c", "d"], "subset": "Focus"}
        handle.write(json.dumps(other) + "\n")
    return path
