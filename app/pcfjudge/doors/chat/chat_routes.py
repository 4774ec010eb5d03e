"""POST /v1/chat/completions: a framework's own judge prompt (``pcfjudge.doors.chat.chat_plan``), judged in every
order through ``services.judge`` and answered in the framework's format (``pcfjudge.doors.chat.chat_response``).
The answer's header ``X-PCFJudge-Template`` names the template recognised (``none``: passed through as one call). Errors
of the judgment (its plan refused, its calls failed) answer in OpenAI's error shape, ``{"error": {"message", "type",
"param", "code"}}``, so an OpenAI client shows the detail; a body that fails validation gets the service's 422."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.chat.chat_protocol import ChatCompletion, ChatRequest, OpenAIError
from pcfjudge.doors.decisions import judged, record_chat
from pcfjudge.http.deps import ServicesDep, door, watch_of
from pcfjudge.http.error_handlers import ERROR_RESPONSES, as_api_error
from pcfjudge.http.read_body import ReadRoute
from pcfjudge.schemas.common import ErrorResponse

router = APIRouter(route_class=ReadRoute)
TEMPLATE_HEADER = "X-PCFJudge-Template"
CHUNKS: dict[int | str, dict[str, object]] = {
    200: {
        "description": "The consensus as a chat completion; with stream: true, chat.completion.chunk events "
        "(data: {...}) once the consensus is formed, then data: [DONE] (docs/chat-endpoint.md)",
        "content": {
            "text/event-stream": {
                "schema": {  # one event (the fields of server-sent events): OpenAI's stream has data lines only
                    "type": "object",
                    "properties": {
                        "data": {"type": "string", "description": "JSON: a chat.completion.chunk; last, [DONE]"},
                        "event": {"type": "string"},
                        "id": {"type": "string"},
                        "retry": {"type": "integer"},
                    },
                    "required": ["data"],
                }
            }
        },
    }
}


ERRORS: dict[int | str, dict[str, object]] = {
    code: {**answer, "model": ErrorResponse | OpenAIError}
    for code, answer in (ERROR_RESPONSES | {429: {"description": "A quota or rate limit (see Retry-After)"}}).items()
}
"""A judgment's errors come in OpenAI's shape; the service's own body for what the HTTP layer refuses first."""


@router.post("/v1/chat/completions", response_model=ChatCompletion, responses=ERRORS | CHUNKS)
async def chat_completions_route(body: ChatRequest, request: Request, response: Response, services: ServicesDep) -> Any:
    """OpenAI's Chat Completions, as a judge that cannot be swayed by order: a framework's own judge prompt (MT-Bench,
    Arena-Hard-Auto, AlpacaEval, RewardBench, Prometheus, JudgeBench, or candidates between pcfjudge's markers) is
    judged in every order of its candidates and answered with the consensus in the framework's own format."""
    try:
        return await _answer(body, request, response, services)
    except Exception as exc:
        error = as_api_error(exc)
        if error is None:
            raise
        detail = {"message": error.detail, "type": error.kind, "param": error.field, "code": error.kind}
        return JSONResponse({"error": detail}, error.status, headers=error.headers)


async def _answer(body: ChatRequest, request: Request, response: Response, services: ServicesDep) -> Any:
    # The templates and the chat judge: loaded by the first chat request, not by a service that never gets one.
    from pcfjudge.doors.chat.chat_plan import build_plan
    from pcfjudge.doors.chat.chat_response import chunks, to_response

    watch = watch_of(request, answer_deadline(services.settings, body.deadline_ms, request.headers.get("prefer")))
    plan = build_plan(body, services.settings, services.judge)  # checked here, before any answer
    result = await judged(at := door(request, "chat", body.stream), services.judge.run(plan, watch))
    record_chat(result, services.metrics, at)
    completion = to_response(result, plan.task, request.state.request_id, bool(body.logprobs))
    template = {TEMPLATE_HEADER: result.template or "none"}
    if body.stream:
        usage = body.stream_options is not None and body.stream_options.include_usage
        return StreamingResponse(chunks(completion, usage), media_type="text/event-stream", headers=template)
    response.headers.update(template)
    return completion
