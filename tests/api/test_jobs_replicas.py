"""A job survives the replica that ran it (docs/api/jobs.md#resume): two ``pcfjudge serve`` processes on one private
Redis and a slow fake provider that counts calls. A K=7 job starts on replica 1; once some of its runs are in the
cache, replica 1 is SIGKILLed; replica 2 claims the job when its lease lapses, runs the request again and finishes
it, the runs replica 1 finished coming from the cache: the provider is asked only for the others."""

from __future__ import annotations

import signal
import sys
import time
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tests.support.processes import background_process, fake_provider_process, serve_process
from tests.support.redis_server import RedisServer
from tests.support.waits import free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.alone]

K = 7
REQUEST = {
    "question": "Which city is the capital of Australia?",
    "candidates": ["Sydney.", "Canberra.", "Melbourne, since 1901.", "I am not sure; possibly Canberra."],
    "k": K,
    "model": "openai:judge-under-test",
    "include_runs": False,
}


def provider_calls(fake: str) -> int:
    calls: dict[str, int] = httpx.get(f"{fake}/_control/calls", params={"last": 0}).json()["calls"]
    return calls.get("openai", 0)


def cached_runs(redis_server: RedisServer) -> int:
    """Judge answers in Redis (``pcfj:{item}:…``; not the jobs, not single-flight locks)."""
    with redis_server.client() as redis:
        return sum(1 for key in redis.keys("pcfj:{*") if not key.endswith(b":lock"))


DIAGNOSE = ("status", "attempts", "progress", "http_status", "started_at", "finished_at")


def test_a_job_survives_the_kill_of_its_replica_and_resumes_from_the_cached_runs(redis_server: RedisServer) -> None:
    with ExitStack() as stack:
        # 2 s a call: the job's 7 calls outlast replica 2's start (a second at 1 s a call was too short on a slow
        # 2-core machine: the job had ended before replica 2 answered)
        fake = stack.enter_context(fake_provider_process("--latency-ms", "2000"))
        env = {
            "OPENAI_API_KEY": "test",
            "PCFJ_OPENAI_BASE_URL": f"{fake}/v1",
            "PCFJ_REDIS_URL": redis_server.url,
            "PCFJ_ALLOWED_MODELS": '["openai:judge-under-test"]',
            "PCFJ_BACKEND_CONCURRENCY": "1",  # one run at a time: the kill lands between runs 2 and 7
            "PCFJ_JOB_LEASE_S": "1.5",  # a killed replica's job is claimed again 1.5 s after its last renewal
            "PCFJ_JOB_SWEEP_S": "0.3",
            "PCFJ_REDIS_LOCK_TTL_S": "1.5",  # and its call in flight no longer holds the answer's single-flight lock
        }
        port = free_port()
        first = f"http://127.0.0.1:{port}"
        argv = [sys.executable, "-m", "pcfjudge.cli.main", "serve", "--port", str(port), "--log-level", "warning"]
        replica_1 = stack.enter_context(
            background_process(argv, ready_url=f"{first}/healthz", env=env, name="replica 1")
        )

        accepted = httpx.post(f"{first}/v1/jobs", json={"endpoint": "/judge/listwise", "request": REQUEST}, timeout=10)
        assert accepted.status_code == 202, accepted.text
        location = accepted.headers["location"]

        def job(base: str) -> dict[str, Any]:
            found: dict[str, Any] = httpx.get(f"{base}{location}", timeout=10).json()
            return found

        running = wait_until(lambda: (j := job(first))["status"] == "running" and j, what="the job to start")
        assert running["attempts"] == 1
        second = stack.enter_context(serve_process(env=env))  # replica 2, sweeping the same Redis
        assert job(second)["status"] == "running"  # any replica answers for any job

        wait_until(lambda: cached_runs(redis_server) >= 3, what="three runs in the cache", timeout_s=60)
        replica_1.send_signal(signal.SIGKILL)  # mid-job: no shutdown, no hand-over, the lease just stops
        replica_1.wait(10)
        killed_at = time.monotonic()
        cached_at_kill = cached_runs(redis_server)
        calls_at_kill = provider_calls(fake)
        assert 3 <= cached_at_kill < K

        try:
            done = wait_until(
                lambda: (j := job(second))["status"] in ("succeeded", "failed") and j, what="the resume", timeout_s=90
            )
        except pytest.fail.Exception:  # seen once in CI (2026-11-30): say where the job was, for the next look
            state = job(second)
            pytest.fail(f"no resume within 90 s of the kill; the job: { ({k: state.get(k) for k in DIAGNOSE}) }")
        resumed_after_s = time.monotonic() - killed_at
        calls_after = provider_calls(fake)

    response = done["response"]
    assert done["status"] == "succeeded" and done["http_status"] == 200, done
    assert done["attempts"] == 2  # replica 1 started it, replica 2 resumed it
    assert response["diagnostics"]["runs_ok"] == K and response["k"] == K
    # The runs replica 1 finished came from the cache; replica 2 asked the provider for the rest only (the call
    # replica 1 had in flight at the kill was never stored: it is made again).
    assert response["usage"]["cache_hits"] == cached_at_kill
    assert response["usage"]["backend_calls"] == K - cached_at_kill
    assert calls_after - calls_at_kill == K - cached_at_kill
    assert done["progress"] == {"calls_done": K, "cache_hits": cached_at_kill, "call_errors": 0}
    assert resumed_after_s < 60
    print(  # the evidence, for the log (pytest -s)
        f"cached at kill: {cached_at_kill}; provider calls at kill: {calls_at_kill}, after: {calls_after}; "
        f"resumed and finished {resumed_after_s:.1f}s after the kill"
    )
