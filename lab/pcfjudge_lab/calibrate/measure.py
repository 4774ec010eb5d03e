"""Judge the pinned slice with one model through the service's judging path and make its ``Reliability`` record.

Every item is one PCFJudge request (mode consensus, K permutations, one execution, the service's listwise prompt
style) judged by ``Judge.unguarded()`` with the cache bypassed: a calibration measures the model as it answers now,
never answers cached from an earlier run. Per item:
  * correct: the consensus has exactly one winner and it is the gold answer (a tie among winners counts as wrong);
  * order-consistent: every successful run has the same top set (candidates within 0.5 of the run's top score);
  * per successful run, whether its top choice (the candidate it ranked first, when it ranked one alone) was the
    candidate shown first.
An item whose judgment failed (below quorum) counts as wrong and inconsistent and adds no runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pcfjudge.surface import (
    Judge,
    JudgingFailed,
    ListwiseResult,
    ListwiseTask,
    PromptStyle,
    Reliability,
    RunJudgments,
    Watch,
    listwise_version,
)
from pcfjudge.surface import consensus as cons

from pcfjudge_lab.calibrate.pinned import SCHEDULE_SEED, Item, PinnedSlice

BATCH = Watch(priority="background")
"""A calibration's calls take the backend slots direct requests leave (``backends.slots``)."""
ORACLE = "sim:oracle"  # the simulated judge that is told the gold answer (as the eval harness tells it)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one item's judgment says about the model."""

    correct: bool
    consistent: bool
    runs: int  # successful runs
    first_wins: int  # of them, those whose top choice was shown first
    error: str | None = None  # the failure, when the judgment failed


def top_choice(run: RunJudgments) -> str | None:
    """The candidate the run ranked first, when it ranked one candidate first alone."""
    best = min(j.rank for j in run.judgments.values())
    firsts = [cid for cid, j in run.judgments.items() if j.rank == best]
    return firsts[0] if len(firsts) == 1 else None


def outcome(result: ListwiseResult, gold: str) -> Outcome:
    ok = [r for r in result.runs if r.result is not None]
    tops = {frozenset(cons.top_set(r.result)) for r in ok if r.result is not None}
    first_wins = sum(1 for r in ok if r.result is not None and r.order and top_choice(r.result) == r.order[0])
    return Outcome(result.consensus.winners == [gold], len(tops) == 1, len(ok), first_wins)


def task_for(item: Item, model: str, k: int, style: PromptStyle) -> ListwiseTask:
    return ListwiseTask(
        question=item.question,
        ids=list(item.ids),
        texts=list(item.texts),
        k=k,
        mode="consensus",
        seed=SCHEDULE_SEED,
        oracle_best=item.gold if model == ORACLE else None,
        cache_mode="bypass",
        model=model,
        style=style,
    )


async def judge_items(
    judge: Judge, model: str, pinned: PinnedSlice, style: PromptStyle, concurrency: int
) -> list[Outcome]:
    """Every item's outcome, in the slice's order, at most ``concurrency`` items at a time."""
    limit = asyncio.Semaphore(concurrency)

    async def one(item: Item) -> Outcome:
        async with limit:
            try:
                result = await judge.listwise(task_for(item, model, pinned.k, style), BATCH)
            except JudgingFailed as exc:
                return Outcome(False, False, 0, 0, exc.detail)
            return outcome(result, item.gold)

    return list(await asyncio.gather(*(one(item) for item in pinned.items)))


def record(model: str, pinned: PinnedSlice, style: PromptStyle, outcomes: Sequence[Outcome]) -> Reliability:
    """The model's record on the slice (``measured_at`` now)."""
    n = len(outcomes)
    runs = sum(o.runs for o in outcomes)
    wins = sum(o.first_wins for o in outcomes)
    return Reliability(
        model=model,
        prompt_version=listwise_version(None, style),
        slice=pinned.name,
        items=n,
        correct=sum(o.correct for o in outcomes),
        order_consistency=round(sum(o.consistent for o in outcomes) / n, 6) if n else 0.0,
        first_position_win_rate=round(wins / runs, 6) if runs else 0.0,
        runs=runs,
        first_position_wins=wins,
        errors=tuple(0 if o.correct else 1 for o in outcomes),
        measured_at=round(time.time(), 3),
        k=pinned.k,
    )
