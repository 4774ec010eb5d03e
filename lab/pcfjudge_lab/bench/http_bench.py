"""``pcfjudge bench http``: the service's hot path beside its physical limits, measured side by side in one run.

Starts the fake provider (``--latency-ms`` per call, default 200) and ``pcfjudge serve`` judging through it over the
OpenAI wire protocol, and measures, each beside its reference:

1. fan-out: K=7 vs K=1 requests one at a time (reference: the provider alone answering 7 calls at once vs 1);
2. calls/s of cold K=7 requests through the service vs each provider client alone on the same fake (the OpenAI SDK
   with its httpx2 and its aiohttp transport, and the service's own backend), and CPU per backend call of each;
3. 64 concurrent K=1 and K=7 requests, p50/p99, vs the provider alone at the same concurrency;
4. warm cache hits (K=7, include_runs false): req/s at 32 concurrent and p50 at concurrency 1, vs a bare FastAPI
   echo of the same body and response under the same uvicorn (``http_echo``);
5. resident memory after 1k vs after N warm requests;
6. warm and cold throughput with ``--workers`` 1 and 2.

``--only`` runs some phases (``PHASES``) and prints their figures: e.g. ``--only warm,burst --workers 1`` measures the
warm hits beside the echo and the bursts beside the provider alone, in a few minutes instead of the whole run.

Numbers are ratios measured in one run on one machine; the report states its core count and load average.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pcfjudge.surface import JudgeCall

from pcfjudge_lab.bench.http_load import Body, Connection, LoadResult, closed_loop
from pcfjudge_lab.bench.http_refs import CLIENTS, run_alone, sample_call
from pcfjudge_lab.bench.http_stack import CANDIDATES, Stack, cpu_s, listwise_body, rss_mb

PATH = "/judge/listwise"
CHAT = "/v1/chat/completions"
PHASES = ("provider", "clients", "fanout", "cold", "burst", "warm", "rss")
"""The phases ``--only`` picks from: the provider alone (latency and fan-out), each client alone, fan-out, cold
calls/s, the bursts, warm hits beside the echo, resident memory (and, with more workers, warm and cold again)."""


@dataclass(frozen=True, slots=True)
class HttpBench:
    latency_ms: float = 200.0
    candidates: int = 4
    sequential: int = 30  # requests per K in the fan-out figure (one at a time)
    calls: int = 3000  # backend calls in the throughput figure (service and each client alone)
    cold_concurrency: int = 32  # concurrent cold K=7 requests in the throughput figure
    burst: int = 64  # concurrent requests in the latency figures
    burst_requests: int = 256
    warm_items: int = 64
    warm_requests: int = 20_000  # at warm_concurrency
    warm_concurrency: int = 32
    warm_rounds: int = 8  # alternating slices of warm hits and the echo (``Run.beside_echo``)
    single_requests: int = 2000  # warm, one at a time (p50)
    rss_requests: int = 100_000  # warm requests before the second RSS reading
    workers: tuple[int, ...] = (1, 2)
    backend_concurrency: int = 512
    log_level: str = "warning"
    only: tuple[str, ...] = PHASES  # the phases to run (``--only``)


def _load(url: str, body: Body, requests: int, concurrency: int, path: str = PATH) -> LoadResult:
    """A closed-loop phase against ``url``: the service's route by default, the provider's with ``CHAT``."""
    headers = {"Authorization": "Bearer bench-key"} if path == CHAT else None
    return asyncio.run(closed_loop(url, path, body, requests=requests, concurrency=concurrency, headers=headers))


class Run:
    """The measurements (``out``) of one ``pcfjudge serve`` of the stack; each method is one phase."""

    def __init__(self, bench: HttpBench, stack: Stack) -> None:
        self.bench, self.stack = bench, stack
        self.tag = uuid.uuid4().hex[:8]
        self.out: dict[str, Any] = {}

    def body(self, phase: str, k: int) -> Body:
        return lambda i: listwise_body(f"{self.tag} {phase}", i, k, self.bench.candidates)

    def warm_body(self, i: int) -> bytes:
        return listwise_body(f"{self.tag} warm", i % self.bench.warm_items, 7, self.bench.candidates)

    # ── references: the provider alone and each client alone ────────────────────────────────────────────────
    def provider_alone(self) -> None:
        b = self.bench
        call = sample_call(
            "When and where was the Peace of Westphalia signed?", list(CANDIDATES[: b.candidates]), "bench-judge"
        )
        payload = _chat_body(call)
        url = self.stack.fake_url
        for n in (b.burst, b.burst * 7):
            r = _load(url, lambda _i: payload, max(b.burst_requests, 2 * n), n, CHAT)
            self.out[f"provider_{n}"] = _latency(r)
        self.out["provider_fanout"] = asyncio.run(_fanout_alone(url, payload, b.sequential))

    def clients_alone(self) -> None:
        b, url = self.bench, self.stack.fake_url
        for client in CLIENTS:
            self.out[f"client_{client}"] = run_alone(
                client, f"{url}/v1", b.calls, b.cold_concurrency * 7, CANDIDATES[: b.candidates]
            )

    # ── the service ────────────────────────────────────────────────────────────────────────────────────────────
    def fanout(self) -> None:
        r = _load(
            self.stack.url,
            lambda i: listwise_body(f"{self.tag} seq", i, 7 if i % 2 else 1, self.bench.candidates),
            2 * self.bench.sequential,
            1,
        )
        k1 = sorted(r.latencies[0::2])
        k7 = sorted(r.latencies[1::2])
        self.out["fanout"] = {"k1_p50_ms": _median(k1) * 1000, "k7_p50_ms": _median(k7) * 1000, "ok": r.ok}

    def cold_throughput(self, name: str) -> None:
        b = self.bench
        requests = max(1, b.calls // 7)
        calls0, cpu0 = self.stack.provider_calls(), cpu_s(self.stack.serve_pid)
        fake0 = cpu_s(self.stack.fake_pid)
        r = _load(self.stack.url, self.body(f"cold-{name}", 7), requests, b.cold_concurrency)
        calls = self.stack.provider_calls() - calls0
        self.out[name] = {
            "requests_per_s": r.rate,
            "calls_per_s": calls / r.seconds,
            "calls": calls,
            "cpu_ms_per_call": (cpu_s(self.stack.serve_pid) - cpu0) / max(1, calls) * 1000,
            "provider_cpu_ms_per_call": (cpu_s(self.stack.fake_pid) - fake0) / max(1, calls) * 1000,
            "ok": r.ok,
        }

    def bursts(self) -> None:
        for k in (1, 7):
            r = _load(self.stack.url, self.body(f"burst{k}", k), self.bench.burst_requests, self.bench.burst)
            self.out[f"burst_k{k}"] = _latency(r)

    def warm(self, name: str, requests: int, concurrency: int) -> LoadResult:
        calls0, cpu0 = self.stack.provider_calls(), cpu_s(self.stack.serve_pid)
        r = _load(self.stack.url, self.warm_body, requests, concurrency)
        cpu = (cpu_s(self.stack.serve_pid) - cpu0) / max(1, r.count) * 1e6
        self.out[name] = {
            **_latency(r),
            "backend_calls": self.stack.provider_calls() - calls0,
            "cpu_us_per_request": cpu,
        }
        return r

    def populate(self, passes: int = 1) -> LoadResult:
        b = self.bench
        return _load(self.stack.url, self.warm_body, b.warm_items * passes, min(b.warm_concurrency, b.warm_items))

    def beside_echo(self, requests: int, concurrency: int, rounds: int) -> None:
        """Warm hits and the echo in ``rounds`` alternating slices of ``requests / rounds`` each (the first of each
        pair alternating too), so a shared machine's drift in speed falls on both: ``warm_32`` and ``echo_32`` hold
        each one's median rate over its slices and its CPU per request over all of them, ``warm_ratio_rounds`` the
        ratio of each pair."""
        rounds = max(1, min(rounds, requests))
        slices: dict[str, list[dict[str, Any]]] = {"warm_32": [], "echo_32": []}
        for i in range(rounds):
            per = requests // rounds + (1 if i < requests % rounds else 0)
            for name in ("echo_32", "warm_32") if i % 2 == 0 else ("warm_32", "echo_32"):
                (self.echo if name == "echo_32" else self.warm)(name, per, concurrency)
                slices[name].append(self.out[name])
        for name, measured in slices.items():
            self.out[name] = {
                **measured[-1],
                "requests_per_s": statistics.median(m["requests_per_s"] for m in measured),
                "cpu_us_per_request": statistics.fmean(m["cpu_us_per_request"] for m in measured),
                "backend_calls": sum(m.get("backend_calls", 0) for m in measured),
                "ok": sum(m["ok"] for m in measured),
            }
        self.out["warm_ratio_rounds"] = [
            w["requests_per_s"] / e["requests_per_s"] for w, e in zip(slices["warm_32"], slices["echo_32"], strict=True)
        ]

    def start_echo(self, response: bytes) -> None:
        self.stack.start_echo(json.loads(response))

    def echo(self, name: str, requests: int, concurrency: int) -> None:
        cpu0 = cpu_s(self.stack.echo_pid)
        r = asyncio.run(
            closed_loop(self.stack.echo_url, PATH, self.warm_body, requests=requests, concurrency=concurrency)
        )
        cpu = (cpu_s(self.stack.echo_pid) - cpu0) / max(1, r.count) * 1e6
        self.out[name] = {**_latency(r), "cpu_us_per_request": cpu}


def _chat_body(call: JudgeCall) -> bytes:
    """The Chat Completions body the service's OpenAI backend sends for ``call``."""
    from pcfjudge.surface import Settings, build_openai

    backend = build_openai(Settings(openai_api_key="bench-key"))
    assert backend is not None
    return json.dumps(backend.request(call)).encode()


