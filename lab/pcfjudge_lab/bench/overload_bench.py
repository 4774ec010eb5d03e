"""``pcfjudge bench overload``: what admission control and cancellation do under a flood of slow requests.

Each scenario starts its own ``pcfjudge serve`` in front of the fake provider (fixed latency per call, OpenAI wire
protocol), on embedded defaults otherwise (backend concurrency 16, 256 queued calls, 120 s deadline):

1. **flood**: ``--requests`` concurrent K=``--k`` requests for distinct items. Reported: how many were judged (200)
   and refused (503 + Retry-After), how long the slowest refusal took, p50/p99 of the judged ones.
2. **walk-away** (same server): ``--leavers`` concurrent requests whose clients give up after ``--leave-after``
   seconds. Reported: provider calls received while they waited and after they had all gone, and how long a K=1
   request sent right afterwards took.
3. **cold-start**: a fresh server (nothing measured yet), ``--burst`` concurrent K=1 requests (``cache: bypass``)
   with a ``--deadline`` s request deadline against a provider answering in ``--cold-latency-ms``.
4. **hung-provider**: a fresh server warmed with ``--warm`` K=1 requests at ``--warm-latency-ms``, then the provider
   slows to ``--hung-latency-ms`` (past the deadline) and two bursts like the cold-start one follow, the second
   after the first has ended.

For 3 and 4: judged (200), refused (503 + Retry-After), timed out (504) and other, refusal latency p50/max, and the
share of the requests that could not be served that waited for a 504 (the issue 22 target: at most 5%, refusals
within max(2 s, one provider latency)).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from pcfjudge_lab.bench.procs import Proc, free_port, http_ok, pcfjudge

SCENARIOS = ("flood", "walk-away", "cold-start", "hung-provider")


@dataclass(frozen=True, slots=True)
class OverloadBench:
    requests: int = 500
    k: int = 7
    latency_ms: float = 2000.0
    leavers: int = 48
    leave_after_s: float = 2.0
    max_pending: int | None = None  # PCFJ_MAX_PENDING_REQUESTS for the server (None: its default)
    scenarios: tuple[str, ...] = SCENARIOS
    burst: int = 200
    deadline_s: float = 15.0
    cold_latency_ms: float = 3000.0
    warm: int = 32
    warm_latency_ms: float = 2000.0
    hung_latency_ms: float = 30_000.0


def _item(i: int, k: int, **extra: Any) -> dict[str, Any]:
    question = f"Overload item {i}: which answer is right?"
    body = {"question": question, "candidates": ["one", "two", "three", "four"], "k": k, "include_runs": False}
    return body | extra


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


def _set_latency(fake_url: str, latency_ms: float) -> None:
    httpx.post(f"{fake_url}/_control/faults", json={"latency_ms": latency_ms}, timeout=10).raise_for_status()


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


async def _burst(url: str, n: int, first: int) -> dict[str, Any]:
    """``n`` concurrent K=1 requests (cache bypassed): counts by outcome and how fast refusals came."""
    limits = httpx.Limits(max_connections=n + 10)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:

        async def one(i: int) -> tuple[int, float]:
            started = time.perf_counter()
            response = await client.post("/judge/listwise", json=_item(first + i, 1, cache="bypass"))
            return response.status_code, time.perf_counter() - started

        results = await asyncio.gather(*(one(i) for i in range(n)))
    refused = sorted(s for code, s in results if code == 503)
    judged = sum(1 for code, _ in results if code == 200)
    timed_out = sum(1 for code, _ in results if code == 504)
    unserved = n - judged
    return {
        "judged": judged,
        "refused_503": len(refused),
        "timed_out_504": timed_out,
        "other": n - judged - len(refused) - timed_out,
        "refusal_p50_s": round(statistics.median(refused), 3) if refused else None,
        "refusal_max_s": round(max(refused), 3) if refused else None,
        "waited_to_504_share": round(timed_out / unserved, 4) if unserved else 0.0,
    }


@contextmanager
def _servers(bench: OverloadBench, latency_ms: float, **env: str) -> Iterator[tuple[str, str]]:
    """The fake provider at ``latency_ms`` per call and ``pcfjudge serve`` in front of it: (serve URL, fake URL)."""
    with tempfile.TemporaryDirectory(prefix="pcfjudge-overload-") as tmp:
        work = Path(tmp)
        fake_port, port = free_port(), free_port()
        fake_url, url = f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{port}"
        fake_argv = pcfjudge("fake-provider", "--port", str(fake_port), "--latency-ms", str(latency_ms))
        fake = Proc("fake-provider", fake_argv, work / "fake.log", lambda: http_ok(f"{fake_url}/healthz"))
        serve_env = {
            "OPENAI_API_KEY": "bench-key",
            "PCFJ_OPENAI_BASE_URL": f"{fake_url}/v1",
            "PCFJ_DEFAULT_MODEL": "openai:bench-judge",
            **env,
        }
        if bench.max_pending is not None:
            serve_env["PCFJ_MAX_PENDING_REQUESTS"] = str(bench.max_pending)
        serve_argv = pcfjudge("serve", "--port", str(port), "--log-level", "warning")
        serve = Proc("pcfjudge serve", serve_argv, work / "serve.log", lambda: http_ok(f"{url}/healthz"), serve_env)
        fake.start()
        serve.start()
        try:
            yield url, fake_url
        finally:
            serve.stop()
            fake.stop()


def _cold_start(bench: OverloadBench) -> dict[str, Any]:
    env = {"PCFJ_REQUEST_TIMEOUT_S": str(bench.deadline_s), "PCFJ_MAX_RETRIES": "0"}
    with _servers(bench, bench.cold_latency_ms, **env) as (url, _fake):
        return asyncio.run(_burst(url, bench.burst, 20_000))


async def _warm(url: str, n: int) -> int:
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        replies = await asyncio.gather(
            *(client.post("/judge/listwise", json=_item(30_000 + i, 1, cache="bypass")) for i in range(n))
        )
    return sum(1 for r in replies if r.status_code == 200)


def _hung_provider(bench: OverloadBench) -> dict[str, Any]:
    env = {"PCFJ_REQUEST_TIMEOUT_S": str(bench.deadline_s), "PCFJ_MAX_RETRIES": "0"}
    with _servers(bench, bench.warm_latency_ms, **env) as (url, fake_url):
        warmed = asyncio.run(_warm(url, bench.warm))
        _set_latency(fake_url, bench.hung_latency_ms)
        first = asyncio.run(_burst(url, bench.burst, 40_000))
        second = asyncio.run(_burst(url, bench.burst, 50_000))
        _set_latency(fake_url, 0)
    return {"warmed": warmed, "first_burst": first, "second_burst": second}


def run(bench: OverloadBench) -> dict[str, Any]:
    result: dict[str, Any] = {"bench": bench.__class__.__name__, **vars_of(bench)}
    if "flood" in bench.scenarios or "walk-away" in bench.scenarios:
        with _servers(bench, bench.latency_ms) as (url, fake_url):
            if "flood" in bench.scenarios:
                result["flood"] = asyncio.run(_flood(url, bench))
            if "walk-away" in bench.scenarios:
                result["walk_away"] = asyncio.run(_walk_away(url, fake_url, bench))
    if "cold-start" in bench.scenarios:
        result["cold_start"] = _cold_start(bench)
    if "hung-provider" in bench.scenarios:
        result["hung_provider"] = _hung_provider(bench)
    return result


def vars_of(bench: OverloadBench) -> dict[str, Any]:
    return {name: getattr(bench, name) for name in bench.__slots__}


def _burst_lines(burst: dict[str, Any]) -> list[str]:
    return [
        f"  judged (200) / refused (503) / timed out (504) / other   "
        f"{burst['judged']} / {burst['refused_503']} / {burst['timed_out_504']} / {burst['other']}",
        f"  refusal latency p50 / max              {burst['refusal_p50_s']} s / {burst['refusal_max_s']} s",
        f"  of those not served, waited to a 504   {100 * burst['waited_to_504_share']:.1f}%",
    ]


def format_report(result: dict[str, Any]) -> str:
    lines: list[str] = []
    if "flood" in result:
        flood = result["flood"]
        lines += [
            f"flood: {result['requests']} concurrent K={result['k']} requests, provider latency "
            f"{result['latency_ms']:g} ms, PCFJ_MAX_PENDING_REQUESTS={result['max_pending'] or 'default'}",
            f"  judged (200)            {flood['judged']}",
            f"  refused (503)           {flood['refused_503']}  p50 {flood['refusal_p50_s']} s, "
            f"slowest {flood['slowest_refusal_s']} s",
            f"  other statuses          {flood['other']}",
            f"  judged p50 / p99        {flood['judged_p50_s']} s / {flood['judged_p99_s']} s",
        ]
    if "walk_away" in result:
        walk = result["walk_away"]
        lines += [
            f"walk-away: {result['leavers']} clients give up after {result['leave_after_s']:g} s",
            f"  provider calls while they waited   {walk['calls_while_waiting']}",
            f"  provider calls after all had left  {walk['calls_after_all_left']}",
            f"  next K=1 request                   {walk['next_k1_status']} in {walk['next_k1_request_s']} s",
        ]
    if "cold_start" in result:
        lines.append(
            f"cold-start: {result['burst']} concurrent K=1 requests on a fresh server, provider latency "
            f"{result['cold_latency_ms']:g} ms, deadline {result['deadline_s']:g} s"
        )
        lines += _burst_lines(result["cold_start"])
    if "hung_provider" in result:
        hung = result["hung_provider"]
        lines.append(
            f"hung-provider: warmed with {hung['warmed']} calls at {result['warm_latency_ms']:g} ms, then the provider "
            f"takes {result['hung_latency_ms']:g} ms; {result['burst']} concurrent K=1 requests, deadline "
            f"{result['deadline_s']:g} s"
        )
        lines.append(" first burst:")
        lines += _burst_lines(hung["first_burst"])
        lines.append(" second burst (after the first ended):")
        lines += _burst_lines(hung["second_burst"])
    return "\n".join(lines)
