"""Synthetic RewardBench 2 Factuality records: a zero-download dataset for simulated runs (``--data synthetic:N``).

Each record has one correct and three wrong answers with distinct texts; only ``sim:oracle`` knows which is correct
(the harness passes the correct candidate's id), so these items exercise the method's mechanics, not a real judge.
"""

from __future__ import annotations

import random
from typing import Any

from pcfjudge_lab.eval.rewardbench2.loader import FactualityItem, rewardbench2_items

PREFIX = "synthetic:"


def records(n: int, *, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` Factuality records in RewardBench 2's format (ids 0..n-1), reproducible for a seed."""
    rng = random.Random(f"pcfjudge-synthetic:{seed}")
    out = []
    for i in range(n):
        fact = rng.randrange(10_000)
        out.append(
            {
                "id": i,
                "prompt": f"Synthetic question {i}: what is the value of fact {fact}?",
                "chosen": [f"Fact {fact} is {rng.randrange(100)} (item {i}, the correct answer)."],
                "rejected": [
                    f"Fact {fact} is {rng.randrange(100, 200)} (item {i}, wrong answer {j})." for j in range(3)
                ],
                "num_correct": 1,
                "num_incorrect": 3,
                "total_completions": 4,
                "models": ["synthetic"] * 4,
                "subset": "Factuality",
                "additional_metadata": {},
            }
        )
    return out


def parse_spec(spec: str) -> tuple[int, int]:
    """'synthetic:300' or 'synthetic:300:5' -> (n, data seed); ValueError says the expected form."""
    parts = spec.removeprefix(PREFIX).split(":")
    try:
        n, seed = int(parts[0]), int(parts[1]) if len(parts) > 1 else 7
    except (ValueError, IndexError):
        raise ValueError(f"--data {spec!r}: use synthetic:N or synthetic:N:SEED, e.g. synthetic:300") from None
    if n < 1 or len(parts) > 2:
        raise ValueError(f"--data {spec!r}: use synthetic:N or synthetic:N:SEED with N ≥ 1")
    return n, seed


def load_synthetic(spec: str, *, seed: int = 0, limit: int | None = None) -> list[FactualityItem]:
    """Items from a ``synthetic:N[:SEED]`` spec, shuffled with the harness's candidate seed like a real file."""
    n, data_seed = parse_spec(spec)
    rows = ((f"{spec} record {i}", record) for i, record in enumerate(records(n, seed=data_seed)))
    return rewardbench2_items(rows, seed=seed, limit=limit)
