"""A chat judgment as an OpenAI chat completion (and its ``chat.completion.chunk`` events), its ``pcfjudge`` field
carrying every order's verdict."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import orjson

from pcfjudge.doors.chat.chat_protocol import (
    AssistantMessage,
    ChatCompletion,
    ChatJudgment,
    Choice,
    ChoiceLogprobs,
    CompletionUsage,
    OrderOut,
    TokenLogprob,
    TopLogprob,
)
from pcfjudge.engine.chat_runs import ChatResult, ChatRun, ChatTask
from pcfjudge.judging.templates.chat_consensus import verdict_label
from pcfjudge.schemas.common import UsageOut


def to_response(result: ChatResult, task: ChatTask, request_id: str, logprobs: bool) -> ChatCompletion:
    found = task.found
    labels = found.labels if found is not None else ()
    decision = result.decision

    def label(verdict: object) -> str | None:
        return verdict_label(verdict, labels) if isinstance(verdict, int | tuple) and labels else None

    def order_out(run: ChatRun) -> OrderOut:
        return OrderOut(
            order=[labels[i] for i in run.order] if labels else [],
            model=run.model,
            verdict=label(run.verdict),
            shown=label(run.shown),
            cached=run.cached,
            latency_ms=run.latency_ms,
            error=run.error,
            **run.usage.as_dict(),
        )

    judgment = ChatJudgment(
        template=found.template.name if found is not None else None,
        framework=found.template.origin.framework if found is not None else None,
        source=found.template.origin.source if found is not None else None,
        verdict=label(decision.verdict) if decision is not None else None,
        agreement=decision.agreement if decision is not None else None,
        split=decision.split if decision is not None else False,
        coin=decision.coin if decision is not None else False,
        reply=None if found is None else "judge" if result.chosen is not None else "template",
        orders=[order_out(r) for r in result.runs],
        usage=UsageOut(
            backend_calls=result.backend_calls,
            cache_hits=result.cache_hits,
            cost_usd=result.cost_usd,
            **result.usage.as_dict(),
        ),
        degraded=result.degraded,
        stopped=result.stopped,
    )
    u = result.usage
    choice = Choice(message=AssistantMessage(content=result.content))
    if logprobs and found is not None and found.template.name == "alpaca-eval-clf":
        choice.logprobs = _first_token_logprobs(result)
    return ChatCompletion(
        id=f"chatcmpl-{request_id}",
        created=int(time.time()),
        model=result.model,
        choices=[choice],
        usage=CompletionUsage(
            prompt_tokens=u.input_tokens,
            completion_tokens=u.output_tokens,
            total_tokens=u.input_tokens + u.output_tokens,
        ),
        pcfjudge=judgment,
    )


def _first_token_logprobs(result: ChatResult) -> ChoiceLogprobs:
    """AlpacaEval's ``m``/``M`` answer: P(m) = (orders preferring the first output + ½) / (orders + 1)."""
    verdicts = [r.verdict for r in result.runs if isinstance(r.verdict, int)]
    p = (sum(1 for v in verdicts if v > 0) + 0.5) / (len(verdicts) + 1)
    top = [TopLogprob(token=t, logprob=math.log(q), bytes=list(t.encode())) for t, q in (("m", p), ("M", 1 - p))]
    token = result.content.strip()
    chosen = next((t for t in top if t.token == token), top[0])
    return ChoiceLogprobs(content=[TokenLogprob(**chosen.model_dump(), top_logprobs=top)])


def chunks(completion: ChatCompletion, include_usage: bool) -> Iterator[bytes]:
    """The completion as server-sent ``chat.completion.chunk`` events: the role and content, the finish reason (and
    the ``pcfjudge`` field), the usage when asked (``stream_options.include_usage``), then ``[DONE]``."""
    base: dict[str, Any] = {
        "id": completion.id,
        "object": "chat.completion.chunk",
        "created": completion.created,
        "model": completion.model,
    }
    choice = completion.choices[0]
    content = {"role": "assistant", "content": choice.message.content}
    logprobs = choice.logprobs.model_dump() if choice.logprobs is not None else None
    events: list[dict[str, Any]] = [
        base | {"choices": [{"index": 0, "delta": content, "logprobs": logprobs, "finish_reason": None}]},
        base
        | {
            "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}],
            "pcfjudge": completion.pcfjudge.model_dump(mode="json"),
        },
    ]
    if include_usage:
        events.append(base | {"choices": [], "usage": completion.usage.model_dump()})
    for event in events:
        yield b"data: " + orjson.dumps(event) + b"\n\n"
    yield b"data: [DONE]\n\n"
