"""``pcfjudge bench soak``: replicas sharing one Redis under a bounded load for a while, as things fail.

Everything runs on this machine, on 127.0.0.1: ``replicas`` × ``pcfjudge serve`` sharing a private ``redis-server``,
judging through ``pcfjudge fake-provider`` (latency and a random 500/429 rate), and ``concurrency`` client loops
(``soak_client``: round-robin, retries as the README says) judging items drawn from a pool for ``seconds``. On a
schedule (shares of the duration) one replica is killed (SIGKILL) and restarted, Redis is killed and restarted empty,
the provider answers every call with 429 for ``burst_s``, and another replica is stopped gracefully (SIGTERM, as in
a rolling update) and restarted. The report: requests, outcomes, latency, backend calls per judged item (the
sharing across replicas) and requests lost, which must be 0.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from pcfjudge_lab.bench.procs import Fleet, Proc
from pcfjudge_lab.bench.soak_client import LoadClient, Outcome, Tally, percentile


@dataclass(frozen=True)
class SoakConfig:
    seconds: float = 300.0
    replicas: int = 3
    concurrency: int = 8
    items: int = 5000
    k: int = 3
    candidates: int = 4
    latency_ms: float = 50.0
    fail_rate: float = 0.02
    burst_s: float = 5.0
    seed: int = 0
    give_up_s: float = 120.0


@dataclass(frozen=True)
class Event:
    """A chaos step: when (seconds since the load began), what, and the provider's answers and the distinct items
    judged up to then (so the report can say what each phase cost)."""

    at_s: float
    what: str
    provider_calls: int
    provider_answers: int
    items_judged: int


@dataclass
class SoakReport:
    config: SoakConfig
    wall_s: float
    attempts: dict[str, int]
    outcomes: list[Outcome]
    events: list[Event]
    provider: dict[str, Any] = field(default_factory=dict)

    @property
    def lost(self) -> int:
        return sum(o.lost for o in self.outcomes)

    def summary(self) -> dict[str, Any]:
        ok = [o for o in self.outcomes if not o.lost]
        seconds = [o.seconds for o in ok]
        items = {o.item for o in ok}
        completions = sum(self.provider.get("completions", {}).values())
        return {
            "requests": len(self.outcomes),
            "ok": sum(not o.degraded for o in ok),
            "degraded": sum(o.degraded for o in ok),
            "lost": self.lost,
            "retried": sum(o.attempts > 1 for o in ok),
            "p50_ms": round(percentile(seconds, 50) * 1000, 1),
            "p99_ms": round(percentile(seconds, 99) * 1000, 1),
            "max_ms": round(max(seconds, default=0.0) * 1000, 1),
            "attempts": dict(sorted(self.attempts.items())),
            "served_by_replica": dict(sorted(Counter(f"replica-{o.replica}" for o in ok).items())),
            "distinct_items": len(items),
            "provider_calls": sum(self.provider.get("calls", {}).values()),
            "provider_completions": completions,
            "provider_faults": self.provider.get("faults_served", {}),
            "completions_per_item": round(completions / len(items), 2) if items else 0.0,
            "reported_backend_calls": sum(o.backend_calls for o in ok),
            "reported_cache_hits": sum(o.cache_hits for o in ok),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "config": asdict(self.config),
            "wall_s": round(self.wall_s, 1),
            "summary": self.summary(),
            "events": [asdict(e) for e in self.events],
        }


def item_body(item: int, config: SoakConfig) -> dict[str, Any]:
    """A listwise request for pool item ``item`` (the same item always gives the same body)."""
    candidates = [
        f"Answer {j} to soak item {item}: value {(item * 7 + j * 13) % 97}." for j in range(config.candidates)
    ]
    return {"question": f"Soak item {item}: which answer is right?", "candidates": candidates, "k": config.k,
            "include_runs": False}  # fmt: skip


async def _load(client: LoadClient, config: SoakConfig, until: float) -> None:
    async def loop(worker: int) -> None:
        rng = random.Random(config.seed * 10_000 + worker)
        while time.monotonic() < until:
            item = rng.randrange(config.items)
            await client.judge(item, item_body(item, config))

    await asyncio.gather(*(loop(w) for w in range(config.concurrency)))


class Chaos:
    """The fault schedule, run beside the load; each step is logged with its time since the load began."""

    def __init__(self, fleet: Fleet, config: SoakConfig, started: float, tally: Tally) -> None:
        self.fleet, self.config, self.started, self.tally = fleet, config, started, tally
        self.events: list[Event] = []

    async def log(self, what: str) -> None:
        at = round(time.monotonic() - self.started, 1)
        stats = await _provider_stats(self.fleet.fake_url)
        calls, answers = sum(stats["calls"].values()), sum(stats["completions"].values())
        items = len({o.item for o in self.tally.outcomes if not o.lost})
        self.events.append(Event(at, what, calls, answers, items))

    async def at(self, share: float) -> None:
        await asyncio.sleep(max(0.0, self.started + share * self.config.seconds - time.monotonic()))

    async def run(self) -> None:
        replicas = self.fleet.replicas
        await self.at(0.15)
        await self._crash(replicas[1 % len(replicas)])
        await self.at(0.35)
        self.fleet.redis.kill()
        await self.log("redis-server killed (SIGKILL): the shared cache is gone")
        await asyncio.sleep(3)
        await asyncio.to_thread(self.fleet.redis.start)
        await self.log("redis-server restarted, empty")
        await self.at(0.55)
        await self._faults({"always": "429", "retry_after": 1})
        await self.log(f"provider answers every call 429 (Retry-After: 1) for {self.config.burst_s:g} s")
        await asyncio.sleep(self.config.burst_s)
        await self._faults({"always": None})
        await self.log("provider 429 burst over")
        await self.at(0.75)
        await self._rolling(replicas[2 % len(replicas)])

    async def _crash(self, replica: Proc) -> None:
        replica.kill()
        killed = time.monotonic()
        await self.log(f"{replica.name} killed (SIGKILL) mid-load")
        await asyncio.sleep(3)
        await asyncio.to_thread(replica.start)
        await self.log(f"{replica.name} restarted; serving again {time.monotonic() - killed:.1f} s after the kill")

    async def _rolling(self, replica: Proc) -> None:
        code = await asyncio.to_thread(replica.stop)
        await self.log(f"{replica.name} stopped by SIGTERM (drained in-flight requests, exit code {code})")
        await asyncio.to_thread(replica.start)
        await self.log(f"{replica.name} restarted")

    async def _faults(self, plan: dict[str, Any]) -> None:
        async with httpx.AsyncClient(timeout=10) as http:
            (await http.post(f"{self.fleet.fake_url}/_control/faults", json=plan)).raise_for_status()


async def _provider_stats(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(f"{url}/_control/calls", params={"last": 0})
        response.raise_for_status()
        stats: dict[str, Any] = response.json()
        return {k: stats[k] for k in ("calls", "completions", "faults_served")}


async def _measure(fleet: Fleet, config: SoakConfig) -> SoakReport:
    client = LoadClient(fleet.urls, give_up_s=config.give_up_s)
    started = time.monotonic()
    chaos = Chaos(fleet, config, started, client.tally)
    try:
        chaos_task = asyncio.create_task(chaos.run())
        await _load(client, config, started + config.seconds)
        await chaos_task
        await chaos.log("load over")
    finally:
        await client.aclose()
    tally = client.tally
    report = SoakReport(config, time.monotonic() - started, dict(tally.attempts), tally.outcomes, chaos.events)
    report.provider = await _provider_stats(fleet.fake_url)
    return report


def run(config: SoakConfig, workdir: Path | None = None, progress: Callable[[str], None] = print) -> SoakReport:
    """Start the fleet, soak it, stop it; process logs stay in ``workdir`` (a temporary directory by default)."""
    if config.replicas < 2:
        raise ValueError("a soak needs at least 2 replicas (one of them is killed)")
    with tempfile.TemporaryDirectory(prefix="pcfjudge-soak-") as tmp:
        directory = workdir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        replica_env = {"PCFJ_REQUEST_TIMEOUT_S": "20", "PCFJ_RETRY_BASE_S": "0.05", "PCFJ_RETRY_MAX_S": "2",
                       "PCFJ_SHUTDOWN_GRACE_S": "30", "PCFJ_DEFAULT_K": str(config.k)}  # fmt: skip
        fake_args = ["--latency-ms", str(config.latency_ms), "--fail-rate", str(config.fail_rate)]
        fake_args += ["--seed", str(config.seed)]
        fleet = Fleet(directory, config.replicas, replica_env, fake_args)
        try:
            progress(f"starting redis-server, the fake provider and {config.replicas} replicas in {directory}")
            fleet.start()
            progress(f"soaking for {config.seconds:g} s at concurrency {config.concurrency}")
            return asyncio.run(_measure(fleet, config))
        finally:
            fleet.close()


def format_report(report: SoakReport) -> str:
    s, c = report.summary(), report.config
    lines = [
        f"{c.replicas} replicas, concurrency {c.concurrency}, {c.seconds:g} s, K={c.k}, {c.candidates} candidates, "
        f"{c.items} items, provider latency {c.latency_ms:g} ms, random fault rate {c.fail_rate:g}",
        "",
        "| requests | ok | degraded | lost | retried | p50 ms | p99 ms | max ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {s['requests']} | {s['ok']} | {s['degraded']} | {s['lost']} | {s['retried']} | {s['p50_ms']} "
        f"| {s['p99_ms']} | {s['max_ms']} |",
        "",
        "attempts by outcome: " + ", ".join(f"{k}: {v}" for k, v in s["attempts"].items()),
        "answered by: " + ", ".join(f"{k}: {v}" for k, v in s["served_by_replica"].items()),
        f"provider: {s['provider_calls']} calls, {s['provider_completions']} answers, faults {s['provider_faults']}",
        f"backend answers per judged item: {s['completions_per_item']} (K={c.k}; {s['distinct_items']} distinct "
        f"items; the service reported {s['reported_backend_calls']} calls and {s['reported_cache_hits']} cache hits)",
        "",
        "| at s | event | provider calls so far | provider answers so far | distinct items judged so far |",
        "|---:|---|---:|---:|---:|",
        *(
            f"| {e.at_s:.1f} | {e.what} | {e.provider_calls} | {e.provider_answers} | {e.items_judged} |"
            for e in report.events
        ),
    ]
    return "\n".join(lines)
