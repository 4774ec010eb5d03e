"""``pcfjudge bench overload``: what admission control and cancellation do under a flood of slow requests.

One ``pcfjudge serve`` in front of the fake provider (fixed latency per call, OpenAI wire protocol), on embedded
defaults otherwise (backend concurrency 16, 256 queued calls, 120 s deadline):

1. **flood**: ``--requests`` concurrent K=``--k`` requests for distinct items. Reported: how many were judged (200)
   and refused (503 + Retry-After), how long the slowest refusal took, p50/p99 of the judged ones.
2. **walk-away**: ``--leavers`` concurrent requests whose clients give up after ``--leave-after`` seconds. Reported:
   provider calls received while they waited and after they had all gone, and how long a K=1 request sent right
   afterwards took.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from pcfjudge.bench.procs import Proc, free_port, http_ok, pcfjudge


@dataclass(frozen=True, slots=True)
class OverloadBench:
    requests: int = 500
    k: int = 7
    latency_ms: float = 2000.0
    leavers: int = 48
    leave_after_s: float = 2.0
    max_pending: int | None = None  # PCFJ_MAX_PENDING_REQUESTS for the server (None: its default)


def _item(i: int, k: int) -> dict[str, Any]:
    question = f"Overload item {i}: which answer is right?"
    return {"question": question, "candidates": ["one", "two", "three", "four"], "k": k, "include_runs": False}


async def _flood(url: str, bench: OverloadBench) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=bench.requests + 10)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:

        async def one(i: int) -> tuple[int, float]:
            started = time.perf_counter()
            response = await client.post("/judge/listwise", json=_item(i, bench.k))
            return response.status_code, time.perf_counter() - started

        results = await asyncio.gather(*(one(i) for i in range(bench.requests)))
    judged = sorted(s for code, s in results if code == 200)
    refused = [s for code, s in results if code == 503]
    return {
        "judged": len(judged),
        "refused_503": len(refused),
        "other": len(results) - len(judged) - len(refused),
        "refusal_p50_s": round(statistics.median(refused), 3) if refused else None,
        "slowest_refusal_s": round(max(refused), 3) if refused else None,
        "judged_p50_s": round(statistics.median(judged), 3) if judged else None,
        "judged_p99_s": round(judged[min(len(judged) - 1, int(len(judged) * 0.99))], 3) if judged else None,
    }


def _provider_calls(fake_url: str) -> int:
    calls: dict[str, int] = httpx.get(f"{fake_url}/_control/calls", params={"last": 0}, timeout=10).json()["calls"]
    return sum(calls.values())


async def _walk_away(url: str, fake_url: str, bench: OverloadBench) -> dict[str, Any]:
    before = _provider_calls(fake_url)
    async with httpx.AsyncClient(base_url=url, timeout=bench.leave_after_s) as client:
        await asyncio.gather(
            *(client.post("/judge/listwise", json=_item(10_000 + i, bench.k)) for i in range(bench.leavers)),
            return_exceptions=True,
        )
    gone = _provider_calls(fake_url)
    await asyncio.sleep(3 * bench.latency_ms / 1000 + 1)  # long enough for queued calls to have started
    later = _provider_calls(fake_url)
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        status = (await client.post("/judge/listwise", json=_item(99_999, 1))).status_code
    return {
        "calls_while_waiting": gone - before,
        "calls_after_all_left": later - gone,
        "next_k1_request_s": round(time.perf_counter() - started, 3),
        "next_k1_status": status,
    }


def run(bench: OverloadBench) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pcfjudge-overload-") as tmp:
        work = Path(tmp)
        fake_port, port = free_port(), free_port()
        fake_url, url = f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{port}"
        fake_argv = pcfjudge("fake-provider", "--port", str(fake_port), "--latency-ms", str(bench.latency_ms))
        fake = Proc("fake-provider", fake_argv, work / "fake.log", lambda: http_ok(f"{fake_url}/healthz"))
        env = {
            "OPENAI_API_KEY": "bench-key",
            "PCFJ_OPENAI_BASE_URL": f"{fake_url}/v1",
            "PCFJ_DEFAULT_MODEL": "openai:bench-judge",
        }
        if bench.max_pending is not None:
            env["PCFJ_MAX_PENDING_REQUESTS"] = str(bench.max_pending)
        serve_argv = pcfjudge("serve", "--port", str(port), "--log-level", "warning")
        serve = Proc("pcfjudge serve", serve_argv, work / "serve.log", lambda: http_ok(f"{url}/healthz"), env)
        fake.start()
        serve.start()
        try:
            flood = asyncio.run(_flood(url, bench))
            walk = asyncio.run(_walk_away(url, fake_url, bench))
        finally:
            serve.stop()
            fake.stop()
    return {"bench": bench.__class__.__name__, **vars_of(bench), "flood": flood, "walk_away": walk}


def vars_of(bench: OverloadBench) -> dict[str, Any]:
    return {name: getattr(bench, name) for name in bench.__slots__}


def format_report(result: dict[str, Any]) -> str:
    flood, walk = result["flood"], result["walk_away"]
    lines = [
        f"flood: {result['requests']} concurrent K={result['k']} requests, provider latency {result['latency_ms']:g} ms, "
        f"PCFJ_MAX_PENDING_REQUESTS={result['max_pending'] or 'default'}",
        f"  judged (200)            {flood['judged']}",
        f"  refused (503)           {flood['refused_503']}  p50 {flood['refusal_p50_s']} s, "
        f"slowest {flood['slowest_refusal_s']} s",
        f"  other statuses          {flood['other']}",
        f"  judged p50 / p99        {flood['judged_p50_s']} s / {flood['judged_p99_s']} s",
        f"walk-away: {result['leavers']} clients give up after {result['leave_after_s']:g} s",
        f"  provider calls while they waited   {walk['calls_while_waiting']}",
        f"  provider calls after all had left  {walk['calls_after_all_left']}",
        f"  next K=1 request                   {walk['next_k1_status']} in {walk['next_k1_request_s']} s",
    ]
    return "\n".join(lines)
