"""POST /v1/chat/completions: a framework's own judge prompt (``pcfjudge.doors.chat.chat_plan``), judged in every
order through ``services.judge`` and answered in the framework's format (``pcfjudge.doors.chat.chat_response``).
The answer's header ``X-PCFJudge-Template`` names the template recognised (``none``: passed through as one call). Every
error (a body that fails validation, its plan refused, its calls failed) answers in OpenAI's error shape,
``{"error": {"message", "type", "param", "code"}}``, so an OpenAI client's exception carries the detail."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.chat.chat_plan import build_plan
from pcfjudge.doors.chat.chat_protocol import ChatCompletion, ChatRequest, OpenAIError
from pcfjudge.doors.chat.chat_response import chunks, to_response
from pcfjudge.doors.decisions import judged, record_chat
from pcfjudge.engine.chat_runs import ChatTask
from pcfjudge.engine.plan import Plan
from pcfjudge.engine.progress import Watch
from pcfjudge.http import error_shapes
from pcfjudge.http.door_spec import Answered, Call, DoorRouter, DoorSpec, JobRoute, http_call, watch_for
from pcfjudge.http.error_handlers import ERROR_RESPONSES
from pcfjudge.services import Services

router = DoorRouter(error_shapes.openai)
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
    code: {**answer, "model": OpenAIError}
    for code, answer in (ERROR_RESPONSES | {429: {"description": "A quota or rate limit (see Retry-After)"}}).items()
}
"""Every error of this door in OpenAI's shape (``http.error_shapes.openai``), validation errors included."""


@router.post("/v1/chat/completions", response_model=ChatCompletion, responses=ERRORS | CHUNKS)
async def chat_completions_route(body: ChatRequest, request: Request) -> Response:
    """OpenAI's Chat Completions, as a judge that cannot be swayed by order: a framework's own judge prompt (MT-Bench,
    Arena-Hard-Auto, AlpacaEval, RewardBench, Prometheus, JudgeBench, or candidates between pcfjudge's markers) is
    judged in every order of its candidates and answered with the consensus in the framework's own format."""
    call = http_call(request, "chat", body.stream)
    services = call.services
    watch = watch_for(answer_deadline(services.settings.fanout, body.deadline_ms, request.headers.get("prefer")))
    plan = plan_of(services, body)  # checked here, before any answer
    completion, template = await _completion(call, body, plan, watch)
    if body.stream:
        usage = body.stream_options is not None and body.stream_options.include_usage
        return StreamingResponse(chunks(completion, usage), media_type="text/event-stream", headers=template)
    return JSONResponse(completion.model_dump(mode="json"), headers=template)


def plan_of(services: Services, body: ChatRequest) -> Plan[ChatTask]:
    return build_plan(body, services.settings, services.judge)


async def _completion(
    call: Call, body: ChatRequest, plan: Plan[ChatTask], watch: Watch
) -> tuple[ChatCompletion, dict[str, str]]:
    """The judgment, recorded for its door, as a chat completion, and the header naming the template recognised."""
    result = await judged(call.at, call.services.judge.run(plan, watch))
    record_chat(result, call.services.metrics, call.at)
    completion = to_response(result, plan.task, call.request_id, bool(body.logprobs))
    return completion, {TEMPLATE_HEADER: result.template or "none"}


async def answer(call: Call, body: ChatRequest, plan: Plan[ChatTask], watch: Watch) -> Answered:
    completion, template = await _completion(call, body, plan, watch)
    return Answered(completion.model_dump(mode="json"), template)


SPIDER = "How many legs does a spider have?"
EXAMPLES: dict[str, dict[str, Any]] = {  # a working body per route, for /docs "Try it out" (api.examples)
    "/v1/chat/completions": {  # a framework's own judge prompt; here candidates between pcfjudge's markers
        "messages": [
            {
                "role": "user",
                "content": f"Which answer to {SPIDER!r} is better? Explain briefly, then give your verdict as [[A]] "
                "or [[B]].\n\n<<<candidate A>>>\nSix, like an insect.\n<<<end>>>\n<<<candidate B>>>\nEight.\n<<<end>>>",
            }
        ],
        "temperature": 0,
        "deadline_ms": 10000,
    },
}

DOOR = DoorSpec(
    "chat",
    (router,),
    (JobRoute("/v1/chat/completions", ChatRequest, lambda b: b, "stream", plan_of, answer),),
    "chat-endpoint.md",
    examples=EXAMPLES,
)
