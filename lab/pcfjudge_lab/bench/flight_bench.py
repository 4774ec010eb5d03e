"""``pcfjudge bench flight``: single flight across replicas on a busy machine, cold start after cold start.

Each run starts ``replicas`` fresh ``pcfjudge serve`` processes on one private Redis (emptied first) and the fake
provider (its counts reset), waits until each answers ``/readyz`` (Redis connected, pool warm), then keeps every core
busy with one busy-loop process per core while it sends ``requests`` concurrent identical K-run requests spread over
the replicas, and counts the provider calls they cost: single flight holds when that is exactly K. It also reads
what the replicas' ``/metrics`` say fail-open cost (calls made without the shared single flight, and duplicates) and
checks that every answer agrees and that Redis holds K answers and no lock. Printed per run and in total; exit 1
if any run made other than K calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis

from pcfjudge_lab.bench.procs import Fleet, Proc, busy_cores, free_port, http_ok, pcfjudge

MODEL = "openai:flight-judge"
QUESTION = "Which city is the capital of Australia?"
CANDIDATES = ["Sydney.", "Canberra.", "Melbourne, since 1901.", "I am not sure; possibly Canberra."]
FAIL_OPEN = ("pcfjudge_single_flight_unavailable_calls_total", "pcfjudge_single_flight_duplicates_total")


@dataclass(frozen=True, slots=True)
class FlightBench:
    runs: int = 20
    replicas: int = 3
    requests: int = 30
    k: int = 5
    latency_ms: float = 400.0
    busy: int = field(default_factory=lambda: os.cpu_count() or 1)  # busy-loop processes during each burst


@dataclass(frozen=True, slots=True)
class FlightRun:
    calls: int  # provider calls the burst cost
    answered: int  # 200s
    agree: bool  # every answer the same judgment
    keys: int  # keys left in Redis: K answers, no lock
    alone: int  # calls made without the shared single flight (the replicas' /metrics)
    duplicates: int  # answers stored twice
    seconds: float  # the burst's wall time

    def held(self, bench: FlightBench) -> bool:
        return self.calls == bench.k and self.answered == bench.requests and self.agree and self.keys == bench.k


def run(bench: FlightBench, workdir: Path | None = None, say: Callable[[str], None] = print) -> list[FlightRun]:
    with contextlib.ExitStack() as stack:
        work = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pcfjudge-flight-")))
        work.mkdir(parents=True, exist_ok=True)
        fleet = Fleet(work, 0, {}, ["--latency-ms", str(bench.latency_ms)])  # Redis and the fake provider only
        stack.callback(fleet.close)
        fleet.redis.start()
        fleet.fake.start()
        results = []
        for n in range(bench.runs):
            result = _one(bench, fleet, work / f"run-{n}")
            results.append(result)
            say(f"run {n + 1}/{bench.runs}: {_line(result)}")
        return results


def _one(bench: FlightBench, fleet: Fleet, logs: Path) -> FlightRun:
    logs.mkdir(parents=True, exist_ok=True)
    with redis.Redis(port=fleet.redis_port, socket_timeout=10) as client:
        client.flushall()
    httpx.post(f"{fleet.fake_url}/_control/reset", timeout=10).raise_for_status()
    env = {
        "OPENAI_API_KEY": "flight-key",
        "PCFJ_OPENAI_BASE_URL": f"{fleet.fake_url}/v1",
        "PCFJ_REDIS_URL": fleet.redis_url,
        "PCFJ_ALLOWED_MODELS": f'["{MODEL}"]',
    }
    replicas, urls = [], []
    for i in range(bench.replicas):
        url = f"http://127.0.0.1:{free_port()}"
        argv = pcfjudge("serve", "--port", url.rsplit(":", 1)[1], "--log-level", "warning")
        replicas.append(Proc(f"replica-{i}", argv, logs / f"replica-{i}.log", _ready(url), env))
        urls.append(url)
    try:
        for replica in replicas:
            replica.launch()  # cold: all three start at once, as a rollout or a scale-up does
        for replica in replicas:
            replica.wait_ready(120)
        with busy_cores(bench.busy):
            started = time.perf_counter()
            bodies = asyncio.run(_burst(urls, bench))
            seconds = time.perf_counter() - started
        alone, duplicates = (sum(_counter(url, name) for url in urls) for name in FAIL_OPEN)
    finally:
        for replica in replicas:
            replica.stop(30)
    calls = httpx.get(f"{fleet.fake_url}/_control/calls", params={"last": 0}, timeout=10).json()["calls"]
    with redis.Redis(port=fleet.redis_port, socket_timeout=10) as client:
        keys = len(client.keys("pcfj:*"))
    answers = [_judgment(b) for b in bodies if b is not None]
    agree = bool(answers) and all(a == answers[0] for a in answers)
    return FlightRun(sum(calls.values()), len(answers), agree, keys, alone, duplicates, seconds)


async def _burst(urls: list[str], bench: FlightBench) -> list[dict[str, Any] | None]:
    payload = {"question": QUESTION, "candidates": CANDIDATES, "k": bench.k, "model": MODEL}
    async with httpx.AsyncClient(timeout=120) as client:

        async def one(i: int) -> dict[str, Any] | None:
            response = await client.post(f"{urls[i % len(urls)]}/judge/listwise", json=payload)
            return response.json() if response.status_code == 200 else None

        return list(await asyncio.gather(*(one(i) for i in range(bench.requests))))


def _judgment(body: dict[str, Any]) -> tuple[Any, ...]:
    return body["winners"], body["ranking"], [r["judgments"] for r in body["runs"]]


def _ready(url: str) -> Callable[[], bool]:
    return lambda: http_ok(f"{url}/readyz")


def _counter(url: str, name: str) -> int:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    return round(float(found.group(1))) if found else 0


def _line(r: FlightRun) -> str:
    return (
        f"calls={r.calls} answered={r.answered} agree={r.agree} keys={r.keys} alone={r.alone} "
        f"duplicates={r.duplicates} burst={r.seconds:.2f}s"
    )


def format_report(bench: FlightBench, results: list[FlightRun]) -> str:
    held = sum(r.held(bench) for r in results)
    counts = sorted({r.calls for r in results})
    return "\n".join(
        [
            f"pcfjudge bench flight: {bench.runs} cold starts of {bench.replicas} replicas, {bench.requests} identical "
            f"K={bench.k} requests per burst, provider latency {bench.latency_ms:g} ms, {bench.busy} busy-loop "
            f"processes during each burst ({os.cpu_count()} cores)",
            f"calls = {bench.k} (single flight held, all answers agree, K keys and no lock left) in {held}/{len(results)}"
            f" runs; call counts seen: {counts}",
            f"calls made without the shared single flight: {sum(r.alone for r in results)}; duplicates stored: "
            f"{sum(r.duplicates for r in results)}",
        ]
    )
