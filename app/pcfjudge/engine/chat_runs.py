"""The chat door's judgment: a caller's own judge prompt, judged in every order of its candidates and answered in
the caller's format (``POST /v1/chat/completions``; docs/chat-endpoint.md).

A recognised prompt (``judging.templates``) is rendered in each order (a pair: both; a list: ``k`` permutations, the
caller's own first), each sent as an ordinary chat call through the runner (cache key: the rendered messages, the
model, the decoding parameters, the seed and response_format, so a framework that judges both orders itself, as
Arena-Hard's two games do, pays for each rendered prompt once). Each answer's verdict is read as the framework's
parser would (an unreadable one is retried once, then that order fails), mapped back to the caller's order, and the
orders' verdicts become one (``chat_consensus``). The reply is one of the judge's own answers whose verdict is the
consensus, relabelled to the caller's order; when none is (a split called a tie, a list's blended ranking), the
template's own wording of the verdict. A prompt not recognised is one call, its answer as it is.

A jury: every juror judges every order; the consensus is over all their verdicts. A caller's deadline (``deadline_ms``,
``Prefer: wait``) answers with the orders finished by then (``stopped: "deadline"``), or 504 when none has.
"""

from __future__ import annotations

import asyncio
import json

from pcfjudge.backends.base import ChatPayload, JudgeCall
from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.engine.calls import Decoder
from pcfjudge.engine.chat_values import ChatOptions, ChatResult, ChatRun, ChatTask
from pcfjudge.engine.failures import JudgingFailed, judging_failed
from pcfjudge.engine.progress import DEADLINE_KIND, Watch
from pcfjudge.engine.runner import CallOutcome, CallRunner, CallSpec
from pcfjudge.judging.cache_keys import cache_key, item_hash
from pcfjudge.judging.parse import OutputError
from pcfjudge.judging.templates.chat_consensus import Decision, decide, label_map, to_caller
from pcfjudge.judging.templates.template_base import Found
from pcfjudge.judging.templates.template_verdicts import Verdict
from pcfjudge.types import DecodingParams, Usage

VERSION = "chat-v1"
"""The prompt version recorded for chat calls (the prompt is the caller's; this names how it is sent)."""

__all__ = ["VERSION", "ChatOptions", "ChatResult", "ChatRun", "ChatTask", "judge_chat"]


def params_for(task: ChatTask, base: DecodingParams) -> DecodingParams:
    """The request's temperature and max_tokens, the latter capped by PCFJ_MAX_OUTPUT_TOKENS (``base``): what the
    plan is priced at is what the provider is sent."""
    o = task.options
    return DecodingParams(
        o.temperature if o.temperature is not None else base.temperature,
        min(o.max_tokens, base.max_output_tokens) if o.max_tokens is not None else base.max_output_tokens,
        base.reasoning_effort,
    )


def chat_specs(task: ChatTask, model: ResolvedModel, params: DecodingParams) -> list[CallSpec]:
    """One call per order, keyed by what it sends."""
    found, o = task.found, task.options
    specs = []
    for order in task.orders:
        messages = found.render(order) if found is not None else task.messages
        extra = {"seed": o.seed, "response_format": o.response_format}
        item = item_hash(json.dumps(messages, ensure_ascii=False), (), extra)
        version = found.template.name if found is not None else "none"
        key = cache_key(item, "chat", (), model.string, o.seed or 0, f"{VERSION}:{version}", params)
        call = JudgeCall(
            kind="chat",
            model=model.name,
            system="",
            prefix="",
            body="\n\n".join(text for _, text in messages),
            schema_name="chat",
            schema={},
            question=found.question if found is not None else "",
            displayed=tuple(found.candidates[i] for i in order) if found is not None else (),
            sample=o.seed or 0,
            params=params,
            reference=found.reference if found is not None else None,
            chat=ChatPayload(
                messages,
                o.seed,
                o.response_format,
                found.template.verdicts if found is not None else None,
                found.labels if found is not None else (),
            ),
        )
        specs.append(CallSpec(key, call, _content, VERSION, _reader(found)))
    return specs


def _content(text: str) -> dict[str, object]:
    return {"content": text}


def _reader(found: Found | None) -> Decoder | None:
    if found is None:
        return None
    template, labels = found.template, found.labels

    def read(answer: dict[str, object]) -> Verdict:
        verdict = template.verdicts.read(str(answer["content"]), labels)
        if verdict is None:
            raise OutputError("unreadable_verdict", f"the answer has no verdict {template.name}'s parser can read")
        return verdict

    return read


async def judge_chat(
    task: ChatTask,
    jurors: tuple[ResolvedModel, ...],
    runner: CallRunner,
    params: list[DecodingParams],
    watch: Watch,
    name: str,
) -> ChatResult:
    """Every order by every juror, then the consensus (``JudgingFailed`` when every call failed); ``name``: the
    model or jury the request named, as every door's answer names it."""
    per_juror = await asyncio.gather(
        *(
            runner.run(chat_specs(task, m, params_for(task, p)), m, watch=watch, cache_mode=task.cache_mode)
            for m, p in zip(jurors, params, strict=True)
        )
    )
    runs, failed = [], []
    for model, outcomes in zip(jurors, per_juror, strict=True):
        for order, outcome in zip(task.orders, outcomes, strict=True):
            runs.append(_run(order, model.string, outcome, task.found))
            if outcome.answer is None:
                failed.append(outcome)
    done = [r for r in runs if r.content is not None]
    cut = any(o.error == DEADLINE_KIND for o in failed)
    if not done:
        if all(o.error == DEADLINE_KIND for o in failed):
            raise JudgingFailed(
                "backend_timeout", "deadline: no order finished by the deadline (they go on into the cache)", None
            )
        raise judging_failed(failed, f"every judge call failed ({len(failed)})")
    calls = sum(1 for r in runs if not r.cached and r.error is None) + len(failed)
    usage = sum((r.usage for r in runs), Usage())
    result = ChatResult(
        name, None, runs, None, done[0].content or "", 0, calls, sum(r.cached for r in runs), usage,
        degraded=bool(failed), stopped="deadline" if cut else None,
    )  # fmt: skip
    if task.found is None:
        return result
    result.template = task.found.template.name
    result.decision = decide([r.verdict for r in done if r.verdict is not None], task.found.template,
                             task.found.candidates)  # fmt: skip
    result.content, result.chosen = reply(task.found, runs, result.decision)
    return result


def _run(order: tuple[int, ...], model: str, outcome: CallOutcome, found: Found | None) -> ChatRun:
    run = ChatRun(order, model, cached=outcome.cached, latency_ms=outcome.latency_ms, usage=outcome.usage)
    if outcome.answer is None:
        run.error = outcome.error_text
        return run
    run.content = str(outcome.answer["content"])
    if found is not None:
        run.shown = outcome.parsed
        run.verdict = to_caller(outcome.parsed, order)
    return run


def reply(found: Found, runs: list[ChatRun], decision: Decision) -> tuple[str, int | None]:
    """The judge's own answer with the consensus verdict, relabelled to the caller's order (the caller's own order's
    answer first), checked with the template's parser; else the template's own wording of the verdict."""
    verdicts, labels = found.template.verdicts, found.labels
    for index, run in sorted(enumerate(runs), key=lambda ir: ir[1].order != tuple(range(len(ir[1].order)))):
        if run.content is None or run.verdict != decision.verdict:
            continue
        text = verdicts.relabel(run.content, label_map(labels, run.order))
        if verdicts.read(text, labels) == decision.verdict:
            return text, index
    return verdicts.write(decision.verdict, labels), None
