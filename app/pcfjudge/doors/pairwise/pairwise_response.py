"""An APOCJudge result as /judge/pairwise's response."""

from __future__ import annotations

from pcfjudge.doors.jury_response import jury_data
from pcfjudge.doors.pairwise.pairwise_protocol import EstimationOut, KeyedOut, PairwiseResponse, PassOut
from pcfjudge.engine.pairwise_passes import PairwiseResult, PassRecord
from pcfjudge.judging import apoc
from pcfjudge.judging.jury import pool_verdicts
from pcfjudge.schemas.common import JuryOut, UsageOut


def _pass_out(p: PassRecord) -> PassOut:
    return PassOut(
        name=p.name,
        order=["A" if i == 0 else "B" for i in p.order],
        prompt_version=p.prompt_version,
        verdict=p.verdict,
        raw_verdict=p.raw_verdict,
        rationale=p.rationale,
        resolved_answer=p.resolved_answer,
        cached=p.cached,
        latency_ms=p.latency_ms,
        error=p.error,
        model=p.model,
        **p.usage.as_dict(),
    )


def to_response(result: PairwiseResult, request_id: str, include_runs: bool) -> PairwiseResponse:
    d, plan, keyed = result.decision, result.keyed_plan, result.keyed_pass
    swapped = _swapped(result)
    est = result.estimation
    return PairwiseResponse(
        request_id=request_id,
        model=result.model,
        prompt_version=result.prompt_versions["pairwise"],
        prompt_versions=result.prompt_versions,
        winner=d.winner,
        label=apoc.label(d.winner),
        direct=d.direct,
        swapped=swapped,
        order_consistent=d.order_consistent,
        override=d.override,
        decision=d.basis,
        keyed=KeyedOut(
            ran=keyed is not None,
            needed=plan.needed,
            skipped=plan.skipped,
            resolved_answer=keyed.resolved_answer if keyed else None,
            winner=keyed.verdict if keyed else None,
            error=keyed.error if keyed else None,
        ),
        estimation=EstimationOut(estimation=est.estimation, source=est.source, cue=est.cue),
        preference_a=result.preference_a,
        runs=[_pass_out(p) for p in result.passes] if include_runs else None,
        usage=UsageOut(
            backend_calls=result.backend_calls,
            cache_hits=result.cache_hits,
            cost_usd=result.cost_usd,
            **result.usage.as_dict(),
        ),
        degraded=result.degraded,
        jury=JuryOut.model_validate(jury_data(result.jury)) if result.jury is not None else None,
        stopped=result.stopped,
    )


def _swapped(result: PairwiseResult) -> apoc.Verdict | None:
    """The swapped-order verdict: a jury's is the weighted vote of its jurors' (those whose swapped pass succeeded)."""
    if result.jury is None:
        return next(p for p in result.passes if p.name == "swapped").verdict
    weight = {j.model: j.weight for j in result.jury.jurors}
    votes = [(p.verdict, weight[p.model or ""]) for p in result.passes if p.name == "swapped" and p.verdict]
    return pool_verdicts(*zip(*votes, strict=True)) if votes else None
