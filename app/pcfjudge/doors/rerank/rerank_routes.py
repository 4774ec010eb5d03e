"""``POST /rerank`` + ``GET /info`` (text-embeddings-inference shape) and ``POST /v1/rerank`` + ``POST /v2/rerank``
(Cohere/Jina shape): PCFJudge underneath (``pcfjudge.doors.rerank.rerank_plan``; one document is judged pointwise). Field by
field in ``pcfjudge.doors.rerank.rerank_protocol``.

TEI's errors are ``{"error": message, "error_type": kind}`` with TEI's statuses: 400 Empty (no texts), 413
Validation (more texts than the limit), 422 Validation (bad field), 424 Backend (the judge failed: our 502/504), 429
Overloaded (our 503, with Retry-After). The Cohere routes answer in this service's error shape
(``{"error", "detail"}``), which the Cohere SDK raises as its ``ApiError`` subclasses by status.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from pcfjudge._version import __version__
from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.rerank.rerank_plan import CHARS_PER_TOKEN, build_plan, build_task, cut, judge_model, rerank
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
from pcfjudge.http.deps import ServicesDep, door, services_of, watch_of
from pcfjudge.http.error_handlers import ERROR_RESPONSES, STREAM_RESPONSE, as_api_error, documented
from pcfjudge.http.read_body import ReadRoute
from pcfjudge.kept import KeptFor
from pcfjudge.services import Services
from pcfjudge.settings import Settings

TEI_STATUS: dict[int, tuple[int, str]] = {
    400: (400, "Empty"),
    413: (413, "Validation"),
    429: (429, "Overloaded"),
    502: (424, "Backend"),
    503: (429, "Overloaded"),
    504: (424, "Backend"),
}
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


def tei_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "error_type": kind}, status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in list(exc.errors())[:5]:
        field = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        message = "unknown field; remove it" if e.get("type") == "extra_forbidden" else str(e.get("msg", "invalid"))
        parts.append(f"{field}: {message}")
    return "; ".join(parts)


class TeiRoute(ReadRoute):
    """Answers this route's client and backend errors in TEI's shape instead of the service's."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def tei_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                return tei_error(422, "Validation", _validation_message(exc))
            except StarletteHTTPException as exc:  # a body FastAPI cannot read (e.g. not UTF-8): TEI's serde error
                return tei_error(422, "Validation", f"{exc.detail}; send a JSON object (UTF-8)")
            except Exception as exc:  # ours (a client mistake, a refusal, a failed judgment): in TEI's shape
                error = as_api_error(exc)
                if error is None:
                    raise
                status, kind = TEI_STATUS.get(error.status, (error.status, "Validation"))
                return tei_error(status, kind, error.detail, error.headers)

        return tei_handler


tei_router = APIRouter(route_class=TeiRoute)
router = APIRouter(route_class=ReadRoute)


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
            "max_concurrent_requests": s.max_pending_requests,
            "max_input_length": s.max_candidate_chars // CHARS_PER_TOKEN,
            "max_batch_tokens": s.max_input_tokens_per_request,
            "max_batch_requests": None,
            "max_client_batch_size": s.max_items,
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
    services = services_of(request)  # the door's shape (one body and the request): ``http.read_body``'s lean handler
    s, judge = services.settings, services.judge
    watch = watch_of(request, _deadline(services, body.pcfjudge, request))
    plan = _TEI_PLANS.derive(body, (s, judge), lambda: _tei_plan(body, s, judge))  # once per body, as Cohere's
    include_runs = body.pcfjudge is not None and body.pcfjudge.include_runs
    at = door(request, "rerank")  # TEI's rerank never streams
    ranked = await rerank(services.judge, services.metrics, request.state.request_id, plan, include_runs, at, watch)
    stats = {int(c.id): c for c in ranked.detail.candidates}
    ranks = [
        TeiRank(
            index=i,
            score=ranked.consensus[i] if body.raw_scores else ranked.relevance(i),
            text=body.texts[i] if body.return_text else None,
            pcfjudge=stats[i] if body.pcfjudge is not None else None,
        ).model_dump(mode="json", exclude_none=True)
        for i in ranked.order
    ]
    return JSONResponse(ranks)


def _tei_plan(body: TeiRerankRequest, s: Settings, judge: Judge) -> Plan[ListwiseTask]:
    query, texts = body.query, list(body.texts)
    if body.truncate:
        keep_end = body.truncation_direction.lower() == "left"
        query = cut(query, s.max_question_chars, keep_end)
        texts = [cut(text, s.max_candidate_chars, keep_end) for text in texts]
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
    services = services_of(request)  # the door's shape (one body and the request): ``http.read_body``'s lean handler
    watch = watch_of(request, _deadline(services, body.pcfjudge, request))
    plan = build_plan(body, services.settings, services.judge)  # checked here, before any answer
    endpoint = "/v1/rerank" if request.url.path.startswith("/v1/") else "/v2/rerank"

    async def reranked(watch: Watch) -> dict[str, Any]:
        return await _cohere_payload(body, request, services, plan, endpoint, len(body.documents), watch)

    if body.pcfjudge is not None and body.pcfjudge.stream:
        from pcfjudge.http.streaming import stream  # server-sent events: loaded by the first stream

        return await stream(reranked, watch, request.state.request_id)
    return JSONResponse(await reranked(watch))


def _deadline(services: Services, options: RerankOptions | None, request: Request) -> AnswerBy | None:
    given = options.deadline_ms if options is not None else None
    return answer_deadline(services.settings, given, request.headers.get("prefer"))


async def _cohere_payload(
    body: CohereRerankRequest,
    request: Request,
    services: Services,
    plan: Plan[ListwiseTask],
    endpoint: str,
    n: int,
    watch: Watch,
) -> dict[str, Any]:
    """The Cohere-shaped answer for the judged documents (``pcfjudge``: the full consensus, when asked)."""
    include_runs = body.pcfjudge is not None and body.pcfjudge.include_runs
    at = door(request, "rerank", body.pcfjudge is not None and body.pcfjudge.stream)
    ranked = await rerank(services.judge, services.metrics, request.state.request_id, plan, include_runs, at, watch)
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
        "api_version": {"version": endpoint[2]},
        "billed_units": {"search_units": -(-n // 100), **tokens},
        "tokens": tokens,
    }
    response = RerankResponse.model_validate(
        {
            "id": request.state.request_id,
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
    return payload
