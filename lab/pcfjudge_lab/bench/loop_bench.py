"""``pcfjudge bench loop``: does the service stay responsive while large judgments run?

Starts the fake provider (a fixed latency per call) and ``pcfjudge serve`` judging through it over the OpenAI wire,
as ``pcfjudge bench http`` does, then measures in one run:

* ``/healthz`` latency (p50, p99, max) alone, probed every ``--probe-ms`` by one client;
* the same while ``--concurrent`` cold 1,000-document reranks (``/v2/rerank``, distinct queries) run at once, and
  how long they took;
* the CPU one such rerank costs the server process (its CPU seconds over the batch, per rerank);
* where that CPU goes: one rerank of the same size in process under ``cProfile``, its own time grouped by stage
  (HTTP and validation, planning the windows, rendering prompts, the provider's client, reading answers, fitting,
  the engine, shaping the response, the event loop);
* how jobs are shared between keys: key A queues ``--queued-jobs`` jobs of about a second on ``--job-workers``
  workers (in process, keys on), then key B sends one: how long B's job waits to start.

A judgment's CPU runs on the event loop; the figures say how long a probe waits behind it (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from pcfjudge_lab.bench.http_stack import CANDIDATES, Stack, cpu_s, rss_mb


@dataclass(slots=True)
class LoopBench:
    documents: int = 1000
    concurrent: int = 4
    latency_ms: float = 300.0
    probe_ms: float = 20.0
    alone_probes: int = 150
    queued_jobs: int = 100  # key A's backlog in the fairness phase (0: no fairness phase)
    job_workers: int = 4
    top_n: int = 0  # 0: the whole order (no top_n); else Cohere's top_n, a boundary ranking


@dataclass(slots=True)
class Measured:
    alone_ms: list[float] = field(default_factory=list)
    loaded_ms: list[float] = field(default_factory=list)
    rerank_s: list[float] = field(default_factory=list)
    cpu_per_rerank_s: float = 0.0
    rss_mb: tuple[float, float, float] = (0.0, 0.0, 0.0)  # the server's RSS before the reranks, its peak, after
    stages: dict[str, float] = field(default_factory=dict)  # share of one rerank's profiled own time
    profiled_s: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)
    fair_wait_s: float = 0.0  # key B's first job's wait to start while key A had ``queued_jobs`` queued
    fair_still_queued: int = 0  # of A's jobs, still queued when B's started


JOB_S = 1.0  # each fairness job: K=3 simulated calls of a second, run at once


def rerank_body(tag: str, documents: int, top_n: int = 0) -> dict[str, Any]:
    docs = [f"{CANDIDATES[j % len(CANDIDATES)]} (document {j})" for j in range(documents)]
    body: dict[str, Any] = {"model": "rerank-v3.5", "query": f"[{tag}] When was the Peace of Westphalia signed?"}
    return body | {"documents": docs} | ({"top_n": top_n} if top_n else {})


def _probe(url: str, every_s: float, stop: threading.Event, out: list[float], limit: int | None = None) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        while not stop.is_set() and (limit is None or len(out) < limit):
            started = time.perf_counter()
            reply = client.get("/healthz")
            if reply.status_code != 200:
                raise RuntimeError(f"/healthz answered {reply.status_code}")
            out.append((time.perf_counter() - started) * 1000)
            time.sleep(max(0.0, every_s - (time.perf_counter() - started)))


def _rerank(url: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    reply = httpx.post(f"{url}/v2/rerank", json=body, timeout=600)
    if reply.status_code != 200:
        raise RuntimeError(f"/v2/rerank answered {reply.status_code}: {reply.text[:300]}")
    return time.perf_counter() - started


def run(bench: LoopBench) -> Measured:
    out = Measured(load=(os.getloadavg()[0], 0.0))
    with tempfile.TemporaryDirectory(prefix="pcfjudge-loop-") as work:
        stack = Stack(Path(work), bench.latency_ms, backend_concurrency=1024, log_level="warning")
        try:
            stack.start(workers=1)
            _rerank(
                stack.url, rerank_body("warm-up", bench.documents, bench.top_n)
            )  # imports and first-use costs, not measured
            never = threading.Event()
            _probe(stack.url, bench.probe_ms / 1000, never, out.alone_ms, bench.alone_probes)
            stop = threading.Event()
            prober = threading.Thread(target=_probe, args=(stack.url, bench.probe_ms / 1000, stop, out.loaded_ms))
            cpu0, rss0 = cpu_s(stack.serve_pid), rss_mb(stack.serve_pid)
            prober.start()
            try:
                with ThreadPoolExecutor(bench.concurrent) as pool:
                    bodies = [rerank_body(f"cold {i}", bench.documents, bench.top_n) for i in range(bench.concurrent)]
                    out.rerank_s = list(pool.map(lambda b: _rerank(stack.url, b), bodies))
            finally:
                stop.set()
                prober.join()
            out.cpu_per_rerank_s = (cpu_s(stack.serve_pid) - cpu0) / bench.concurrent
            out.rss_mb = (rss0, rss_mb(stack.serve_pid, "VmHWM"), rss_mb(stack.serve_pid))
            out.profiled_s, out.stages = asyncio.run(_profile_one(stack, bench.documents, bench.top_n))
            if bench.queued_jobs:
                out.fair_wait_s, out.fair_still_queued = asyncio.run(
                    fairness(bench.queued_jobs, bench.job_workers, JOB_S)
                )
        finally:
            stack.close()
    out.load = (out.load[0], os.getloadavg()[0])
    return out


STAGES = (  # (stage, substrings of a code file's path), the first that matches
    ("planning windows", ("judging/window_rounds", "judging/windows")),
    ("fitting the scale", ("judging/window_fit",)),
    ("rendering prompts", ("judging/prompts", "judging/framing", "judging/permutations", "judging/cache_keys")),
    ("reading answers", ("judging/parse", "json/", "orjson", "judging/consensus", "judging/run_records")),
    (
        "provider client",
        (
            "/openai/",
            "/httpx",
            "/httpcore/",
            "/anyio/",
            "/h11/",
            "/aiohttp/",
            "/yarl/",
            "/multidict/",
            "backends/",
            "ssl.py",
            "socket",
        ),
    ),
    ("shaping the response", ("pcfjudge/doors/", "pcfjudge/http/")),
    ("HTTP and validation", ("/fastapi/", "/starlette/", "/pydantic", "pcfjudge/api/")),
    ("engine (runner, cache, metrics)", ("pcfjudge/engine/", "pcfjudge/cache/", "pcfjudge/telemetry/", "prometheus")),
    ("event loop", ("asyncio/",)),
)


def stage_of(path: str) -> str:
    for stage, marks in STAGES:
        if any(mark in path for mark in marks):
            return stage
    return "other"


async def _profile_one(stack: Stack, documents: int, top_n: int) -> tuple[float, dict[str, float]]:
    """One cold rerank in process (the same settings, the same fake provider) under cProfile: its own time by stage."""
    from asgi_lifespan import LifespanManager
    from pcfjudge.surface import Settings, create_app

    settings = Settings(
        openai_api_key=stack.env["OPENAI_API_KEY"],
        openai_base_url=stack.env["PCFJ_OPENAI_BASE_URL"],
        default_model=stack.env["PCFJ_DEFAULT_MODEL"],
        backend_concurrency=1024,
        max_queued_calls=1024,
    )
    app = create_app(settings)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=600) as client:
            await client.post("/v2/rerank", json=rerank_body("profile warm-up", documents, top_n))
            profile = cProfile.Profile()
            profile.enable()
            reply = await client.post("/v2/rerank", json=rerank_body("profiled", documents, top_n))
            profile.disable()
    if reply.status_code != 200:
        raise RuntimeError(f"/v2/rerank answered {reply.status_code} in process: {reply.text[:300]}")
    own: Counter[str] = Counter()
    for (path, _line, name), row in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        if name in IDLE:
            continue
        if path != "~":
            own[stage_of(path)] += row[2]
            continue
        for (caller, _l, _n), called in row[4].items():  # a builtin's time goes to the stage of each caller
            own[stage_of(caller)] += called[2]
    total = sum(own.values())
    return total, {stage: seconds / total for stage, seconds in own.most_common()}


IDLE = frozenset({"<method 'poll' of 'select.epoll' objects>", "select"})
"""Waiting for the provider's answers, not work: left out."""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def format_report(bench: LoopBench, m: Measured) -> str:
    def line(name: str, ms: list[float]) -> str:
        p50, p99, top = _pct(ms, 0.5), _pct(ms, 0.99), max(ms, default=float("nan"))
        return f"  /healthz {name:<40} p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  max {top:7.1f} ms  ({len(ms)} probes)"

    lines = [
        f"machine load average before and after: {m.load[0]:.2f}, {m.load[1]:.2f} (2 cores: above 2, probes also wait "
        "for a core)",
        f"pcfjudge bench loop: {bench.concurrent} cold reranks of {bench.documents} documents at once "
        f"({f'top_n {bench.top_n}' if bench.top_n else 'the whole order'}), the provider "
        f"answering in {bench.latency_ms:g} ms, /healthz probed every {bench.probe_ms:g} ms",
        line("alone", m.alone_ms),
        line(f"during {bench.concurrent} reranks of {bench.documents}", m.loaded_ms),
        f"  the reranks took {', '.join(f'{s:.1f}' for s in m.rerank_s)} s",
        f"  server CPU per rerank of {bench.documents} documents: {m.cpu_per_rerank_s * 1000:.0f} ms",
        f"  server RSS: {m.rss_mb[0]:.0f} MB before the reranks, {m.rss_mb[1]:.0f} MB at its peak, "
        f"{m.rss_mb[2]:.0f} MB after",
        f"  where one rerank's CPU goes (in process, cProfile, {m.profiled_s * 1000:.0f} ms profiled own time, idle "
        "waits left out):",
    ]
    lines += [f"    {share * 100:5.1f} %  {stage}" for stage, share in m.stages.items()]
    if bench.queued_jobs:
        fifo = bench.queued_jobs / bench.job_workers * JOB_S
        lines.append(
            f"  jobs: key B's first job started {m.fair_wait_s:.2f} s after it was sent, while key A had "
            f"{bench.queued_jobs} jobs of about {JOB_S:g} s queued on {bench.job_workers} workers "
            f"({m.fair_still_queued} still queued then; first come, first served it would wait about {fifo:.0f} s)"
        )
    return "\n".join(lines)


