"""Cold vs warm: the same items judged twice through the service code (validation, runner, cache, consensus,
response shaping; no HTTP), reporting latency percentiles and backend calls per phase, measured in one run.

Items carry a random run id, so a shared Redis never makes the cold phase warm. With Redis, a third phase judges
the items on a second, fresh ``Services`` (empty memory layer): what another replica pays for a Redis hit.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from dataclasses import dataclass, field

from pcfjudge import ListwiseRequest
from pcfjudge.surface import Services, Settings, listwise_in_process


@dataclass(frozen=True, slots=True)
class CacheBench:
    items: int = 20
    k: int = 7
    candidates: int = 4
    concurrency: int = 1
    sim_latency_ms: float = 200.0
    redis_url: str | None = None
    model: str = "sim:default"


@dataclass(slots=True)
class Phase:
    name: str
    latencies_ms: list[float] = field(default_factory=list)
    backend_calls: int = 0
    cache_hits: int = 0

    def percentile(self, q: float) -> float:
        data = sorted(self.latencies_ms)
        return data[min(len(data) - 1, max(0, round(q * (len(data) - 1))))]


def _requests(bench: CacheBench) -> list[ListwiseRequest]:
    run = uuid.uuid4().hex[:8]
    return [
        ListwiseRequest(
            question=f"[bench {run}] Which answer to question {i} is best?",
            candidates=[f"Candidate {c} for question {i}: a plausible answer." for c in range(bench.candidates)],
            k=bench.k,
            model=bench.model,
        )
        for i in range(bench.items)
    ]


async def _phase(name: str, services: Services, requests: list[ListwiseRequest], concurrency: int) -> Phase:
    phase = Phase(name)
    gate = asyncio.Semaphore(concurrency)

    async def one(body: ListwiseRequest) -> None:
        async with gate:
            started = time.perf_counter()
            result, _ = await listwise_in_process(services, body, "bench")
            phase.latencies_ms.append((time.perf_counter() - started) * 1000)
            phase.backend_calls += result.backend_calls
            phase.cache_hits += result.cache_hits

    await asyncio.gather(*(one(body) for body in requests))
    return phase


async def run(bench: CacheBench) -> list[Phase]:
    settings = Settings(sim_latency_ms=bench.sim_latency_ms, redis_url=bench.redis_url)
    requests = _requests(bench)
    services = Services.build(settings)
    try:
        phases = [await _phase("cold", services, requests, bench.concurrency)]
        phases.append(await _phase("warm", services, requests, bench.concurrency))
    finally:
        await services.aclose()
    if settings.cache.redis_url:
        replica = Services.build(settings)
        try:
            phases.append(await _phase("warm, other replica", replica, requests, bench.concurrency))
        finally:
            await replica.aclose()
    return phases


def format_report(bench: CacheBench, phases: list[Phase]) -> str:
    cache = f"redis+memory ({bench.redis_url})" if bench.redis_url else "memory"
    lines = [
        f"pcfjudge bench cache: {bench.items} items × K={bench.k}, {bench.candidates} candidates, "
        f"concurrency {bench.concurrency}, {bench.model} at {bench.sim_latency_ms:g} ms per call, cache {cache}",
        f"{'phase':<22}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}{'backend calls':>15}{'cache hits':>12}",
    ]
    for p in phases:
        lines.append(
            f"{p.name:<22}{p.percentile(0.5):>10.2f}{p.percentile(0.95):>10.2f}"
            f"{statistics.fmean(p.latencies_ms):>10.2f}{p.backend_calls:>15}{p.cache_hits:>12}"
        )
    cold, warm = phases[0], phases[1]
    lines.append(
        f"cold/warm: p50 {cold.percentile(0.5) / warm.percentile(0.5):.0f}×, "
        f"p95 {cold.percentile(0.95) / warm.percentile(0.95):.0f}×; backend calls {cold.backend_calls} → "
        f"{warm.backend_calls}"
    )
    for p in phases[2:]:
        lines.append(
            f"cold/{p.name}: p50 {cold.percentile(0.5) / p.percentile(0.5):.0f}×; backend calls {p.backend_calls}"
        )
    return "\n".join(lines)
