"""/judge/pairwise's request as an APOCJudge task (422 naming the field for anything the service cannot do)."""

from __future__ import annotations

from pcfjudge.doors.checks import check_texts, resolve_model
from pcfjudge.engine.pairwise_passes import PairwiseTask
from pcfjudge.schemas.pairwise_schema import PairwiseRequest
from pcfjudge.services import Services


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
