"""``pcfjudge bench reward``: RL rewards sent one sample per request, collected into groups by the service.

Starts the fake provider (a fixed latency per call) and ``pcfjudge serve`` judging through it, then sends P prompts ×
G completions, one sample per HTTP request, at a given concurrency, in the order a trainer finishes rollouts (each
window of ``concurrency`` requests shuffled, so a prompt's completions arrive close together but out of order).
Reports the provider calls made against P·K (grouped) and P·G·K (one judgment per sample), request latency
percentiles, and whether every reward equals the one the same group gets when judged directly in one request.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from pcfjudge_lab.bench.procs import Proc, free_port, http_ok, pcfjudge

ENDPOINTS = ("reward", "openrlhf", "slime")


@dataclass(frozen=True, slots=True)
class RewardBench:
    prompts: int = 64
    completions: int = 8
    k: int = 5
    concurrency: int = 256
    latency_ms: float = 200.0
    endpoint: str = "openrlhf"
    wait_ms: int = 60_000
    backend_concurrency: int = 64
    seed: int = 0


@dataclass(slots=True)
class Outcome:
    latencies_ms: list[float] = field(default_factory=list)
    rewards: dict[tuple[int, int], float | None] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    wall_s: float = 0.0
    matches: int = 0
    direct_calls: int = 0

    def percentile(self, q: float) -> float:
        data = sorted(self.latencies_ms)
        return data[min(len(data) - 1, max(0, round(q * (len(data) - 1))))] if data else float("nan")


def prompt_text(i: int, run: str) -> str:
    return f"[bench {run}] Question {i}: what is {i} times {i + 3}, and why?"


def completion_text(i: int, j: int) -> str:
    tail = ["", " I am fairly sure.", " Let me double-check: yes.", " (rounded)"][j % 4]
    return f"{i} times {i + 3} is {i * (i + 3) + (j % 3) - 1}, by long multiplication.{tail} [{j}]"


def order(bench: RewardBench, rng: random.Random) -> list[tuple[int, int]]:
    """Samples in a trainer's finishing order: prompt by prompt, shuffled within each window of requests."""
    samples = [(i, j) for i in range(bench.prompts) for j in range(bench.completions)]
    out = []
    for start in range(0, len(samples), bench.concurrency):
        window = samples[start : start + bench.concurrency]
        rng.shuffle(window)
        out += window
    return out


def request(endpoint: str, prompt: str, response: str) -> tuple[str, dict[str, Any]]:
    if endpoint == "openrlhf":
        return "/get_reward", {"query": [prompt + response], "prompts": [prompt], "labels": [None]}
    if endpoint == "slime":
        return "/v1/reward/one", {"prompt": prompt, "response": response, "label": None}
    return "/v1/reward", {"samples": [{"prompt": prompt, "response": response}]}


def reward_of(endpoint: str, body: dict[str, Any]) -> float | None:
    if endpoint == "openrlhf":
        return float(body["rewards"][0])
    if endpoint == "slime":
        return float(body["reward"])
    value = body["rewards"][0]
    return None if value is None else float(value)


