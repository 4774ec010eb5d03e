"""/v1/chat/completions' request as a chat task: the caller's messages, its recognised template (422 when none is
and the operator refuses those, PCFJ_CHAT_UNRECOGNISED=refuse), the judge's options; checked once at intake."""

from __future__ import annotations

import json

from pcfjudge.doors.chat.chat_protocol import ChatRequest
from pcfjudge.doors.checks import resolve_model
from pcfjudge.engine.chat_runs import ChatOptions, ChatTask
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.plan import Plan
from pcfjudge.errors import ApiError, client_error
from pcfjudge.judging.templates.template_registry import TEMPLATES, recognise
from pcfjudge.settings import Settings


def build_plan(body: ChatRequest, settings: Settings, judge: Judge) -> Plan[ChatTask]:
    """The request's plan, checked once at intake (answered now or streamed)."""
    return judge.checked(build_task(body, settings, judge))


def build_task(body: ChatRequest, settings: Settings, judge: Judge) -> ChatTask:
    if body.n != 1:
        raise client_error("n", "this endpoint answers one choice (the consensus); send n 1 or leave it out")
    messages = tuple((m.role, m.text) for m in body.messages)
    found = recognise(messages)
    if found is None and settings.chat.chat_unrecognised == "refuse":
        names = ", ".join(t.name for t in TEMPLATES)
        raise ApiError(
            "unrecognised_prompt",
            f"messages: no comparison this server recognises ({names}); mark the candidates with <<<candidate A>>> … "
            "<<<end>>> (docs/chat-endpoint.md) or ask the operator to pass such prompts on (PCFJ_CHAT_UNRECOGNISED)",
            field="messages",
        )
    if found is not None:
        if len(found.spans) > settings.limits.max_candidates:
            raise ApiError(
                "too_many_candidates",
                f"messages: {len(found.spans)} marked candidates; one prompt shows at most {settings.limits.max_candidates} "
                "(PCFJ_MAX_CANDIDATES)",
                field="messages",
            )
        for label, text in zip(found.labels, found.candidates, strict=True):
            if len(text) > settings.limits.max_candidate_chars:
                raise client_error(
                    "messages",
                    f"candidate {label} has {len(text)} characters; the limit is {settings.limits.max_candidate_chars}",
                )
    limit = settings.limits.max_question_chars + settings.limits.max_candidates * settings.limits.max_candidate_chars
    for i, (_, text) in enumerate(messages):
        if len(text) > limit:
            raise client_error(f"messages.{i}.content", f"at most {limit} characters (got {len(text)})")
    fmt = json.dumps(body.response_format, sort_keys=True) if body.response_format is not None else None
    options = ChatOptions(body.temperature, body.max_tokens or body.max_completion_tokens, body.seed, fmt)
    model = resolve_model(judge, body.model, None)
    return ChatTask(messages, found, options, k=settings.chat.chat_orders, model=model)
