"""``pcfjudge bench engine``: is pcfjudge ever the bottleneck in front of a real engine? Measured in one run.

Against an OpenAI-compatible engine (llama.cpp, vLLM, SGLang, Ollama, TGI) at ``--url``, the same judgments (items ×
K permutations, fresh framing nonces, the dialect pcfjudge learns) are made three ways, one after the other:

  bare        a bare aiohttp client posting the very request bodies pcfjudge would send, each item's K calls
              together, ``concurrency`` items at once: what the engine can do
  pcfjudge    the same through the service code (``Judge.listwise``: runner, slots, parsing, consensus), cache bypassed
  rationales  pcfjudge again with rationales on (the other passes have them off, as rewards and rerank do)

and it prints judgments/s of each and their ratio (target ≥ 0.95), prompt tokens the engine actually evaluated per
judgment against one call's (where the engine reports cached prompt tokens: llama-server's
``prompt_tokens_details.cached_tokens``, vLLM with ``--enable-prompt-tokens-details``; target ≤ 1.5×), and output
tokens and seconds per judgment with and without rationales, with how often the consensus winner changed.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from dataclasses import dataclass, field

import aiohttp
import orjson
from pcfjudge.surface import (
    DecodingParams,
    Judge,
    JudgeCall,
    JudgingFailed,
    ListwiseTask,
    OpenAIBackend,
    Prompt,
    PromptStyle,
    Services,
    Settings,
    Usage,
    new_nonce,
    permutation_schedule,
    render_listwise,
)

from pcfjudge_lab.engine_faults import engine_gone, unreachable

_FACTS = [
    ("What is the capital of France?", ["Paris.", "Lyon.", "Marseille.", "Nice."]),
    ("How many legs does a spider have?", ["Eight.", "Six.", "Ten.", "Four."]),
    ("What is the boiling point of water at sea level in Celsius?", ["100 °C.", "90 °C.", "120 °C.", "80 °C."]),
    ("Who wrote 'Pride and Prejudice'?", ["Jane Austen.", "Charlotte Brontë.", "Mary Shelley.", "George Eliot."]),
    ("What is the chemical symbol for gold?", ["Au.", "Ag.", "Gd.", "Go."]),
    ("How many continents are there?", ["Seven.", "Five.", "Six.", "Eight."]),
    ("What planet is known as the Red Planet?", ["Mars.", "Venus.", "Jupiter.", "Mercury."]),
    ("What is 12 times 12?", ["144.", "124.", "142.", "154."]),
]


@dataclass(frozen=True, slots=True)
class EngineBench:
    url: str
    model: str
    items: int = 8
    k: int = 7
    candidates: int = 4
    concurrency: int = 4
    max_output_tokens: int = 512


@dataclass(slots=True)
class Pass:
    name: str
    seconds: float = 0.0
    judgments: int = 0
    failed_runs: int = 0
    failed_judgments: int = 0  # short of their quorum: the model's own output failed (truncated, unparsable)
    usage: Usage = field(default_factory=Usage)
    one_call_input: list[int] = field(default_factory=list)  # input tokens of one call, per judgment
    winners: dict[str, tuple[str, ...]] = field(default_factory=dict)  # by question: judgments finish in any order

    @property
    def per_second(self) -> float:
        return self.judgments / self.seconds if self.seconds else 0.0


def items(bench: EngineBench) -> list[tuple[str, list[str]]]:
    """``bench.items`` questions (the facts above, numbered past their count) with ``bench.candidates`` answers."""
    out = []
    for i in range(bench.items):
        question, answers = _FACTS[i % len(_FACTS)]
        suffix = f" (item {i})" if i >= len(_FACTS) else ""
        out.append((question + suffix, answers[: bench.candidates]))
    return out


async def _bare(bench: EngineBench, backend: OpenAIBackend, work: list[tuple[str, list[str]]]) -> Pass:
    """The engine through a bare client: the bodies pcfjudge's backend builds, posted as they are."""
    done = Pass("bare client")
    gate = asyncio.Semaphore(bench.concurrency)
    endpoint, headers = backend.wire.endpoint, backend.wire.headers  # the same URL and headers (key, credentials)
    async with aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(limit=0)) as session:

        async def call(body: bytes) -> dict[str, object]:
            try:
                response = await session.post(endpoint, data=body)
            except aiohttp.ClientConnectorError as exc:
                raise EngineGone(engine_gone(bench.url, f"connection refused: {exc.os_error}")) from None
            async with response:
                data: dict[str, object] = orjson.loads(await response.read())
                if response.status != 200:
                    done.failed_runs += 1
                return data

        async def judgment(question: str, answers: list[str]) -> None:
            nonce = new_nonce()
            bodies = []
            for order in permutation_schedule(len(answers), bench.k, 0):
                prompt = render_listwise(
                    question, [answers[i] for i in order], nonce, style=PromptStyle(rationales=False)
                )
                request = backend.request(_call_of(prompt, bench))
                bodies.append(orjson.dumps(request))
            async with gate:
                replies = await asyncio.gather(*(call(body) for body in bodies))
            done.judgments += 1
            for data in replies:
                usage = data.get("usage")
                if isinstance(usage, dict):
                    done.usage += _usage(usage)

        started = time.perf_counter()
        await asyncio.gather(*(judgment(q, a) for q, a in work))
        done.seconds = time.perf_counter() - started
    return done


def _call_of(prompt: Prompt, bench: EngineBench) -> JudgeCall:
    """The call pcfjudge would make for ``prompt`` (the backend builds its request body from it)."""
    return JudgeCall(
        kind="listwise",
        model=bench.model,
        system=prompt.system,
        prefix=prompt.prefix,
        body=prompt.body,
        schema_name=prompt.schema_name,
        schema=prompt.schema,
        question="",
        displayed=(),
        params=DecodingParams(temperature=0.0, max_output_tokens=bench.max_output_tokens),
    )