async def load(bench: RewardBench, url: str, run: str) -> Outcome:
    outcome = Outcome()
    gate = asyncio.Semaphore(bench.concurrency)
    limits = httpx.Limits(max_connections=bench.concurrency, max_keepalive_connections=bench.concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:

        async def one(i: int, j: int) -> None:
            path, body = request(bench.endpoint, prompt_text(i, run), completion_text(i, j))
            async with gate:
                started = time.perf_counter()
                reply = await client.post(path, json=body)
                outcome.latencies_ms.append((time.perf_counter() - started) * 1000)
            if reply.status_code != 200:
                outcome.errors.append(f"{reply.status_code} {reply.text[:200]}")
                return
            outcome.rewards[(i, j)] = reward_of(bench.endpoint, reply.json())

        started = time.perf_counter()
        await asyncio.gather(*(one(i, j) for i, j in order(bench, random.Random(bench.seed))))
        outcome.wall_s = time.perf_counter() - started
        await check_direct(bench, client, run, outcome)
    return outcome


async def check_direct(bench: RewardBench, client: httpx.AsyncClient, run: str, outcome: Outcome) -> None:
    """Judge every group directly (all its samples in one request) and count the rewards that agree."""
    for i in range(bench.prompts):
        samples = [{"prompt": prompt_text(i, run), "response": completion_text(i, j)} for j in range(bench.completions)]
        reply = (await client.post("/v1/reward", json={"samples": samples})).json()
        outcome.direct_calls += reply["usage"]["backend_calls"]
        outcome.matches += sum(outcome.rewards.get((i, j)) == r for j, r in enumerate(reply["rewards"]))


def run(bench: RewardBench, log: Path | None = None) -> Outcome:
    """Start the fake provider and one ``pcfjudge serve``, load them, stop them."""
    workdir = log or Path(tempfile.mkdtemp(prefix="pcfjudge-bench-reward-"))
    fake_port, serve_port = free_port(), free_port()
    fake_url, url = f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{serve_port}"
    fake = Proc(
        "fake-provider",
        pcfjudge("fake-provider", "--port", str(fake_port), "--latency-ms", str(bench.latency_ms)),
        workdir / "fake.log",
        lambda: http_ok(f"{fake_url}/healthz"),
    )
    env = {
        "OPENAI_API_KEY": "bench-key",
        "PCFJ_OPENAI_BASE_URL": f"{fake_url}/v1",
        "PCFJ_DEFAULT_MODEL": "openai:bench-judge",
        "PCFJ_DEFAULT_K": str(bench.k),
        "PCFJ_REWARD_GROUP_SIZE": str(bench.completions),
        "PCFJ_REWARD_GROUP_WAIT_MS": str(bench.wait_ms),
        "PCFJ_BACKEND_CONCURRENCY": str(bench.backend_concurrency),
    }
    serve = Proc(
        "pcfjudge serve",
        pcfjudge("serve", "--port", str(serve_port), "--log-level", "warning"),
        workdir / "serve.log",
        lambda: http_ok(f"{url}/healthz"),
        env,
    )
    fake.start()
    try:
        serve.start()
        try:
            outcome = asyncio.run(load(bench, url, f"{random.Random().getrandbits(32):08x}"))
            outcome.calls = httpx.get(f"{fake_url}/_control/calls", params={"last": 0}).json()["calls"].get("openai", 0)
        finally:
            serve.stop()
    finally:
        fake.stop()
    return outcome


def format_report(bench: RewardBench, outcome: Outcome) -> str:
    samples = bench.prompts * bench.completions
    lines = [
        f"reward bench: {bench.prompts} prompts x {bench.completions} completions = {samples} requests of one sample "
        f"to /{ENDPOINT_PATHS[bench.endpoint]}, concurrency {bench.concurrency}, K={bench.k}, provider latency "
        f"{bench.latency_ms:g} ms (fake provider), backend concurrency {bench.backend_concurrency}",
        f"  provider calls      {outcome.calls} (grouped: {bench.prompts}·K = {bench.prompts * bench.k}; "
        f"one judgment per sample would be {samples}·K = {samples * bench.k})",
        f"  requests            {len(outcome.latencies_ms)} answered, {len(outcome.errors)} errors, "
        f"wall {outcome.wall_s:.2f} s",
        f"  latency (ms)        p50 {outcome.percentile(0.5):.0f}  p99 {outcome.percentile(0.99):.0f}  "
        f"max {max(outcome.latencies_ms, default=float('nan')):.0f}  mean "
        f"{statistics.fmean(outcome.latencies_ms) if outcome.latencies_ms else float('nan'):.0f}",
        f"  rewards identical   {outcome.matches}/{samples} to judging each group directly in one request "
        f"(those direct requests made {outcome.direct_calls} provider calls: all cache hits when 0)",
    ]
    lines += [f"  error: {e}" for e in outcome.errors[:5]]
    return "\n".join(lines)


ENDPOINT_PATHS = {"reward": "v1/reward", "openrlhf": "get_reward", "slime": "v1/reward/one"}