KEYS = "alice:alice-key-0123456789,bob:bob-key-0123456789"
ALICE, BOB = {"Authorization": "Bearer alice-key-0123456789"}, {"Authorization": "Bearer bob-key-0123456789"}


async def fairness(queued: int, workers: int, job_s: float) -> tuple[float, int]:
    """Key A queues ``queued`` jobs of about ``job_s`` each on ``workers`` workers (in process, the simulated judge);
    then key B sends one: how long B's job waited to start, and how many of A's were still queued then."""
    from asgi_lifespan import LifespanManager
    from pcfjudge.surface import Settings, create_app

    settings = Settings(api_keys=KEYS, job_workers=workers, sim_latency_ms=job_s * 1000, default_k=3)
    body = {"question": "How many moons does Mars have?", "candidates": ["Two.", "One.", "None."], "k": 3}
    app = create_app(settings)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=60) as client:

            async def submit(n: int, key: dict[str, str]) -> str:
                request = body | {"question": f"{body['question']} ({n})"}  # each its own item: no cache hit
                reply = await client.post(
                    "/v1/jobs", json={"endpoint": "/judge/listwise", "request": request}, headers=key
                )
                if reply.status_code != 202:
                    raise RuntimeError(f"/v1/jobs answered {reply.status_code}: {reply.text[:300]}")
                return reply.headers["location"]

            backlog = [await submit(n, ALICE) for n in range(queued)]
            await asyncio.sleep(0.3)  # A's first jobs are running, the rest wait
            sent = time.perf_counter()
            bobs = await submit(queued, BOB)
            for _ in range(60_000):  # polled as a client would (every 10 ms, at most 10 minutes)
                if (await client.get(bobs, headers=BOB)).json()["started_at"] is not None:
                    break
                await asyncio.sleep(0.01)
            waited = time.perf_counter() - sent
            statuses = [(await client.get(job, headers=ALICE)).json()["status"] for job in backlog]
            for job in backlog:  # stop the rest: the app then stops at once
                await client.delete(job, headers=ALICE)
    return waited, statuses.count("queued")
