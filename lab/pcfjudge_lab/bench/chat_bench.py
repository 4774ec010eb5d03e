"""``pcfjudge bench chat``: a framework's own judge prompt on the bundled JudgeBench pairs, sent to a position-biased
judge straight and through ``POST /v1/chat/completions``, side by side in one run.

Each pair is rendered with MT-Bench's ``pair-v2`` prompt (lm-sys/FastChat, Apache-2.0:
fastchat/llm_judge/data/judge_prompts.jsonl) in both orders, as a framework that judges both orders sends it:

* straight: one call per order to the simulated judge (``sim:default``'s own answer to a chat call, with its
  first-position preference), its verdict read by the template's parser (MT-Bench's ``[[A]]``/``[[B]]``/``[[C]]``);
* through the chat door: the same two requests to ``/v1/chat/completions`` (the whole HTTP app in process, the same
  judge), each judged in both orders; the second request's calls are the first's, from the cache.

Printed: accuracy against JudgeBench's labels (a tie counts half), order consistency (the share of pairs whose two
orders named the same winner, or both a tie), and the judge calls each made (through the door: fresh calls and cache
hits). The simulated judge's quality is a seeded draw per answer, not a reading of it: its accuracy is near chance
either way; the consistency is what the door changes.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from pcfjudge.surface import Settings, create_app, recognise_template

from pcfjudge_lab.eval.data import bundled
from pcfjudge_lab.eval.judgebench.loader import JudgeBenchPair, load_judgebench
from pcfjudge_lab.fakeprovider.fake_task import chat_answer

# MT-Bench's pair-v2 judge prompt (lm-sys/FastChat, Apache-2.0):
# https://github.com/lm-sys/FastChat/blob/main/fastchat/llm_judge/data/judge_prompts.jsonl
MT_BENCH_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to the "
    "user question displayed below. You should choose the assistant that follows the user's instructions and answers "
    "the user's question better. Your evaluation should consider factors such as the helpfulness, relevance, accuracy, "
    "depth, creativity, and level of detail of their responses. Begin your evaluation by comparing the two responses "
    "and provide a short explanation. Avoid any positional biases and ensure that the order in which the responses "
    "were presented does not influence your decision. Do not allow the length of the responses to influence your "
    "evaluation. Do not favor certain names of the assistants. Be as objective as possible. After providing your "
    'explanation, output your final verdict by strictly following this format: "[[A]]" if assistant A is better, '
    '"[[B]]" if assistant B is better, and "[[C]]" for a tie.'
)
MT_BENCH_TEMPLATE = (
    "[User Question]\n{question}\n\n[The Start of Assistant A's Answer]\n{answer_a}\n[The End of Assistant A's "
    "Answer]\n\n[The Start of Assistant B's Answer]\n{answer_b}\n[The End of Assistant B's Answer]"
)


def mt_bench(question: str, a: str, b: str) -> list[dict[str, str]]:
    user = MT_BENCH_TEMPLATE.format(question=question, answer_a=a, answer_b=b)
    return [{"role": "system", "content": MT_BENCH_SYSTEM}, {"role": "user", "content": user}]


@dataclass(slots=True)
class Way:
    """One way of judging: each pair's winner in each order ("a", "b" or "tie", in JudgeBench's labels)."""

    name: str
    winners: list[tuple[str, str]] = field(default_factory=list)
    calls: int = 0  # judge calls made
    cache_hits: int = 0
    unreadable: int = 0  # answers the framework's parser could not read
    seconds: float = 0.0


def _winner(verdict: object, shown_first: str) -> str:
    """A parsed pair verdict (+1 the first shown better, 0 tie, -1 the second) as JudgeBench's a / b / tie."""
    if not isinstance(verdict, int) or verdict == 0:
        return "tie"
    other = "b" if shown_first == "a" else "a"
    return shown_first if verdict > 0 else other


def _read(messages: list[dict[str, str]], text: str) -> object:
    found = recognise_template(tuple((m["role"], m["content"]) for m in messages))
    assert found is not None, "the MT-Bench prompt is a template the service knows"
    return found.template.verdicts.read(text, found.labels)


def _orders(pair: JudgeBenchPair) -> list[tuple[str, list[dict[str, str]]]]:
    return [
        ("a", mt_bench(pair.question, pair.response_a, pair.response_b)),
        ("b", mt_bench(pair.question, pair.response_b, pair.response_a)),
    ]