async def _fanout_alone(url: str, payload: bytes, rounds: int) -> dict[str, float]:
    """The provider alone: one call vs 7 calls at once, each round on fresh keep-alive connections (p50 ms)."""
    single, seven = [], []
    connections = [Connection(url, {"Authorization": "Bearer bench-key"}) for _ in range(7)]
    for _ in range(rounds):
        started = time.perf_counter()
        await connections[0].post(CHAT, payload)
        single.append(time.perf_counter() - started)
        started = time.perf_counter()
        await asyncio.gather(*(c.post(CHAT, payload) for c in connections))
        seven.append(time.perf_counter() - started)
    for c in connections:
        await c.close()
    return {"k1_p50_ms": _median(sorted(single)) * 1000, "k7_p50_ms": _median(sorted(seven)) * 1000}


def _median(data: list[float]) -> float:
    return data[len(data) // 2] if data else 0.0


def _latency(r: LoadResult) -> dict[str, float]:
    return {
        "requests": r.count,
        "ok": r.ok,
        "requests_per_s": r.rate,
        "p50_ms": r.percentile_ms(0.5),
        "p99_ms": r.percentile_ms(0.99),
    }


def run(bench: HttpBench, work: Path | None = None) -> dict[str, Any]:
    """Every figure of the module docstring, as one JSON-ready dict (see ``http_report`` for the table)."""
    with tempfile.TemporaryDirectory(prefix="pcfjudge-bench-http-") as tmp:
        stack = Stack(work or Path(tmp), bench.latency_ms, bench.backend_concurrency, bench.log_level)
        out: dict[str, Any] = {
            "machine": {"cores": os.cpu_count(), "load_average_start": os.getloadavg()},
            "config": asdict(bench),
        }
        try:
            for workers in bench.workers:
                stack.start(workers)
                r = Run(bench, stack)
                if workers == bench.workers[0]:
                    _first_worker_count(r, bench)
                else:
                    if "warm" in bench.only:
                        r.populate(passes=16)
                        r.warm("warm_32", bench.warm_requests, bench.warm_concurrency)
                    if "cold" in bench.only:
                        r.cold_throughput("cold")
                out[f"workers_{workers}"] = r.out
        finally:
            stack.close()
        out["machine"]["load_average_end"] = os.getloadavg()
    return out


def _first_worker_count(r: Run, bench: HttpBench) -> None:
    only = bench.only
    if "provider" in only or "burst" in only or "fanout" in only:  # the references of the bursts and fan-out
        r.provider_alone()
    if "clients" in only:
        r.clients_alone()
    if "fanout" in only:
        r.fanout()
    if "cold" in only:
        r.cold_throughput("cold")
    if "burst" in only:
        r.bursts()
    if "warm" not in only and "rss" not in only:
        return
    r.populate()
    warm = r.warm("warm_1k", 1000, bench.warm_concurrency)
    r.out["rss_mb_1k"] = rss_mb(r.stack.serve_pid)
    done = 1000
    if "warm" in only:
        r.start_echo(warm.last_body)  # the bare FastAPI echo answers with the service's own warm response
        r.beside_echo(bench.warm_requests, bench.warm_concurrency, bench.warm_rounds)
        r.echo("echo_1", bench.single_requests, 1)
        r.warm("warm_1", bench.single_requests, 1)
        done += bench.warm_requests + bench.single_requests
    if "rss" not in only:
        return
    if bench.rss_requests > done:
        r.warm("warm_rest", bench.rss_requests - done, bench.warm_concurrency)
    r.out["rss_mb_n"] = rss_mb(r.stack.serve_pid)
    r.out["rss_requests"] = max(bench.rss_requests, done)
