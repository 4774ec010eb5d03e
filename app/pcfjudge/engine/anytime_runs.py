"""Anytime judging's bookkeeping for the judges (docs/deadlines.md, docs/streaming.md): which runs the caller's
deadline cut, what an answer then needs, the 504 saying how far it got, whether the runs cut could have changed the
winners, and the event a stream sends for a finished run."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.progress import DEADLINE_KIND
from pcfjudge.engine.runner import CallOutcome
from pcfjudge.judging import adaptive, jury
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import RunJudgments, RunRecord


def finished(
    records: list[RunRecord], outcomes: list[CallOutcome]
) -> tuple[list[RunRecord], list[CallOutcome], list[RunRecord]]:
    """The runs that finished (succeeded or failed) and those the caller's deadline cut."""
    keep = [(r, o) for r, o in zip(records, outcomes, strict=True) if o.error != DEADLINE_KIND]
    cut = [r for r, o in zip(records, outcomes, strict=True) if o.error == DEADLINE_KIND]
    return [r for r, _ in keep], [o for _, o in keep], cut


def needed_ok(made: int, quorum: float | None, cut: Sequence[object], planned: int, min_runs: int) -> int:
    """Successful runs an answer needs: the quorum of the runs made; cut by the caller's deadline, also at least
    ``min_runs`` (PCFJ_DEADLINE_MIN_RUNS; fewer when fewer were planned)."""
    needed = (made // 2 + 1 if quorum is None else max(1, math.ceil(quorum * made - 1e-9))) if made else 1
    return max(needed, min(min_runs, planned)) if cut else needed


def deadline_failed(
    ok: int, planned: int, needed: int, failed: list[CallOutcome], runs: list[RunRecord]
) -> JudgingFailed:
    """504: the caller's deadline came before enough runs finished; the detail says how far it got."""
    detail = (
        f"deadline: {ok} of {planned} runs succeeded by the deadline (an answer needs {needed}; "
        f"{len(failed)} failed); the runs still in flight finish into the cache, so a retry with a later deadline "
        "starts from them"
    )
    return JudgingFailed("backend_timeout", detail, None, runs)


def certified_despite(
    ids: list[str], executions: int, weights: cons.Weights, records: list[RunRecord], cut: list[RunRecord]
) -> bool:
    """Would the runs the deadline cut have changed the winners whatever they said? (adaptive K's certificate)"""
    ok: list[list[RunJudgments]] = [[] for _ in range(executions)]
    for r in records:
        if r.result is not None:
            ok[r.execution].append(r.result)
    left = [sum(1 for r in cut if r.execution == e) for e in range(executions)]
    return adaptive.certified(adaptive.progress(ids, ok, left, weights))


def run_event(
    ids: list[str],
    weights: cons.Weights,
    record: RunRecord,
    done: list[RunRecord],
    total: int,
    shares: Sequence[float] | None = None,
) -> dict[str, object]:
    """One finished run and the consensus so far: the mean over executions of the successful runs so far (a jury's
    executions are its jurors, pooled with their weights ``shares``)."""
    executions = sorted({r.execution for r in done})
    ok = [[r.result for r in done if r.execution == e and r.result is not None] for e in executions]
    if shares is None:
        so_far = cons.aggregate(ids, ok, weights) if any(ok) else None
    else:
        pairs = [
            (cons.aggregate(ids, [runs], weights), shares[e]) for e, runs in zip(executions, ok, strict=True) if runs
        ]
        so_far = jury.pool_listwise(ids, [c for c, _ in pairs], [w for _, w in pairs]) if pairs else None
    return run_fields(record) | {
        "runs_done": len(done),
        "runs_planned": total,
        "winners": so_far.winners if so_far else None,
        "ranking": so_far.ranking if so_far else None,
        "consensus": {cid: round(c.consensus, 4) for cid, c in so_far.candidates.items()} if so_far else None,
    }


def run_fields(record: RunRecord) -> dict[str, object]:
    """A finished run's own fields in its event (docs/streaming.md)."""
    result = record.result
    return {
        "execution": record.execution,
        "index": record.index,
        "order": record.order,
        "model": record.model,
        "cached": record.cached,
        "error": record.error,
        "top_set": cons.top_set(result) if result is not None else None,
        "scores": {cid: j.score for cid, j in result.judgments.items()} if result is not None else None,
    }
