"""JudgeBench pairs (paper §4.4): one frozen ``JudgeBenchPair`` per record of a JudgeBench split (JSONL or the hub).

Malformed input raises ValueError naming the file and line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcfjudge_lab.eval.data import HubData, hub_rows
from pcfjudge_lab.eval.records import check_limit, read_jsonl, str_field

_LABELS = frozenset({"A>B", "B>A", "A=B"})


@dataclass(frozen=True)
class JudgeBenchPair:
    """One JudgeBench response pair; ``original_id`` is stringified (int for MMLU-Pro, null for LiveBench)."""

    pair_id: str
    original_id: str | None
    source: str
    question: str
    response_a: str
    response_b: str
    label: str


def judgebench_pairs(rows: Iterable[tuple[str, Mapping[str, Any]]], limit: int | None = None) -> list[JudgeBenchPair]:
    """The first ``limit`` pairs of (where, record) rows (a file's lines or the hub's rows)."""
    check_limit(limit)
    pairs: list[JudgeBenchPair] = []
    if limit == 0:
        return pairs
    for where, record in rows:
        label = str_field(record, "label", where)
        if label not in _LABELS:
            raise ValueError(f"{where}: unknown label {label!r}")
        original_id = record.get("original_id")
        pairs.append(
            JudgeBenchPair(
                pair_id=str_field(record, "pair_id", where),
                original_id=None if original_id is None else str(original_id),
                source=str_field(record, "source", where),
                question=str_field(record, "question", where),
                response_a=str_field(record, "response_A", where),
                response_b=str_field(record, "response_B", where),
                label=label,
            )
        )
        if len(pairs) == limit:
            break  # stop before reading further records
    return pairs


def load_judgebench(path: Path, limit: int | None = None) -> list[JudgeBenchPair]:
    """Read the first ``limit`` pairs of a JudgeBench JSONL split (fields response_A/response_B, label)."""
    return judgebench_pairs(((f"{path}:{lineno}", record) for lineno, record in read_jsonl(path)), limit)


def load_judgebench_hub(data: HubData, limit: int | None = None) -> list[JudgeBenchPair]:
    """Like load_judgebench, from ``ScalerLab/JudgeBench`` on the Hugging Face hub (extra ``hub``) or a local copy."""
    check_limit(limit)
    return judgebench_pairs(hub_rows(data), limit)
