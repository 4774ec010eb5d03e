"""``POST /rerank`` + ``GET /info`` (text-embeddings-inference shape) and ``POST /v1/rerank`` + ``POST /v2/rerank``
(Cohere/Jina shape): PCFJudge underneath (``pcfjudge.doors.rerank.rerank_plan``; one document is judged pointwise). Field by
field in ``pcfjudge.doors.rerank.rerank_protocol``.

TEI's errors are ``{"error": message, "error_type": kind}`` with TEI's statuses: 400 Empty (no texts), 413
Validation (more texts than the limit), 422 Validation (bad field), 424 Backend (the judge failed: our 502/504), 429
Overloaded (our 503, with Retry-After). The Cohere routes answer in the service's error shape with Cohere's
``message`` (and ``id``) beside it (``http.error_shapes.cohere``), which the Cohere SDK raises as its ``ApiError``
subclasses by status.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse

from pcfjudge._version import __version__
from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.door_routes import respond
from pcfjudge.doors.rerank.rerank_plan import (
    CHARS_PER_TOKEN,
    TOKENS_PER_DOC,
    Ranked,
    best_chunks,
    build_plan,
    build_task,
    chunks,
    cut,
    doc_chars,
    judge_model,
    rerank,
)
from pcfjudge.doors.rerank.rerank_protocol import (
    CohereRerankRequest,
    RerankOptions,
    RerankResponse,
    TeiErrorResponse,
    TeiInfo,
    TeiRank,
    TeiRerankRequest,
)
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.listwise_runs import ListwiseTask
from pcfjudge.engine.plan import Plan
from pcfjudge.engine.progress import AnswerBy, Watch
from pcfjudge.engine.window_runs import off_loop
from pcfjudge.errors import client_error
from pcfjudge.http import error_shapes
from pcfjudge.http.deps import ServicesDep
from pcfjudge.http.door_spec import Answered, Answering, Call, DoorRouter, DoorSpec, JobRoute, http_call, watch_for
from pcfjudge.http.error_handlers import ERROR_RESPONSES, STREAM_RESPONSE, documented
from pcfjudge.kept import KeptFor
from pcfjudge.services import Services
from pcfjudge.settings import Settings

TEI_RESPONSES = documented(
    {
        400: "No texts (error_type Empty)",
        413: "More texts than PCFJ_MAX_CANDIDATES (error_type Validation)",
        422: "Invalid request (error_type Validation; the error names the field)",
        424: "The judge backend failed or timed out (error_type Backend)",
        429: "The judge backend is overloaded or rate limited (error_type Overloaded; see Retry-After)",
    },
    TeiErrorResponse,
)
COHERE_RESPONSES = ERROR_RESPONSES | documented(
    {
        400: "Body is not valid JSON, or no documents",
        413: "More documents than PCFJ_MAX_CANDIDATES (the detail names it)",
    }
)


tei_router = DoorRouter(error_shapes.tei)
router = DoorRouter(error_shapes.cohere)


@tei_router.get("/info", response_model=TeiInfo, tags=["rerank"])
async def tei_info(services: ServicesDep) -> TeiInfo:
    """text-embeddings-inference's model info, every key TEI returns: a reranker whose model is the default judge.

    TEI clients (tei-client, ...) read it before they rerank; the limits are this service's (see each field).
    """
    s = services.settings
    model = s.resolved_default_model()
    return TeiInfo.model_validate(
        {
            "model_id": model,
            "model_sha": None,
            "model_dtype": "unknown",
            "served_model_name": model,
            "model_type": {"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}},
            "max_concurrent_requests": s.access.max_pending_requests,
            "max_input_length": s.limits.max_candidate_chars // CHARS_PER_TOKEN,
            "max_batch_tokens": s.access.max_input_tokens_per_request,
            "max_batch_requests": None,
            "max_client_batch_size": s.limits.max_items,
            "auto_truncate": False,
            "tokenization_workers": 0,
            "version": __version__,
            "sha": None,
            "docker_label": None,
        }
    )


@tei_router.post("/rerank", response_model=list[TeiRank], responses=TEI_RESPONSES, tags=["rerank"])
async def tei_rerank(body: TeiRerankRequest, request: Request) -> JSONResponse:
    """text-embeddings-inference's rerank: the texts judged as one PCFJudge listwise judgment, best first.

    ``score`` is consensus/100 (``raw_scores``: the consensus, 0–100); ties keep equal scores in request order.
    """
    call = http_call(request, "rerank")  # TEI's rerank never streams
    services = call.services
    s, judge = services.settings, services.judge
    watch = watch_for(_deadline(services, body.pcfjudge, request))
    plan = _TEI_PLANS.derive(body, (s, judge), lambda: _tei_plan(body, s, judge))  # once per body, as Cohere's
    include_runs = body.pcfjudge is not None and body.pcfjudge.include_runs
    ranked = await rerank(services.judge, services.metrics, call.request_id, plan, include_runs, call.at, watch)
    ranks = await off_loop(len(body.texts), lambda: _tei_answer(body, ranked))
    return JSONResponse(ranks, headers=tei_warning(ranked))


def _tei_answer(body: TeiRerankRequest, ranked: Ranked) -> list[dict[str, Any]]:
    """TEI's answer's array for the ranked texts (thousands of them: shaped in a worker thread, as Cohere's)."""
    stats = {int(c.id): c for c in ranked.detail.candidates}
    return [
        TeiRank(
            index=i,
            score=ranked.consensus[i] if body.raw_scores else ranked.relevance(i),
            text=body.texts[i] if body.return_text else None,
            pcfjudge=stats[i] if body.pcfjudge is not None else None,
        ).model_dump(mode="json", exclude_none=True)
        for i in ranked.order
    ]


def tei_warning(ranked: Ranked) -> dict[str, str]:
    """TEI's answer is a bare array, so what Cohere's ``meta.warnings`` says goes in ``X-PCFJudge-Warning``: fewer
    rounds than asked, when the call budget (``PCFJ_MAX_WINDOW_CALLS``, ``pcfjudge.max_calls``) cut them."""
    report = ranked.detail.diagnostics.windows
    if report is None or report.calls_budgeted >= report.windows_per_round * report.rounds:
        return {}
    made = report.calls_budgeted // report.windows_per_round
    return {
        "X-PCFJudge-Warning": f"{made} of {report.rounds} rounds fit the call budget ({report.calls_budgeted} calls): "
        "each text was judged in fewer windows; raise pcfjudge.max_calls or PCFJ_MAX_WINDOW_CALLS"
    }


def _tei_plan(body: TeiRerankRequest, s: Settings, judge: Judge) -> Plan[ListwiseTask]:
    if body.pcfjudge is not None and body.pcfjudge.long_documents != "truncate":
        detail = "TEI's rerank cuts long texts with truncate: true; best_chunk is for /v1 and /v2/rerank"
        raise client_error("pcfjudge.long_documents", detail)
    query, texts = body.query, list(body.texts)
    if body.truncate:
        keep_end = body.truncation_direction.lower() == "left"
        query = cut(query, s.limits.max_question_chars, keep_end)
        texts = [cut(text, s.limits.max_candidate_chars, keep_end) for text in texts]
    model = judge_model(judge, None, body.pcfjudge)
    return judge.checked(build_task(s, query, texts, body.pcfjudge, model, "texts"))


_TEI_PLANS: KeptFor[TeiRerankRequest, Plan[ListwiseTask]] = KeptFor(512)


@router.post("/v1/rerank", response_model=RerankResponse, responses=COHERE_RESPONSES | STREAM_RESPONSE, tags=["rerank"])
@router.post("/v2/rerank", response_model=RerankResponse, responses=COHERE_RESPONSES | STREAM_RESPONSE, tags=["rerank"])
async def cohere_rerank(body: CohereRerankRequest, request: Request) -> Response:
    """Cohere's (and Jina's) rerank: the documents judged as one PCFJudge listwise judgment, best first.

    ``relevance_score`` is consensus/100; ties keep equal scores in request order. ``model`` picks one of our
    judges when it is a provider:model of ours (e.g. sim:default); any other name (rerank-v3.5) uses the default.
    """
    return await respond(request, body, COHERE_V1 if request.url.path.startswith("/v1/") else COHERE_V2, "rerank")


def plan_of(services: Services, body: CohereRerankRequest) -> Plan[ListwiseTask]:
    return build_plan(body, services.settings, services.judge)


def _deadline(services: Services, options: RerankOptions | None, request: Request) -> AnswerBy | None:
    given = options.deadline_ms if options is not None else None
    return answer_deadline(services.settings.fanout, given, request.headers.get("prefer"))


async def answer(call: Call, body: CohereRerankRequest, plan: Plan[ListwiseTask], watch: Watch) -> Answered:
    """The Cohere-shaped answer for the judged documents (``pcfjudge``: the full consensus, when asked)."""
    include_runs = body.pcfjudge is not None and body.pcfjudge.include_runs
    services, n, endpoint = call.services, len(body.documents), call.at.endpoint
    ranked = await rerank(services.judge, services.metrics, call.request_id, plan, include_runs, call.at, watch)
    return Answered(await off_loop(n, lambda: _cohere_answer(call.request_id, endpoint, body, ranked)))


def _cohere_answer(request_id: str, endpoint: str, body: CohereRerankRequest, ranked: Ranked) -> dict[str, Any]:
    """Cohere's answer's body for the ranked documents (thousands of them: shaped in a worker thread)."""
    n = len(body.documents)
    pieces = chunks(body)  # as the plan cut them (the plan may have been made in another process: a job)
    ranked = best_chunks(ranked, pieces.owner)  # documents split into chunks: each scored by its best
    usage = ranked.detail.usage
    tokens = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    results = []
    for i in ranked.order[: body.top_n]:
        item: dict[str, Any] = {"index": i, "relevance_score": ranked.relevance(i)}
        if body.return_documents:
            document = body.documents[i]
            item["document"] = document if isinstance(document, dict) else {"text": document}
        results.append(item)
    meta = {
        "api_version": {"version": "1" if endpoint.startswith("/v1/") else "2"},
        "billed_units": {"search_units": -(-n // 100), **tokens},
        "tokens": tokens,
        "warnings": warnings(ranked, body, pieces.long) or None,
    }
    response = RerankResponse.model_validate(
        {
            "id": request_id,
            "model": ranked.detail.model,
            "results": results,
            "meta": meta,
            "usage": {"total_tokens": usage.input_tokens + usage.output_tokens},
            "pcfjudge": ranked.detail if body.pcfjudge is not None else None,
        }
    )
    payload = response.model_dump(mode="json")
    for item in payload["results"]:
        if item["document"] is None:
            del item["document"]
    if payload["pcfjudge"] is None:
        del payload["pcfjudge"]
    if payload["meta"]["warnings"] is None:  # as Cohere's: absent when there is nothing to say
        del payload["meta"]["warnings"]
    return payload


def warnings(ranked: Ranked, body: CohereRerankRequest, long: list[int]) -> list[str]:
    """What Cohere's ``meta.warnings`` should tell of this ranking: documents truncated to ``max_tokens_per_doc``,
    and a top_n the budget did not settle."""
    said = []
    limit = doc_chars(body)
    split = body.pcfjudge is not None and body.pcfjudge.long_documents == "best_chunk"
    if long:
        tokens = body.max_tokens_per_doc or TOKENS_PER_DOC
        how = (
            "split into chunks of it, each scored by its best" if split else "truncated to it and judged by their start"
        )
        said.append(
            f"{len(long)} document(s) longer than max_tokens_per_doc ({tokens} tokens, about {limit} characters) "
            f"were {how} (the first: index {long[0]})"
        )
    report = ranked.detail.diagnostics.windows
    if report is not None and body.top_n is not None and report.settled is False:
        said.append(
            f"the top {body.top_n} is not certain: the {report.calls_budgeted} calls budgeted ran out with documents "
            "still within two standard errors of its boundary; raise pcfjudge.max_calls (or pcfjudge.k) to settle it"
        )
    return said


def _answering(body: CohereRerankRequest) -> Answering:
    return body.pcfjudge or RerankOptions()


COHERE_V1 = JobRoute("/v1/rerank", CohereRerankRequest, _answering, "pcfjudge.stream", plan_of, answer)
COHERE_V2 = JobRoute("/v2/rerank", CohereRerankRequest, _answering, "pcfjudge.stream", plan_of, answer)
CAPITALS = [
    "Carson City is the capital city of the American state of Nevada.",
    "Washington, D.C. (officially the District of Columbia) is the capital of the United States.",
    "Capital punishment is legal in some states of the United States.",
]
EXAMPLES: dict[str, dict[str, Any]] = {  # a working body per route, for /docs "Try it out" (api.examples)
    "/rerank": {
        "query": "What is Deep Learning?",
        "texts": ["Deep Learning is not...", "Deep learning is..."],
    },
    "/v1/rerank": {
        "model": "rerank-v3.5",
        "query": "What is the capital of the United States?",
        "documents": CAPITALS,
        "top_n": 2,
    },
    "/v2/rerank": {
        "model": "rerank-v3.5",
        "query": "What is the capital of the United States?",
        "documents": CAPITALS,
        "top_n": 2,
    },
}

DOOR = DoorSpec("rerank", (router, tei_router), (COHERE_V1, COHERE_V2), "rerank.md", examples=EXAMPLES)