def straight(pairs: list[JudgeBenchPair]) -> Way:
    out = Way("straight to the judge")
    started = time.perf_counter()
    for pair in pairs:
        seen = []
        for first, messages in _orders(pair):
            text = chat_answer(tuple((m["role"], m["content"]) for m in messages), seed=0)
            out.calls += 1
            verdict = _read(messages, text or "")
            out.unreadable += verdict is None
            seen.append(_winner(verdict, first))
        out.winners.append((seen[0], seen[1]))
    out.seconds = time.perf_counter() - started
    return out


async def through(pairs: list[JudgeBenchPair], concurrency: int = 8) -> Way:
    out = Way("through /v1/chat/completions")
    out.winners = [("", "")] * len(pairs)
    app = create_app(Settings())
    limit = asyncio.Semaphore(concurrency)
    started = time.perf_counter()
    async with LifespanManager(app) as managed:
        transport = httpx.ASGITransport(app=managed.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=60) as client:

            async def one(i: int, pair: JudgeBenchPair) -> None:
                seen = []
                async with limit:
                    for first, messages in _orders(pair):  # in turn: the second order is the first's, cached
                        body: dict[str, Any] = {"model": "sim:default", "messages": messages, "temperature": 0}
                        reply = (await client.post("/v1/chat/completions", json=body)).json()
                        usage = reply["pcfjudge"]["usage"]
                        out.calls += usage["backend_calls"]
                        out.cache_hits += usage["cache_hits"]
                        verdict = _read(messages, reply["choices"][0]["message"]["content"])
                        out.unreadable += verdict is None
                        seen.append(_winner(verdict, first))
                out.winners[i] = (seen[0], seen[1])

            await asyncio.gather(*(one(i, p) for i, p in enumerate(pairs)))
    out.seconds = time.perf_counter() - started
    return out


@dataclass(frozen=True, slots=True)
class Figures:
    accuracy: float  # over every request (two per pair); a tie counts half
    consistency: float  # pairs whose two orders named the same winner (or both a tie)
    first_shown_wins: float  # requests whose verdict was the answer shown first


def figures(path: Way, pairs: list[JudgeBenchPair]) -> Figures:
    truth = {"A>B": "a", "B>A": "b", "A=B": "tie"}
    score = 0.0
    first = 0
    for (w1, w2), pair in zip(path.winners, pairs, strict=True):
        t = truth[pair.label]
        for w in (w1, w2):
            score += 1.0 if w == t else 0.5 if "tie" in (w, t) else 0.0
        first += (w1 == "a") + (w2 == "b")
    n = len(pairs)
    consistent = sum(1 for w1, w2 in path.winners if w1 == w2)
    return Figures(score / (2 * n), consistent / n, first / (2 * n))


async def run(pairs_path: Path | None, limit: int | None) -> tuple[list[JudgeBenchPair], Way, Way]:
    pairs = load_judgebench(pairs_path or bundled("judgebench:gpt-4o"), limit)
    return pairs, straight(pairs), await through(pairs)


def format_report(pairs: list[JudgeBenchPair], paths: list[Way]) -> str:
    lines = [
        f"pcfjudge bench chat: {len(pairs)} JudgeBench pairs, MT-Bench pair-v2 prompt, each pair sent in both orders "
        "(2 requests a pair), judge sim:default (prefers the answer shown first)",
        f"{'':32} {'accuracy':>9} {'consistent':>11} {'first wins':>11} {'calls':>7} {'cache hits':>11} "
        f"{'calls/pair':>11} {'unreadable':>11} {'seconds':>8}",
    ]
    for path in paths:
        f = figures(path, pairs)
        lines.append(
            f"{path.name:32} {f.accuracy:>9.3f} {f.consistency:>11.3f} {f.first_shown_wins:>11.3f} {path.calls:>7} "
            f"{path.cache_hits:>11} {path.calls / len(pairs):>11.2f} {path.unreadable:>11} {path.seconds:>8.2f}"
        )
    lines.append(
        "accuracy: against JudgeBench's labels, over every request, a tie counting half; consistent: pairs whose two "
        "orders named the same winner (or both a tie); first wins: requests won by the answer shown first"
    )
    return "\n".join(lines)
