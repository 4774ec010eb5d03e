"""Score a JudgeBench-format judgments file: JudgeBench's two-game metric, the paper's source macro, one game.

Backs `pcfjudge eval score FILE --format json|md`; this module only computes and formats.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pcfjudge_lab.eval.accuracy import (
    JUDGEBENCH_BUCKETS,
    accuracy,
    judgebench_pair_score,
    normalize_decision,
    source_bucket,
    source_macro,
)
from pcfjudge_lab.eval.records import read_jsonl


def _decision(game: object) -> str | None:
    """A game's raw decision; a null/non-object game or a non-string decision is a failed game (None)."""
    if isinstance(game, dict):
        value = game.get("decision")
        return value if isinstance(value, str) else None
    return None


def _games(record: Mapping[str, Any]) -> list[str | None]:
    """The first two games' decisions; missing ``judgments`` or missing games count as failed games."""
    games = record.get("judgments")
    listed = list(games[:2]) if isinstance(games, list) else []
    listed += [None] * (2 - len(listed))
    return [_decision(game) for game in listed]


def _pct(values: Sequence[bool]) -> float | None:
    return round(accuracy(values), 2) if values else None


def score_judgments_file(path: Path) -> dict[str, object]:
    """Score records with ``label``, ``source`` and two ``judgments`` games (the 2nd judged with A/B swapped).

    Returns {"n", "judgebench": {"overall", four buckets}, "source_macro", "single_game"}; percentages are
    rounded to 2 decimals and None where there are no pairs. ``source_macro`` averages two-game accuracy over
    raw ``source`` values (the paper's figure); ``single_game`` checks only the first game against the label.
    """
    by_bucket: dict[str, list[bool]] = {bucket: [] for bucket in JUDGEBENCH_BUCKETS}
    by_source: dict[str, list[bool]] = {}
    overall: list[bool] = []
    single: list[bool] = []
    for lineno, record in read_jsonl(path):
        label, source = record.get("label"), record.get("source")
        if not isinstance(label, str) or not isinstance(source, str):
            raise ValueError(f"{path}:{lineno}: 'label' and 'source' must be strings")
        games = _games(record)
        try:
            correct = judgebench_pair_score(label, games)
            bucket = source_bucket(source)
        except ValueError as exc:
            raise ValueError(f"{path}:{lineno}: {exc}") from exc
        overall.append(correct)
        by_bucket[bucket].append(correct)
        by_source.setdefault(source, []).append(correct)
        single.append(normalize_decision(games[0]) == normalize_decision(label))
    judgebench: dict[str, float | None] = {"overall": _pct(overall)}
    judgebench.update({bucket: _pct(values) for bucket, values in by_bucket.items()})
    return {
        "n": len(overall),
        "judgebench": judgebench,
        "source_macro": round(source_macro(by_source), 2) if overall else None,
        "single_game": _pct(single),
    }


def _cell(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def format_markdown(result: Mapping[str, object]) -> str:
    """A two-column markdown table of a score_judgments_file result (None shown as "n/a")."""
    judgebench = result.get("judgebench")
    buckets: Mapping[str, object] = judgebench if isinstance(judgebench, Mapping) else {}
    rows: list[tuple[str, object]] = [("pairs (n)", result.get("n"))]
    rows.append(("JudgeBench overall (%)", buckets.get("overall")))
    rows += [(f"JudgeBench {bucket} (%)", buckets.get(bucket)) for bucket in JUDGEBENCH_BUCKETS]
    rows.append(("source macro (%)", result.get("source_macro")))
    rows.append(("single game (%)", result.get("single_game")))
    lines = ["| metric | value |", "|---|---:|"]
    lines += [f"| {name} | {_cell(value)} |" for name, value in rows]
    return "\n".join(lines) + "\n"