def _usage(data: dict[str, object]) -> Usage:
    details = data.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else 0
    return Usage(
        int(str(data.get("prompt_tokens") or 0)), int(str(data.get("completion_tokens") or 0)), int(str(cached or 0))
    )


async def _pcfjudge(
    name: str, bench: EngineBench, judge: Judge, work: list[tuple[str, list[str]]], rationales: bool
) -> Pass:
    done = Pass(name)
    gate = asyncio.Semaphore(bench.concurrency)
    style = PromptStyle(rationales=rationales)

    async def judgment(question: str, answers: list[str]) -> None:
        ids = [str(i) for i in range(len(answers))]
        task = ListwiseTask(
            question, ids, answers, k=bench.k, cache_mode="bypass", model=f"openai:{bench.model}", style=style
        )
        async with gate:
            try:
                result = await judge.listwise(task)
            except JudgingFailed as exc:
                if all(unreachable(r.error or "") for r in exc.runs):
                    raise EngineGone(engine_gone(bench.url, exc.detail)) from None
                done.failed_judgments += 1  # counted, as its failed runs and the tokens they spent
                done.failed_runs += sum(1 for r in exc.runs if r.error)
                for r in exc.runs:
                    done.usage += r.usage
                return
        done.judgments += 1
        done.failed_runs += sum(1 for r in result.runs if r.error)
        done.usage += result.usage
        done.one_call_input.append(result.runs[0].usage.input_tokens)
        done.winners[question] = tuple(result.consensus.winners)

    started = time.perf_counter()
    await asyncio.gather(*(judgment(q, a) for q, a in work))
    done.seconds = time.perf_counter() - started
    return done


class EngineGone(Exception):
    """The engine stopped accepting connections mid-run; the message says what it most likely died of."""


async def run(bench: EngineBench) -> list[Pass]:
    settings = Settings(
        openai_base_url=bench.url,
        openai_default_model=bench.model,
        max_output_tokens=bench.max_output_tokens,
        request_timeout_s=3600,
        backend_concurrency=max(bench.concurrency * bench.k, 1),
        max_queued_calls=bench.items * bench.k,
        temperature=0.0,
    )
    services = Services.build(settings)
    try:
        judge = services.judge.unguarded()
        backend = services.registry.backends["openai"]
        assert isinstance(backend, OpenAIBackend)
        warm = items(EngineBench(bench.url, bench.model, items=1, k=1, candidates=bench.candidates))
        await _pcfjudge("warm-up", bench, judge, [(f"[{uuid.uuid4().hex[:6]}] " + warm[0][0], warm[0][1])], False)
        work = items(bench)
        bare = await _bare(bench, backend, work)
        lean = await _pcfjudge("pcfjudge", bench, judge, work, rationales=False)
        full = await _pcfjudge("pcfjudge, rationales", bench, judge, work, rationales=True)
    finally:
        await services.aclose()
    return [bare, lean, full]


def format_report(bench: EngineBench, passes: list[Pass]) -> str:
    bare, lean, full = passes
    lines = [
        f"pcfjudge bench engine: {bench.url} model {bench.model}; {bench.items} judgments × K={bench.k}, "
        f"{bench.candidates} candidates, {bench.concurrency} judgments at once",
        f"{'pass':<24}{'judgments/s':>12}{'seconds':>10}{'out tok/judg':>14}{'in tok/judg':>13}"
        f"{'cached/judg':>13}{'failed runs':>13}",
    ]
    for p in passes:
        n = max(p.judgments + p.failed_judgments, 1)  # the tokens of a judgment short of its quorum count too
        lines.append(
            f"{p.name:<24}{p.per_second:>12.3f}{p.seconds:>10.1f}"
            f"{p.usage.output_tokens / n:>14.0f}{p.usage.input_tokens / n:>13.0f}{p.usage.cached_tokens / n:>13.0f}"
            f"{p.failed_runs:>13}"
        )
    ratio = lean.per_second / bare.per_second if bare.per_second else 0.0
    lines.append(f"throughput pcfjudge / bare client: {ratio:.3f} (target ≥ 0.95)")
    short = [f"{p.name} {p.failed_judgments}" for p in passes if p.failed_judgments]
    if short:
        lines.append(f"judgments short of their quorum (the model's output failed, not the engine): {', '.join(short)}")
    if lean.usage.cached_tokens and lean.one_call_input:
        evaluated = (lean.usage.input_tokens - lean.usage.cached_tokens) / max(
            lean.judgments + lean.failed_judgments, 1
        )
        one = statistics.mean(lean.one_call_input)
        lines.append(
            f"prompt tokens evaluated per K={bench.k} judgment: {evaluated:.0f} = {evaluated / one:.2f}× one call's "
            f"{one:.0f} (target ≤ 1.5×; the rest came from the engine's prefix cache)"
        )
    else:
        lines.append(
            "prompt tokens evaluated: the engine reports no cached prompt tokens (llama-server and vLLM with "
            "--enable-prompt-tokens-details do)"
        )
    saved = 1 - lean.usage.output_tokens / full.usage.output_tokens if full.usage.output_tokens else 0.0
    both = lean.winners.keys() & full.winners.keys()
    same = sum(1 for q in both if lean.winners[q] == full.winners[q])
    lines.append(
        f"rationales off: {saved:.0%} fewer output tokens, {lean.seconds:.1f}s vs {full.seconds:.1f}s for the same "
        f"judgments; consensus winners the same in {same} of the {len(both)} both completed"
    )
    return "\n".join(lines)
