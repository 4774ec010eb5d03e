"""``pcfjudge bench tracing``: what traces cost, off and on (exporting), measured in one run.

Through the whole HTTP app in process (httpx's ASGI transport: the service's middleware, routes, judge, runner and
cache, the simulated judge with no latency), ``concurrency`` clients send K=7 listwise requests, in interleaved rounds
(off, on, on, off, …) of two kinds:

* warm: the same few items, answered from the cache: a request span each, the judgment one event on it (a judgment
  the cache answers whole makes no span of its own); figure: requests/s;
* cold: ``"cache": "bypass"``, K backend calls each: a request span, a judgment span and K call spans; figure:
  backend calls/s;

with tracing **off** (no OTEL_* variable: no provider, the state the service runs in by default), **on** with every
span sampled (``OTEL_TRACES_SAMPLER=always_on``) and exported by the service's span processor
(``telemetry/loop_export.py``) over OTLP/HTTP to a receiver in another process (``pcfjudge_lab.otlp_receiver``), which
only counts what arrives, and on with a share of the traces sampled (``parentbased_traceidratio``, ``--ratio``). With
tracing on, the span queue is made large enough that no span is dropped, and each phase's time includes the export of
every span it made (the provider's shutdown at its end waits for it), so the figures carry the whole cost of
exporting. Each figure is the median of its rounds; the overhead is 1 − on/off, of those medians, and, paired round
by round, the median of each round's own 1 − on/off (a round's phases run a second or two apart, so a slow spell of
a shared machine moves both).

Off against a build without any tracing code cannot run side by side in one process. What off adds is a fixed
sequence of checks on each request's and each call's way (``tracing.on()``, the helpers' first lines, one coroutine
frame around a call): that sequence is timed here in a loop, against the same sequence without it, and set against a
request's time in the off rounds.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from pcfjudge.surface import Settings, create_app, tracing

K = 7
CANDIDATES = [
    "Two: Phobos and Deimos.",
    "One.",
    "Two, Phobos and Deimos, discovered by Asaph Hall in 1877.",
    "None: Mars has rings instead.",
]


MODES = ("off", "on", "sampled")


def _by_mode() -> dict[str, list[float]]:
    return {mode: [] for mode in MODES}


@dataclass(slots=True)
class TracingBench:
    rounds: int = 9
    warm_requests: int = 2000
    cold_requests: int = 300
    concurrency: int = 8
    ratio: float = 0.1  # the share of traces the "sampled" mode keeps


@dataclass(slots=True)
class Measured:
    warm_rps: dict[str, list[float]] = field(default_factory=_by_mode)
    cold_cps: dict[str, list[float]] = field(default_factory=_by_mode)
    warm_cpu_s: dict[str, list[float]] = field(default_factory=_by_mode)  # process CPU per request
    cold_cpu_s: dict[str, list[float]] = field(default_factory=_by_mode)  # process CPU per backend call
    spans_made: int = 0
    spans_received: int = 0
    sampled_received: int = 0
    off_request_ns: float = 0.0  # what off adds to a request's way (timed in isolation)
    off_call_ns: float = 0.0  # and to a backend call's
    load: tuple[float, float] = (0.0, 0.0)


def _body(i: int, cold: bool) -> dict[str, Any]:
    question = f"[{i}] How many moons does Mars have?" if cold else f"[{i % 16}] How many moons does Mars have?"
    body: dict[str, Any] = {"question": question, "candidates": CANDIDATES, "k": K, "include_runs": False}
    if cold:
        body["cache"] = "bypass"
    return body


async def _load(client: httpx.AsyncClient, requests: int, concurrency: int, cold: bool) -> tuple[float, float]:
    """Send ``requests``; (wall seconds, process CPU seconds)."""
    left = iter(range(requests))

    async def worker() -> None:
        for i in left:
            reply = await client.post("/judge/listwise", json=_body(i, cold))
            if reply.status_code != 200:
                raise RuntimeError(f"the app answered {reply.status_code}: {reply.text[:200]}")
            # A served request passes through the event loop at least once (its socket is read); in process, a warm
            # request never would, and work the loop runs in the background (the span export) would wait for the
            # end of the phase.
            await asyncio.sleep(0)

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - wall, time.process_time() - cpu


class _Receiver:
    """``python -m pcfjudge_lab.otlp_receiver`` in its own process (its decoding is not this process's CPU)."""

    def __init__(self) -> None:
        argv = [sys.executable, "-m", "pcfjudge_lab.otlp_receiver"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip().rpartition(" ")[2]
        if not self.url.startswith("http://"):
            self.proc.kill()
            raise RuntimeError("the OTLP receiver did not start")

    def count(self) -> int:
        spans: int = httpx.get(f"{self.url}/count", timeout=10).json()["spans"]
        return spans

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _tracing_on(url: str, ratio: float | None, spans: int) -> dict[str, str | None]:
    """Turn tracing on (every span sampled, or ``ratio`` of the traces; exported to ``url``, with a queue that holds
    ``spans``: none is dropped); the variables it replaced, to restore."""
    wanted: dict[str, str | None] = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SDK_DISABLED": None}
    wanted["OTEL_TRACES_SAMPLER"] = "always_on" if ratio is None else "parentbased_traceidratio"
    wanted["OTEL_TRACES_SAMPLER_ARG"] = None if ratio is None else str(ratio)
    wanted["OTEL_BSP_MAX_QUEUE_SIZE"] = str(max(2048, spans))
    saved = {name: os.environ.get(name) for name in wanted}
    _set(wanted)
    if not tracing.setup():
        raise RuntimeError("tracing did not turn on")
    return saved


def _set(variables: dict[str, str | None]) -> None:
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


async def _phase(
    client: httpx.AsyncClient, bench: TracingBench, receiver: _Receiver, mode: str, cold: bool
) -> tuple[float, float, int]:
    """One kind of load in one mode: (wall seconds, process CPU seconds, spans the receiver got). With tracing on,
    the time includes the export of every span the load made (the provider's shutdown at its end waits for it)."""
    requests = bench.cold_requests if cold else bench.warm_requests
    if mode == "off":
        wall, cpu = await _load(client, requests, bench.concurrency, cold)
        return wall, cpu, 0
    before = await asyncio.to_thread(receiver.count)
    saved = _tracing_on(receiver.url, bench.ratio if mode == "sampled" else None, requests * (2 + K))
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        await _load(client, requests, bench.concurrency, cold)
    finally:
        await tracing.ashutdown()  # exports what is still queued (answered by the receiver when it returns)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        _set(saved)
    return wall, cpu, await asyncio.to_thread(receiver.count) - before


async def _round(client: httpx.AsyncClient, bench: TracingBench, receiver: _Receiver, mode: str, out: Measured) -> None:
    wall, cpu, warm_spans = await _phase(client, bench, receiver, mode, cold=False)
    out.warm_rps[mode].append(bench.warm_requests / wall)
    out.warm_cpu_s[mode].append(cpu / bench.warm_requests)
    wall, cpu, cold_spans = await _phase(client, bench, receiver, mode, cold=True)
    out.cold_cps[mode].append(bench.cold_requests * K / wall)
    out.cold_cpu_s[mode].append(cpu / (bench.cold_requests * K))
    if mode == "on":
        out.spans_made += bench.warm_requests + bench.cold_requests * (2 + K)  # a warm judgment: an event, no span
        out.spans_received += warm_spans + cold_spans
    elif mode == "sampled":
        out.sampled_received += warm_spans + cold_spans


def run(bench: TracingBench) -> Measured:
    if tracing.on():
        raise RuntimeError("tracing is already on in this process (OTEL_EXPORTER_OTLP_ENDPOINT): unset it to measure")
    out = Measured(load=_loadavg())
    out.off_request_ns, out.off_call_ns = asyncio.run(_off_path_ns())
    receiver = _Receiver()
    try:
        asyncio.run(_measure(bench, receiver, out))
    finally:
        receiver.stop()
    out.load = (out.load[0], _loadavg()[0])
    return out


async def _measure(bench: TracingBench, receiver: _Receiver, out: Measured) -> None:
    # As ``pcfjudge serve`` runs it (``freeze_gc``: the collector's thresholds of a served process): spans queued for
    # export outlive their request, and the collector's work on them is part of what tracing costs a service.
    app = create_app(Settings(backend_concurrency=max(64, bench.concurrency * K)), freeze_gc=True)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=120) as client:
            await _load(client, 200, bench.concurrency, cold=False)  # warm the cache and the code paths
            await _load(client, 50, bench.concurrency, cold=True)
            for n in range(bench.rounds):
                for mode in MODES if n % 2 == 0 else MODES[::-1]:
                    await _round(client, bench, receiver, mode, out)


# ── the off path, timed in isolation ─────────────────────────────────────────────────────────────────────────────


async def _off_path_ns(n: int = 200_000) -> tuple[float, float]:
    """Nanoseconds tracing-off adds to a request's way and to a call's: the same steps timed with and without the
    checks a request (middleware, the judgment's start, the runner's wave) and a call (the call's wrapper frame,
    the slot's wait clock, the latency exemplar) make while tracing is off."""

    async def judge(_judge: object, _task: object) -> None:
        return None

    async def request_off() -> None:
        span = None
        tracing.on()  # the request middleware's check (off: no span is made, nor its module loaded)
        with tracing.current(span):
            judgment_span = object() if tracing.on() else None  # Judge.run's (off: no span, no wrapper)
            await judge(None, judgment_span)
            tracing.on()  # the runner's wave

    async def request_bare() -> None:
        await judge(None, None)

    async def attempts() -> None:
        return None

    async def call_off() -> None:
        if not tracing.on():
            await attempts()
        waiting = time.perf_counter()
        tracing.queued(waiting)
        tracing.exemplar()

    async def call_bare() -> None:
        await attempts()

    async def timed(step: Callable[[], Awaitable[None]]) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter_ns()
            for _ in range(n):
                await step()
            best = min(best, (time.perf_counter_ns() - started) / n)
        return best

    request = await timed(request_off) - await timed(request_bare)
    call = await timed(call_off) - await timed(call_bare)
    return max(0.0, request), max(0.0, call)


def _loadavg() -> tuple[float, float]:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return (0.0, 0.0)
    return (one, five)


# ── the report ───────────────────────────────────────────────────────────────────────────────────────────────────


def format_report(bench: TracingBench, m: Measured) -> str:
    def row(name: str, values: dict[str, list[float]], scale: float = 1.0) -> str:
        off, on, sampled = (statistics.median(values[mode]) * scale for mode in MODES)
        cells = [f"{off:>8,.0f}"]
        for value in (on, sampled):
            overhead = 1 - value / off if scale == 1.0 else value / off - 1  # a rate falls, a cost rises
            cells.append(f"{value:>8,.0f} ({overhead:>+6.1%})")
        return f"  {name:<44} " + "  ".join(cells)

    warm_us = statistics.median(m.warm_cpu_s["off"]) * 1e6
    call_us = statistics.median(m.cold_cpu_s["off"]) * 1e6
    lines = [
        f"pcfjudge bench tracing: K={K}, {len(CANDIDATES)} candidates, {bench.concurrency} clients, {bench.rounds} "
        f"rounds of {bench.warm_requests:,} warm requests and {bench.cold_requests:,} cold requests per mode, through "
        f"the HTTP app in process (the simulated judge, no latency); {os.cpu_count()} cores, load average "
        f"{m.load[0]:.2f} at the start, {m.load[1]:.2f} at the end",
        f"  {'median of the rounds':<44} {'off':>8}  {'on: all sampled':>18}  {f'on: {bench.ratio:.0%} sampled':>18}",
        row("warm requests/s (cache hits)", m.warm_rps),
        row("cold backend calls/s (cache bypassed)", m.cold_cps),
        row("CPU per warm request, µs (this process)", m.warm_cpu_s, 1e6),
        row("CPU per cold call, µs (its request's share)", m.cold_cpu_s, 1e6),
        f"  {'paired round by round (median of ratios)':<44} {'':>8}  {_paired(m.warm_rps, 'on'):>18}  "
        f"{_paired(m.warm_rps, 'sampled'):>18}   (warm; cold: {_paired(m.cold_cps, 'on')}, "
        f"{_paired(m.cold_cps, 'sampled')})",
        "  rounds, warm req/s: " + "; ".join(f"{mode} {_rates(m.warm_rps[mode])}" for mode in MODES),
        "  rounds, cold calls/s: " + "; ".join(f"{mode} {_rates(m.cold_cps[mode])}" for mode in MODES),
        f"  spans exported with all sampled: {m.spans_received:,} of {m.spans_made:,} made (the receiver's count, in "
        f"another process; {m.sampled_received:,} more in the sampled rounds)",
        f"  off vs no tracing code: the checks off adds take {m.off_request_ns:.0f} ns a request and {m.off_call_ns:.0f}"
        f" ns a backend call (timed in isolation) = {m.off_request_ns / (warm_us * 1000):.3%} of a warm request's "
        f"CPU ({warm_us:.0f} µs) and {m.off_call_ns / (call_us * 1000):.3%} of a cold call's ({call_us:.0f} µs)",
    ]
    return "\n".join(lines)


def _paired(values: dict[str, list[float]], mode: str) -> str:
    """The rate ``mode`` lost against off in each round (the two phases ran a second or two apart), the median of
    those: what a slow spell of a shared machine, which moves both of a round's phases, changes least."""
    lost = statistics.median(1 - on / off for off, on in zip(values["off"], values[mode], strict=True))
    return f"({lost:+.1%})"


def _rates(values: list[float]) -> str:
    return " ".join(f"{v:,.0f}" for v in values)
