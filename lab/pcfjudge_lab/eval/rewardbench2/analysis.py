"""RewardBench 2 numbers (paper Tables 1–3, Figure 1) computed from run-log lines alone: no I/O, no calls.

Every protocol is re-aggregated with ``pcfjudge.judging.consensus`` from the logged per-run judgments:
  direct                 run 0 of execution 0 of the PCFJudge request (canonical order, K=1)
  PCFJudge at K          the first K runs of execution 0 (the schedule's prefix property)
  repeated canonical, K  the first K runs of the repeated-canonical request
  weight presets         PCFJudge at max K, execution 0, re-weighted (Table 3)
  final (Table 1)        all E executions at max K, consensus averaged over executions
Top-1 credit is 1/|winners| when the correct candidate is among tied winners (so ties are never broken silently).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from pcfjudge.surface import RunJudgments
from pcfjudge.surface import consensus as cons
from pcfjudge.surface import max_k as schedule_cap

from pcfjudge_lab.eval.accuracy import accuracy, paired_counts, sign_test, top1_score
from pcfjudge_lab.eval.runlog import judgments_from_json, latest_success

TIE_RULE = "a tied top set scores 1/|winners| when it contains the correct candidate, else 0"
PROPOSED = cons.PRESETS["proposed"]
Pick = Callable[["ItemRuns"], list[list[RunJudgments]]]


class Scored(Protocol):
    """What the tables read of one item: its correct candidate and the winners of a protocol (``pick``) under a
    weight preset. ``ItemRuns`` is one judge's item; a jury's item (``rewardbench2.jury_report``) pools its jurors'."""

    @property
    def correct(self) -> str: ...

    @property
    def failed_runs(self) -> int: ...

    def winners_by(self, pick: Pick, weights: cons.Weights) -> list[str]: ...


@dataclass
class ItemRuns:
    """One item's logged runs: PCFJudge runs by (execution, index), repeated-canonical runs by index."""

    item: str
    correct: str
    ids: list[str]
    consensus: dict[tuple[int, int], RunJudgments | None] = field(default_factory=dict)
    repeated: dict[int, RunJudgments | None] = field(default_factory=dict)

    def pcf(self, k: int, executions: int = 1) -> list[list[RunJudgments]]:
        return [_ok(self.consensus.get((e, r)) for r in range(k)) for e in range(executions)]

    def rep(self, k: int) -> list[list[RunJudgments]]:
        return [_ok(self.repeated.get(r) for r in range(k))]

    @property
    def failed_runs(self) -> int:
        return sum(1 for run in [*self.consensus.values(), *self.repeated.values()] if run is None)

    def winners_by(self, pick: Pick, weights: cons.Weights) -> list[str]:
        return winners(self, pick(self), weights)


def _ok(runs: Iterable[RunJudgments | None]) -> list[RunJudgments]:
    return [run for run in runs if run is not None]


def gather(
    lines: Sequence[Mapping[str, Any]], *, max_k: int, executions: int, item_ids: Sequence[str] | None = None
) -> tuple[list[ItemRuns], list[str]]:
    """Items whose every planned run has a logged line (success or failure), and the ids of incomplete items."""
    by_item: dict[str, list[Mapping[str, Any]]] = {}
    for key, line in latest_success(lines).items():
        by_item.setdefault(key[0], []).append(line)
    wanted = list(item_ids) if item_ids is not None else list(by_item)
    items: list[ItemRuns] = []
    incomplete: list[str] = []
    for item_id in wanted:
        runs = _item_runs(item_id, by_item.get(item_id, []), max_k, executions)
        if runs is None:
            incomplete.append(item_id)
        else:
            items.append(runs)
    return items, incomplete


def _item_runs(item_id: str, lines: list[Mapping[str, Any]], max_k: int, executions: int) -> ItemRuns | None:
    canonical = next(
        (x for x in lines if x["protocol"] == "consensus" and x["execution"] == 0 and x["index"] == 0), None
    )
    if canonical is None:
        return None
    ids = [str(cid) for cid in canonical["order"]]
    item = ItemRuns(item_id, str(canonical["correct"]), ids)
    for line in lines:
        run = judgments_from_json(line["judgments"], line.get("rank_source")) if line.get("error") is None else None
        if line["protocol"] == "consensus":
            item.consensus[(int(line["execution"]), int(line["index"]))] = run
        elif line["protocol"] == "repeated_canonical" and line["execution"] == 0:
            item.repeated[int(line["index"])] = run
    k_cap = min(max_k, schedule_cap(len(ids)))
    complete = all((e, r) in item.consensus for e in range(executions) for r in range(k_cap))
    return item if complete and all(r in item.repeated for r in range(max_k)) else None


def winners(item: ItemRuns, runs: list[list[RunJudgments]], weights: cons.Weights = PROPOSED) -> list[str]:
    """Consensus winners over executions' successful runs; no successful run at all gives no winner."""
    executions = [r for r in runs if r]
    return cons.aggregate(item.ids, executions, weights).winners if executions else []


def _scores(items: Sequence[Scored], pick: Pick, weights: cons.Weights = PROPOSED) -> list[float]:
    return [top1_score(item.winners_by(pick, weights), item.correct) for item in items]


def _vs_direct(direct: list[float], method: list[float]) -> dict[str, float | int]:
    counts = paired_counts(direct, method)
    return {
        "accuracy": accuracy(method),
        "delta_pp": accuracy(method) - accuracy(direct),
        "improved": counts.improved,
        "regressed": counts.regressed,
        "unchanged": counts.unchanged,
        "sign_test_p": sign_test(counts.improved, counts.regressed),
    }


def analyse(items: Sequence[Scored], *, ks: Sequence[int], max_k: int, executions: int) -> dict[str, Any]:
    """All table numbers (percentages unrounded) for complete items; raises ValueError when there are none."""
    if not items:
        raise ValueError("no complete items in the run log to analyse")
    direct = _scores(items, lambda it: it.pcf(1))
    final_scores = _scores(items, lambda it: it.pcf(max_k, executions))
    final = _vs_direct(direct, final_scores) | {"k": max_k, "executions": executions}
    final["mean_winners"] = _mean_winners(items, lambda it: it.pcf(max_k, executions))
    curve_k = list(range(1, max_k + 1))
    pcf_by_k = {k: _scores(items, partial(ItemRuns.pcf, k=k)) for k in curve_k}
    rep_by_k = {k: _scores(items, partial(ItemRuns.rep, k=k)) for k in curve_k}
    return {
        "n": len(items),
        "direct": {"accuracy": accuracy(direct), "mean_winners": _mean_winners(items, lambda it: it.pcf(1))},
        "final": final,
        "diagnostic": {
            "pcfjudge": {str(k): _vs_direct(direct, pcf_by_k[k]) for k in ks},
            "repeated_canonical": {str(k): _vs_direct(direct, rep_by_k[k]) for k in ks},
        },
        "k_curve": {
            "k": curve_k,
            "pcfjudge": [accuracy(pcf_by_k[k]) for k in curve_k],
            "repeated_canonical": [accuracy(rep_by_k[k]) for k in curve_k],
        },
        "weights": {
            name: {"weights": w.as_dict()} | _vs_direct(direct, _scores(items, lambda it: it.pcf(max_k), w))
            for name, w in cons.PRESETS.items()
        },
        "failed_runs": sum(item.failed_runs for item in items),
    }


def _mean_winners(items: Sequence[Scored], pick: Pick) -> float:
    sizes = [len(item.winners_by(pick, PROPOSED)) for item in items]
    return sum(sizes) / len(sizes)
