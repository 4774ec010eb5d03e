"""``pcfjudge bench priority``: interactive requests' latency on an idle backend and on one that jobs saturate, in one
run (issue 39, item 3: "interactive work first"; docs/operations/fleets.md).

The simulated judge at a fixed median latency behind ``PCFJ_BACKEND_CONCURRENCY`` slots, through the whole HTTP app
in process (a fresh app per pass):

* idle: ``requests`` direct ``/judge/listwise`` requests (K runs each, cache bypassed), ``clients`` at a time;
* loaded: the same requests while a feeder keeps jobs (``POST /v1/jobs``, each a listwise judgment of ``job_k``
  runs) queued up to ``PCFJ_MAX_JOBS_PER_KEY`` and ``PCFJ_JOB_WORKERS`` of them running: their calls wait for slots
  in the background class, more of them than the backend has slots (checked as each interactive request starts);
* one class (``--one-class``): the loaded pass with every call waiting in one class, first come first served, as
  every call did before the classes: what the classes are measured against.

Each pass prints the interactive requests' p50, p99 and max, and the background calls served meanwhile (the spare
capacity the jobs took).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from pcfjudge.surface import Settings, create_app


@dataclass(frozen=True, slots=True)
class PriorityBench:
    requests: int = 100  # interactive requests per pass
    k: int = 3  # runs per interactive request
    clients: int = 2  # interactive requests in flight at once
    latency_ms: float = 200.0  # the simulated judge's median call latency
    concurrency: int = 16  # PCFJ_BACKEND_CONCURRENCY
    job_k: int = 16  # runs per job
    job_workers: int = 8  # PCFJ_JOB_WORKERS: jobs running at once
    one_class: bool = False  # also the loaded pass with every call in one class


@dataclass(slots=True)
class Pass:
    name: str
    seconds: list[float] = field(default_factory=list)  # each interactive request's latency
    statuses: list[int] = field(default_factory=list)
    background_waiting: list[int] = field(default_factory=list)  # job calls waiting as each request started
    served: Counter[str] = field(default_factory=Counter)  # calls that got a slot during the pass, by class
    wall_s: float = 0.0  # the interactive requests' span
    jobs: int = 0  # jobs submitted


class Tally:
    """Wraps a backend's ``Slots.slot``: counts the calls waiting and served per class (the class their request
    gave them); with ``one_class`` every call waits in the interactive class (as every call did before classes)."""

    def __init__(self, limit: Any, one_class: bool) -> None:
        self.limit, self.one_class = limit, one_class
        self.waiting: Counter[str] = Counter()
        self.served: Counter[str] = Counter()
        self._slot, self._reserve, self._release = limit.slot, limit.reserve, limit.release
        limit.slot = self.slot
        if one_class:
            limit.reserve = lambda n, remaining_s, priority="interactive": self._reserve(n, remaining_s)
            limit.release = lambda n, priority="interactive": self._release(n)

    def slot(self, deadline: float, priority: str = "interactive", key: str = "anonymous") -> _Counted:
        inner = self._slot(deadline, "interactive" if self.one_class else priority, key)
        return _Counted(self, inner, priority)


class _Counted:
    def __init__(self, tally: Tally, inner: Any, priority: str) -> None:
        self.tally, self.inner, self.priority = tally, inner, priority

    async def __aenter__(self) -> None:
        self.tally.waiting[self.priority] += 1
        try:
            await self.inner.__aenter__()
        finally:
            self.tally.waiting[self.priority] -= 1
        self.tally.served[self.priority] += 1

    async def __aexit__(self, *exc: Any) -> None:
        await self.inner.__aexit__(*exc)


def _body(question: str, k: int) -> dict[str, Any]:
    return {
        "question": question,
        "candidates": ["Alpha.", "Beta.", "Gamma.", "Delta."],
        "k": k,
        "cache": "bypass",
        "include_runs": False,
        "rationales": False,
    }


async def _interactive(client: httpx.AsyncClient, bench: PriorityBench, done: Pass, tally: Tally) -> None:
    done.seconds, done.statuses = [0.0] * bench.requests, [0] * bench.requests
    gate = asyncio.Semaphore(bench.clients)
    served = Counter(tally.served)

    async def one(i: int) -> None:
        async with gate:
            done.background_waiting.append(tally.waiting["background"])
            started = time.perf_counter()
            reply = await client.post("/judge/listwise", json=_body(f"[{done.name} {i}] Which is right?", bench.k))
            done.seconds[i] = time.perf_counter() - started
            done.statuses[i] = reply.status_code

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(bench.requests)))
    done.wall_s = time.perf_counter() - started
    done.served = tally.served - served


async def _feed(client: httpx.AsyncClient, bench: PriorityBench, stop: asyncio.Event, done: Pass) -> None:
    """Keep jobs queued: submit until the key's limit answers 429, then try again shortly."""
    while not stop.is_set():
        body = {"endpoint": "/judge/listwise", "request": _body(f"[job {done.jobs}] Which is right?", bench.job_k)}
        reply = await client.post("/v1/jobs", json=body)
        if reply.status_code == 202:
            done.jobs += 1
        elif reply.status_code == 429:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.05)
        else:
            raise RuntimeError(f"a job was refused: {reply.status_code} {reply.text}")


