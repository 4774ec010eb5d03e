"""What each judging decision tells the metrics (position bias, overturns, agreement, keyed passes, cost), and
``judged``: the one place a front door awaits a judgment, so a failure is counted for its endpoint (``api.error_handlers``
answers it with its 502/503/504)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.listwise_runs import ListwiseResult
from pcfjudge.engine.pairwise_passes import PairwiseResult
from pcfjudge.judging.consensus import top_set
from pcfjudge.judging.jury import JuryReport
from pcfjudge.telemetry import metrics as m
from pcfjudge.telemetry.metrics import Metrics

R = TypeVar("R")


def record_jury(report: JuryReport | None, metrics: Metrics, model: str, cost_usd: float | None) -> None:
    """The cost by model (a jury's by juror), each juror's outcome and the jury's agreement."""
    if report is None:
        metrics.cost(model, cost_usd)
        return
    stats = {"kendalls_w": report.kendalls_w, "fleiss_kappa": report.fleiss_kappa}
    m.jury(
        metrics,
        ((j.model, j.delivered, j.cost_usd) for j in report.jurors),
        {k: v for k, v in stats.items() if v is not None},
    )


def record_listwise(result: ListwiseResult, metrics: Metrics) -> None:
    """Position bias, overturns, agreement, margin and cost of one listwise decision."""
    record_jury(result.jury, metrics, result.model, result.cost_usd)
    endpoint = "/judge/listwise"
    m.child(m.DECISIONS, endpoint, result.mode).inc()
    if result.degraded:
        m.child(m.DEGRADED, endpoint).inc()
    if result.stopped is not None:
        m.child(m.STOPS, result.stopped).inc()
    if result.windows is not None:
        m.child(m.WINDOWED, result.windows.stopped).inc()
        m.WINDOWS_JUDGED.observe(result.windows.windows_judged)
    picks: dict[int, float] = {}  # displayed position → share of this decision's top picks (one update each)
    for run in result.runs:
        if run.result is None:
            continue
        tops = top_set(run.result)
        for cid in tops:
            position = run.order.index(cid)
            picks[position] = picks.get(position, 0.0) + 1 / len(tops)
            if run.model is not None:
                m.juror_top_pick(metrics, run.model, position, 1 / len(tops))
    for position, share in picks.items():
        m.child(m.TOP_PICKS, endpoint, str(position)).inc(share)
    if result.mode != "consensus":
        return
    if result.direct_winners is not None and set(result.direct_winners) != set(result.consensus.winners):
        m.child(m.OVERTURNS, endpoint).inc()
    m.AGREEMENT.observe(result.agreement)
    values = sorted((c.consensus for c in result.consensus.candidates.values()), reverse=True)
    if len(values) > 1:
        m.MARGIN.observe(values[0] - values[1])


def record_pairwise(result: PairwiseResult, metrics: Metrics) -> None:
    """Order consistency, keyed passes, overrides and cost of one pairwise decision."""
    record_jury(result.jury, metrics, result.model, result.cost_usd)
    endpoint = "/judge/pairwise"
    m.DECISIONS.labels(endpoint, "apoc").inc()
    if result.degraded:
        m.DEGRADED.labels(endpoint).inc()
    for p in result.passes:
        if p.name != "keyed" and p.raw_verdict in ("A", "B"):
            m.TOP_PICKS.labels(endpoint, "0" if p.raw_verdict == "A" else "1").inc()
            if p.model is not None:
                m.juror_top_pick(metrics, p.model, 0 if p.raw_verdict == "A" else 1)
    decision, plan = result.decision, result.keyed_plan
    if decision.order_consistent is False:
        m.PAIR_INCONSISTENT.inc()
    if result.keyed_pass is not None:
        m.KEYED.labels("run").inc()
    elif plan.skipped is not None and plan.needed:
        m.KEYED.labels(f"skipped_{plan.skipped}").inc()
    if decision.override:
        m.OVERRIDES.inc()


async def judged(endpoint: str, judgment: Awaitable[R]) -> R:
    """Await a judgment; a ``JudgingFailed`` is counted for ``endpoint`` and raised on (``api.error_handlers`` answers it)."""
    try:
        return await judgment
    except JudgingFailed as exc:
        m.FAILED.labels(endpoint, exc.kind).inc()
        raise
