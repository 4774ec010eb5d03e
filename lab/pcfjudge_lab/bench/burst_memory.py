"""``pcfjudge bench safety --burst N``: does a served process's memory return after a burst of large requests?

One ``pcfjudge serve`` with a private Redis (memory in front of it, ``PCFJ_CACHE_FRONT_TTL_S``) and the simulated
judge: one warm-up rerank, a rest, then ``N`` Cohere reranks of ``docs`` distinct documents one after another, then
quiet until the front cache's entries have expired and the service has rested (``PCFJ_REST_AFTER_S``). RSS at rest
before the burst, at its peak, at its end and after the rest; ``env`` adds to the service's environment (e.g.
``PYTHONMALLOC=malloc``). The issue's red team saw 124 → 367 MB after 60 reranks of 1,000 documents.
"""

from __future__ import annotations

import random
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from pcfjudge_lab.bench.procs import Proc, free_port, http_ok, pcfjudge, redis_answers, rss_mb

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa")


@dataclass(frozen=True)
class BurstPlan:
    label: str
    reranks: int
    docs: int = 1000
    front_ttl_s: float = 30.0
    rest_after_s: float = 5.0
    env: tuple[tuple[str, str], ...] = ()  # added to the service's environment


@dataclass(frozen=True)
class Burst:
    plan: BurstPlan
    rest_mb: float
    peak_mb: float
    end_mb: float
    after_mb: float
    seconds: float


JEMALLOC = (
    ("PYTHONMALLOC", "malloc"),
    ("MALLOC_CONF", "background_thread:true,dirty_decay_ms:2000,muzzy_decay_ms:0"),
)
"""The image's allocator (docker/Dockerfile), beside ``LD_PRELOAD`` of the machine's libjemalloc."""


def allocator_plans(
    reranks: int, docs: int = 1000, front_ttl_s: float = 30.0, rest_after_s: float = 5.0
) -> tuple[BurstPlan, ...]:
    """The same burst under Python's allocator, glibc's malloc for every object, and jemalloc (when installed)."""
    found = sorted(Path("/usr/lib").glob("*-linux-gnu/libjemalloc.so.2"))
    allocators: list[tuple[str, tuple[tuple[str, str], ...]]] = [
        ("default", ()),
        ("PYTHONMALLOC=malloc", (("PYTHONMALLOC", "malloc"),)),
    ]
    if found:
        allocators.append(("jemalloc, as the image", (*JEMALLOC, ("LD_PRELOAD", str(found[0])))))
    return tuple(BurstPlan(label, reranks, docs, front_ttl_s, rest_after_s, env) for label, env in allocators)


def _documents(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [f"document {seed}-{j}: " + " ".join(rng.choice(WORDS) for _ in range(60)) for j in range(n)]


def _redis(workdir: Path) -> tuple[Proc, str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server not found: install it (apt-get install redis-server)")
    port = free_port()
    argv = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(workdir),
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    redis = Proc("redis-server", argv, workdir / "redis.log", lambda: redis_answers(port))
    redis.start()
    return redis, f"redis://127.0.0.1:{port}/0"


def measure(workdir: Path, plan: BurstPlan) -> Burst:
    label, front_ttl_s, rest_after_s = plan.label, plan.front_ttl_s, plan.rest_after_s
    redis, redis_url = _redis(workdir)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    service_env = {
        "PCFJ_REDIS_URL": redis_url,
        "PCFJ_CACHE_FRONT_TTL_S": f"{front_ttl_s:g}",
        "PCFJ_REST_AFTER_S": f"{rest_after_s:g}",
        **dict(plan.env),
    }
    argv = pcfjudge("serve", "--port", str(port), "--log-level", "warning")
    proc = Proc(f"serve-burst-{label}", argv, workdir / f"serve-burst-{label}.log", lambda: http_ok(f"{url}/healthz"))
    proc.env |= service_env
    quiet_s = front_ttl_s + 3 * rest_after_s + 2
    try:
        proc.start()
        assert proc.popen is not None
        pid = proc.popen.pid
        with httpx.Client(base_url=url, timeout=600) as client:

            def rerank(seed: int) -> None:
                body = {
                    "model": "rerank",
                    "query": f"question {seed}?",
                    "documents": _documents(seed, plan.docs),
                    "top_n": 10,
                }
                answer = client.post("/v2/rerank", json=body)
                answer.raise_for_status()

            rerank(-1)  # warm-up: imports, pools, first-call caches
            time.sleep(quiet_s)
            rest = rss_mb(pid)
            peak = [rest]
            done = threading.Event()

            def watch() -> None:
                while not done.wait(0.05):
                    peak[0] = max(peak[0], rss_mb(pid))

            watcher = threading.Thread(target=watch)
            watcher.start()
            start = time.perf_counter()
            try:
                for seed in range(plan.reranks):
                    rerank(seed)
            finally:
                done.set()
                watcher.join()
            took = time.perf_counter() - start
            end = rss_mb(pid)
            time.sleep(quiet_s)
            client.get("/readyz")
            after = rss_mb(pid)
        return Burst(plan, rest, max(peak[0], end), end, after, took)
    finally:
        proc.kill()
        redis.kill()


def format_burst(b: Burst) -> str:
    return (
        f"burst ({b.plan.label}): {b.plan.reranks} reranks of {b.plan.docs:,} documents in {b.seconds:.0f} s: "
        f"RSS {b.rest_mb:.0f} MB "
        f"at rest, peak {b.peak_mb:.0f}, {b.end_mb:.0f} at its end, {b.after_mb:.0f} after the rest "
        f"(+{b.after_mb - b.rest_mb:.0f} MB)"
    )
