"""Adaptive K on RewardBench 2 (issue 15): fixed K against ``"k": "auto"`` (certified, confident), from the run log.

The log holds every run of fixed K = k_max, and an auto request makes a prefix of exactly those runs (the same
schedule, so the same cache entries). Driving the service's own ``judging.waves.Waves`` over the logged runs therefore
gives the runs, winners and stop reasons the service gives, at no cost. Per protocol: top-1 accuracy, judge calls per
item (runs made; a failed run counts), items whose winner set is the one of K = k_max, and why auto stopped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pcfjudge.surface import Adaptive, StopRule, Waves
from pcfjudge.surface import max_k as schedule_cap

from pcfjudge_lab.eval.accuracy import accuracy, top1_score
from pcfjudge_lab.eval.report_fmt import delta, pct, table
from pcfjudge_lab.eval.rewardbench2.analysis import PROPOSED, ItemRuns, winners

RULES: tuple[StopRule, ...] = ("certified", "confident")


def replay(item: ItemRuns, rule: StopRule, *, k_min: int, k_max: int, executions: int) -> tuple[list[str], int, str]:
    """What ``"k": "auto"`` with ``rule`` returns for the item: winners, runs made, why it stopped."""
    k = min(k_max, schedule_cap(len(item.ids)))
    waves = Waves(item.ids, executions, k, PROPOSED, auto=Adaptive(k_min, rule))
    while wave := waves.next():
        for position in wave:
            waves.record(position, item.consensus.get(position), call=True)
    consensus = waves.progress().consensus
    return (consensus.winners if consensus is not None else []), waves.made, str(waves.stopped)


def _row(
    name: str,
    picks: Sequence[list[str]],
    calls: Sequence[int],
    reference: Sequence[list[str]],
    items: Sequence[ItemRuns],
) -> dict[str, Any]:
    scores = [top1_score(w, item.correct) for w, item in zip(picks, items, strict=True)]
    same = sum(set(w) == set(r) for w, r in zip(picks, reference, strict=True))
    return {
        "protocol": name,
        "accuracy": accuracy(scores),
        "calls_per_item": sum(calls) / len(calls),
        "same_as_k_max": same,
    }


def compare(items: Sequence[ItemRuns], *, ks: Sequence[int], k_min: int, k_max: int, executions: int) -> dict[str, Any]:
    """Fixed K ∈ ``ks`` and both auto modes (k_min..k_max) over ``executions`` executions, side by side."""
    full = [winners(item, item.pcf(k_max, executions)) for item in items]
    rows = []
    for k in ks:
        picks = [winners(item, item.pcf(k, executions)) for item in items]
        calls = [min(k, schedule_cap(len(item.ids))) * executions for item in items]
        rows.append(_row(f"K={k}", picks, calls, full, items))
    stops: dict[str, dict[str, int]] = {}
    for rule in RULES:
        runs = [replay(item, rule, k_min=k_min, k_max=k_max, executions=executions) for item in items]
        rows.append(_row(f"auto {rule}", [r[0] for r in runs], [r[1] for r in runs], full, items))
        stops[rule] = dict(Counter(r[2] for r in runs))
    base = next(row for row in rows if row["protocol"] == f"K={k_max}")
    for row in rows:
        row["calls_vs_k_max"] = row["calls_per_item"] / base["calls_per_item"]
        row["delta_pp_vs_k_max"] = row["accuracy"] - base["accuracy"]
    return {"executions": executions, "k_min": k_min, "k_max": k_max, "n": len(items), "rows": rows, "stopped": stops}


def render(tables: Sequence[Mapping[str, Any]], model: str) -> list[str]:
    """The adaptive-K section (not one of the paper's tables, whose Table 4 is JudgeBench): one block per number of
    executions."""
    out: list[str] = []
    for t in tables:
        k_max, n = t["k_max"], t["n"]
        out += [
            f"## Adaptive K, {t['executions']} execution(s) (auto: k_min={t['k_min']}, k_max={k_max}; N = {n})",
            "",
        ]
        rows = [
            [
                model,
                row["protocol"],
                pct(row["accuracy"]),
                delta(row["delta_pp_vs_k_max"]),
                f"{row['calls_per_item']:.2f}",
                f"{100 * row['calls_vs_k_max']:.1f}%",
                f"{row['same_as_k_max']} / {n}",
            ]
            for row in t["rows"]
        ]
        out += table(
            ["Model", "Protocol", "Top-1 (%)", f"Δ vs K={k_max} (pp)", "Calls/item", f"vs K={k_max}", "Same winners"],
            rows,
            "ll" + "r" * 5,
        )
        reasons = "; ".join(
            f"{rule}: " + ", ".join(f"{count} {why}" for why, count in sorted(stops.items()))
            for rule, stops in t["stopped"].items()
        )
        out += ["", f"Why auto stopped (items): {reasons}.", ""]
    return out


Point = tuple[str, float, float]  # label, calls per item, accuracy


def figure_series(tables: Sequence[Mapping[str, Any]]) -> tuple[list[tuple[str, list[Point]]], list[Point]]:
    """For ``figures.accuracy_vs_calls``: a fixed-K line per number of executions, and the auto points."""
    lines: list[tuple[str, list[Point]]] = []
    marks: list[Point] = []
    for t in tables:
        suffix = f" ×{t['executions']}" if t["executions"] > 1 else ""
        points = [(str(row["protocol"]) + suffix, row["calls_per_item"], row["accuracy"]) for row in t["rows"]]
        lines.append((f"fixed K{suffix}", [p for p in points if p[0].startswith("K=")]))
        marks += [p for p in points if not p[0].startswith("K=")]
    return lines, marks