async def _pass(bench: PriorityBench, name: str, jobs: bool, one_class: bool = False) -> Pass:
    settings = Settings(
        sim_latency_ms=bench.latency_ms,
        sim_seed=7,
        backend_concurrency=bench.concurrency,
        job_workers=bench.job_workers,
        max_jobs_per_key=2 * bench.job_workers,
        job_sweep_s=0.05,
    )
    app = create_app(settings)
    done = Pass(name)
    async with LifespanManager(app) as manager:
        tally = Tally(app.state.services.registry.resolve("sim:default").limit, one_class)
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=600) as client:
            if not jobs:
                await _interactive(client, bench, done, tally)
                return done
            stop = asyncio.Event()
            feeder = asyncio.create_task(_feed(client, bench, stop, done))
            try:
                give_up = time.perf_counter() + 60
                while tally.waiting["background"] < bench.concurrency:  # more job calls waiting than slots
                    if feeder.done() or time.perf_counter() > give_up:
                        await feeder
                        raise RuntimeError("the jobs never saturated the backend")
                    await asyncio.sleep(0.01)
                await _interactive(client, bench, done, tally)
            finally:
                stop.set()
                await feeder  # the jobs still running stop with the app (given back, as at any shutdown)
    return done


async def run(bench: PriorityBench) -> list[Pass]:
    passes = [await _pass(bench, "idle", jobs=False), await _pass(bench, "loaded", jobs=True)]
    if bench.one_class:
        passes.append(await _pass(bench, "one class", jobs=True, one_class=True))
    return passes


def quantile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (p99 of 100 samples: the 99th smallest)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))] if ordered else float("nan")


def format_report(bench: PriorityBench, passes: list[Pass]) -> str:
    label = {
        "idle": "idle backend",
        "loaded": "jobs saturating it",
        "one class": "the same, one class (FIFO)",
    }
    lines = [
        f"pcfjudge bench priority: {bench.requests} direct /judge/listwise requests a pass (K={bench.k}, "
        f"{bench.clients} at a time), the simulated judge at {bench.latency_ms:g} ms x U(0.5, 1.5) a call, "
        f"PCFJ_BACKEND_CONCURRENCY={bench.concurrency}; jobs of K={bench.job_k}, {bench.job_workers} running and "
        f"{bench.job_workers} more queued at all times; through the HTTP app in process",
        f"{'pass':<28} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'non-200':>8}   background calls meanwhile",
    ]
    for p in passes:
        ms = [s * 1000 for s in p.seconds]
        errors = sum(1 for s in p.statuses if s != 200)
        background = p.served["background"]
        if p.jobs:
            waiting = p.background_waiting
            note = (
                f"{background} served ({background / p.wall_s:.0f}/s); waiting for a slot as each request started: "
                f"min {min(waiting)}, median {statistics.median(waiting):.0f}; {p.jobs} jobs submitted"
            )
        else:
            note = "none"
        lines.append(
            f"{label[p.name]:<28} {quantile(ms, 0.5):>8.0f} {quantile(ms, 0.99):>8.0f} {max(ms):>8.0f} {errors:>8}   "
            f"{note}"
        )
    idle, loaded = passes[0], passes[1]
    ratio = quantile(loaded.seconds, 0.99) / quantile(idle.seconds, 0.99)
    lines.append(f"p99 with jobs saturating the backend / idle: {ratio:.2f} (the goal: at most 1.5)")
    if len(passes) > 2:
        ratio = quantile(passes[2].seconds, 0.99) / quantile(idle.seconds, 0.99)
        lines.append(f"p99 with one class (every call first come first served) / idle: {ratio:.2f}")
    return "\n".join(lines)
