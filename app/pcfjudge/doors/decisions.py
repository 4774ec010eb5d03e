"""What each judging decision tells the metrics (position bias, overturns, agreement, keyed passes, cost), and
``judged``: the one place a front door awaits a judgment, so its time and any failure are counted for its door
(``http.error_handlers`` answers a failure with its 502/503/504). Every record names the judgment's ``Door``: its
route template, its door (listwise, pairwise, rerank, reward, chat) and mode (now, stream, job), from the judgment's
``http.door_spec.Call`` (a route's or a job's). A reward group is a listwise judgment recorded under door reward
(``listwise_recorder``)."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TypeVar

from pcfjudge.engine.chat_values import ChatResult
from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.listwise_runs import ListwiseResult
from pcfjudge.engine.pairwise_passes import PairwiseResult
from pcfjudge.judging.consensus import tops_of
from pcfjudge.judging.jury import JuryReport
from pcfjudge.reward.scoring import Recorder
from pcfjudge.telemetry import metrics as m
from pcfjudge.telemetry.metrics import Door, Metrics

R = TypeVar("R")


def record_jury(report: JuryReport | None, metrics: Metrics, model: str, cost_usd: float | None, door: Door) -> None:
    """The cost by model (a jury's by juror), each juror's outcome and the jury's agreement."""
    if report is None:
        metrics.cost(model, cost_usd, door)
        return
    stats = {"kendalls_w": report.kendalls_w, "fleiss_kappa": report.fleiss_kappa}
    m.jury(
        metrics,
        ((j.model, j.delivered, j.cost_usd) for j in report.jurors),
        {k: v for k, v in stats.items() if v is not None},
        door,
    )


def record_listwise(result: ListwiseResult, metrics: Metrics, door: Door) -> None:
    """Position bias, overturns, agreement, margin and cost of one listwise decision (of any door but pairwise)."""
    record_jury(result.jury, metrics, result.model, result.cost_usd, door)
    labels = (door.endpoint, door.name, door.mode)
    m.child(m.DECISIONS, *labels, result.mode).inc()
    if result.degraded:
        m.child(m.DEGRADED, *labels).inc()
    # How it stopped (early stops, rounds of windows) is counted as it happens, from its ``stopped`` event.
    picks: dict[int, float] = {}  # displayed position → share of this decision's top picks (one update each)
    for run in result.runs:
        judged_run = run.result
        if judged_run is None or len(run.order) < 2:  # one candidate shown: no position to be biased towards
            continue
        tops = judged_run.top if judged_run.top is not None else tops_of(judged_run.judgments)
        share, order = 1 / len(tops), run.order
        for cid in tops:
            position = order.index(cid)
            picks[position] = picks.get(position, 0.0) + share
            if run.model is not None:
                m.juror_top_pick(metrics, run.model, position, door, share)
    for position, share in picks.items():
        m.child(m.TOP_PICKS, *labels, str(position)).inc(share)
    if result.mode != "consensus":
        return
    if result.direct_winners is not None and set(result.direct_winners) != set(result.consensus.winners):
        m.child(m.OVERTURNS, *labels).inc()
    m.child(m.AGREEMENT, door.name, door.mode).observe(result.agreement)
    values = sorted((c.consensus for c in result.consensus.candidates.values()), reverse=True)
    if len(values) > 1:
        m.child(m.MARGIN, door.name, door.mode).observe(values[0] - values[1])


def record_pairwise(result: PairwiseResult, metrics: Metrics, door: Door) -> None:
    """Order consistency, keyed passes, overrides and cost of one pairwise decision."""
    record_jury(result.jury, metrics, result.model, result.cost_usd, door)
    labels = (door.endpoint, door.name, door.mode)
    m.child(m.DECISIONS, *labels, "apoc").inc()
    if result.degraded:
        m.child(m.DEGRADED, *labels).inc()
    for p in result.passes:
        if p.name != "keyed" and p.raw_verdict in ("A", "B"):
            m.child(m.TOP_PICKS, *labels, "0" if p.raw_verdict == "A" else "1").inc()
            if p.model is not None:
                m.juror_top_pick(metrics, p.model, 0 if p.raw_verdict == "A" else 1, door)
    decision, plan = result.decision, result.keyed_plan
    if decision.order_consistent is False:
        m.PAIR_INCONSISTENT.inc()
    if result.keyed_pass is not None:
        m.KEYED.labels("run").inc()
    elif plan.skipped is not None and plan.needed:
        m.KEYED.labels(f"skipped_{plan.skipped}").inc()
    if decision.override:
        m.OVERRIDES.inc()


def record_chat(result: ChatResult, metrics: Metrics, door: Door) -> None:
    """Cost, the orders' agreement and each order's first-shown pick of one chat decision (a pair's verdict
    picking the first shown counts at position 0, as a pairwise pass does)."""
    metrics.cost(result.model, result.cost_usd, door)
    labels = (door.endpoint, door.name, door.mode)
    m.child(m.DECISIONS, *labels, "chat" if result.decision is not None else "chat_passthrough").inc()
    if result.degraded:
        m.child(m.DEGRADED, *labels).inc()
    for run in result.runs:
        if isinstance(run.shown, int) and run.shown != 0:
            m.child(m.TOP_PICKS, *labels, "0" if run.shown > 0 else "1").inc()
    if result.decision is not None:
        m.child(m.AGREEMENT, door.name, door.mode).observe(result.decision.agreement)
        if result.decision.split:
            m.PAIR_INCONSISTENT.inc()


async def judged(door: Door, judgment: Awaitable[R]) -> R:
    """Await a judgment, timed for ``door``; a ``JudgingFailed`` is counted for it and raised on
    (``http.error_handlers`` answers it)."""
    started = time.perf_counter()
    try:
        result = await judgment
    except JudgingFailed as exc:
        m.child(m.FAILED, door.endpoint, door.name, door.mode, exc.kind).inc()
        raise
    # No exemplar: the request's own histogram names the request's span (a judgment the cache answered whole has
    # none of its own, and a judgment's span has ended by now); prometheus_client validates each exemplar's labels,
    # about 3 % of a warm request's instructions (docs/performance.md, "Light spans").
    m.child(m.JUDGMENT_SECONDS, door.name, door.mode).observe(time.perf_counter() - started)
    return result


def listwise_recorder(metrics: Metrics, door: Door) -> Recorder:
    """What a door below the routes (a reward group, ``reward.scoring``) awaits its listwise judgment through:
    ``judged`` and ``record_listwise`` for ``door``."""

    async def recorded(judgment: Awaitable[ListwiseResult]) -> ListwiseResult:
        result = await judged(door, judgment)
        record_listwise(result, metrics, door)
        return result

    return recorded
