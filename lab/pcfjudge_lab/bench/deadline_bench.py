"""``pcfjudge bench deadline``: how late a deadline's answer is, and how often it is still certified, against a judge
whose latency has a long tail (the simulated judge with a lognormal tail, through the whole HTTP app in process).

Two passes over the same fresh judgments (K runs each, cache bypassed):
* anchor: no deadline, as a trainer with no deadline gets it: every judgment waits for its slowest run;
* deadline: ``deadline_ms`` on each request: lateness = the answer's arrival − the deadline (negative: early), the
  share answered (200) and cut (stopped: deadline), the share of cut answers still certified, the runs they used.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from pcfjudge.surface import Settings, create_app


@dataclass(slots=True)
class Pass:
    """One pass's answers, by judgment (index i is item i in both passes)."""

    name: str
    seconds: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)


def _q(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


async def _pass(name: str, client: httpx.AsyncClient, judgments: int, k: int, extra: dict[str, Any], gate: int) -> Pass:
    done = Pass(name, [0.0] * judgments, [0] * judgments, [{} for _ in range(judgments)])
    limit = asyncio.Semaphore(gate)

    async def one(i: int) -> None:
        body = {
            "question": f"[{i}] Which answer is right?",  # the same items in both passes (cache bypassed)
            "candidates": ["Alpha.", "Beta.", "Gamma.", "Delta."],
            "k": k,
            "cache": "bypass",
            "include_runs": False,
            "rationales": False,
            **extra,
        }
        async with limit:
            started = time.perf_counter()
            reply = await client.post("/judge/listwise", json=body)
            done.seconds[i] = time.perf_counter() - started
        done.statuses[i], done.bodies[i] = reply.status_code, reply.json()

    await asyncio.gather(*(one(i) for i in range(judgments)))
    return done


async def run(judgments: int, k: int, deadline_ms: int, latency_ms: float, tail: float, gate: int) -> list[Pass]:
    settings = Settings(sim_latency_ms=latency_ms, sim_latency_tail=tail, backend_concurrency=gate * k, sim_seed=7)
    app = create_app(settings)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=600) as client:
            anchor = await _pass("anchor", client, judgments, k, {}, gate)
            cut = await _pass("deadline", client, judgments, k, {"deadline_ms": deadline_ms}, gate)
    return [anchor, cut]


def format_report(passes: list[Pass], k: int, deadline_ms: int, latency_ms: float, tail: float) -> str:
    anchor, cut = passes
    ms = [s * 1000 for s in anchor.seconds]
    late = [s * 1000 - deadline_ms for s in cut.seconds]
    answered = [b for s, b in zip(cut.statuses, cut.bodies, strict=True) if s == 200]
    stopped = [b for b in answered if b["diagnostics"]["stopped"] == "deadline"]
    certified = sum(1 for b in stopped if b["diagnostics"]["certified"])
    same = sum(
        1
        for a, b in zip(anchor.bodies, cut.bodies, strict=True)
        if "winners" in a and "winners" in b and a["winners"] == b["winners"]
    )
    runs = statistics.mean(b["diagnostics"]["runs_made"] for b in stopped) if stopped else 0.0
    n = len(cut.statuses)
    lines = [
        f"pcfjudge bench deadline: {n} judgments x K={k}, the simulated judge at {latency_ms:g} ms x U(0.5, 1.5) x "
        f"exp({tail:g}·N(0,1)) a call (a long tail), through the HTTP app in process",
        f"anchor, no deadline: latency p50 {_q(ms, 0.5):.0f} ms, p99 {_q(ms, 0.99):.0f} ms, max {max(ms):.0f} ms",
        f"deadline_ms {deadline_ms}: lateness p50 {_q(late, 0.5):+.1f} ms, p99 {_q(late, 0.99):+.1f} ms, "
        f"max {max(late):+.1f} ms (answer time − deadline)",
        f"  answered {len(answered)}/{n} (200), {n - len(answered)} x 504 (fewer than PCFJ_DEADLINE_MIN_RUNS runs); "
        f"cut by the deadline {len(stopped)}, of them certified {certified} ({certified / max(1, len(stopped)):.0%}); "
        f"{runs:.1f} of {k} runs in a cut answer",
        f"  winners as without a deadline: {same} of {n}",
    ]
    return "\n".join(lines)
