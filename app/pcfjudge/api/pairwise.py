"""POST /judge/pairwise (APOCJudge): validate, judge through ``services.judge``, shape the response."""

from __future__ import annotations

from fastapi import APIRouter, Request

from pcfjudge.api.deps import ServicesDep
from pcfjudge.api.listwise import ERROR_RESPONSES
from pcfjudge.api.observability import judged, record_pairwise
from pcfjudge.api.pairwise_schemas import EstimationOut, KeyedOut, PairwiseRequest, PairwiseResponse, PassOut
from pcfjudge.api.schemas import UsageOut
from pcfjudge.api.validate import check_texts, resolve_model
from pcfjudge.judging import apoc
from pcfjudge.judging.pairwise import PairwiseResult, PairwiseTask, PassRecord
from pcfjudge.services import Services

router = APIRouter()


@router.post(
    "/judge/pairwise", response_model=PairwiseResponse, responses=ERROR_RESPONSES, response_model_by_alias=True
)
async def judge_pairwise_route(body: PairwiseRequest, request: Request, services: ServicesDep) -> PairwiseResponse:
    """APOCJudge: judge both orders; on disagreement accept the swapped verdict only if a keyed pass confirms it."""
    result = await judged("/judge/pairwise", services.judge.pairwise(build_task(body, services)))
    record_pairwise(result)
    response = to_response(result, request.state.request_id, body.include_runs, services)
    services.metrics.cost(result.model, response.usage.cost_usd)
    return response


def build_task(body: PairwiseRequest, services: Services) -> PairwiseTask:
    """Turn a request into a pairwise task, refusing (422, naming the field) anything the service cannot do.

    Identical responses are allowed (a consistent judge calls them a tie).
    """
    check_texts(services, body.question, {"response_a": body.response_a, "response_b": body.response_b})
    model = resolve_model(services, body.model, body.oracle_best)
    return PairwiseTask(
        question=body.question,
        response_a=body.response_a,
        response_b=body.response_b,
        keyed=body.keyed,
        estimation=body.estimation,
        oracle_best=body.oracle_best,
        cache_mode=body.cache,
        model=model.string,
        style=services.judge.style(body.rationales, "pairwise"),
    )


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
        **p.usage.as_dict(),
    )


def to_response(result: PairwiseResult, request_id: str, include_runs: bool, services: Services) -> PairwiseResponse:
    d, plan, keyed = result.decision, result.keyed_plan, result.keyed_pass
    swapped = next(p for p in result.passes if p.name == "swapped")
    est = result.estimation
    return PairwiseResponse(
        request_id=request_id,
        model=result.model,
        prompt_version=result.prompt_versions["pairwise"],
        prompt_versions=result.prompt_versions,
        winner=d.winner,
        label=apoc.label(d.winner),
        direct=d.direct,
        swapped=swapped.verdict,
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
            cost_usd=services.judge.cost_usd(result.model, result.usage),
            **result.usage.as_dict(),
        ),
        degraded=result.degraded,
    )
