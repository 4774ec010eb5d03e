"""Issue 11: admission control, cancellation when callers leave or deadlines pass, server timeouts, Redis pool
health, and the one JSON log line per request."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
from pcfjudge.settings import Settings

from tests.support.basics import OPENAI_KEY, ROOT
from tests.support.inprocess import FakeProvider, app_with_services
from tests.support.processes import clean_env, serve_process
from tests.support.redis_server import RedisServer
from tests.support.waits import free_port, wait_until

BODY: dict[str, Any] = {"question": "Capital of France?", "candidates": ["Paris", "Lyon", "Nice"], "k": 3}


def item(i: int, k: int = 3) -> dict[str, Any]:
    return {**BODY, "question": f"Question {i}?", "k": k, "include_runs": False}


async def test_queue_overflow_is_refused_at_once_with_retry_after() -> None:
    settings = Settings(backend_concurrency=2, max_queued_calls=4, sim_latency_ms=300)
    async with app_with_services(settings) as (client, services):
        responses = await asyncio.gather(*(client.post("/judge/listwise", json=item(i)) for i in range(5)))
        codes = sorted(r.status_code for r in responses)
        assert codes == [200, 200, 503, 503, 503]  # 2 × 3 calls fill 2 slots + 4 queued; the rest wait for nothing
        refused = next(r for r in responses if r.status_code == 503)
        assert refused.json()["error"] == "overloaded" and int(refused.headers["retry-after"]) >= 1
        assert services.registry.resolve("sim:default").limit.reserved == 0  # every reservation released


async def test_a_deadline_the_queue_cannot_meet_is_refused_up_front() -> None:
    # The simulated judge takes 0.5–1.5 × 400 ms per call: one measured call says at least 0.2 s.
    settings = Settings(backend_concurrency=1, sim_latency_ms=400, request_timeout_s=1.0)
    async with app_with_services(settings) as (client, _services):
        warm = await client.post("/judge/listwise", json={**item(0, k=1)})
        assert warm.status_code == 200
        response = await client.post("/judge/listwise", json=item(1, k=6))
        assert response.status_code == 503, response.text  # 6 calls one at a time ≥ 1.2 s > the 1 s deadline
        assert "remaining" in response.json()["detail"]


async def test_calls_stop_at_the_deadline_including_the_wait_for_a_slot() -> None:
    settings = Settings(backend_concurrency=1, sim_latency_ms=400, request_timeout_s=1.0, quorum=0.1)
    async with app_with_services(settings) as (client, services):
        response = await client.post("/judge/listwise", json={**item(0, k=5), "include_runs": True})
        assert response.status_code == 200 and response.json()["degraded"] is True
        errors = [r["error"] for r in response.json()["runs"] if r["error"]]
        assert errors and all("deadline" in e for e in errors)
        made = response.json()["diagnostics"]["runs_ok"]
        await asyncio.sleep(1.0)  # nothing keeps running for a request that has been answered
        assert not services.runner._inflight and services.registry.resolve("sim:default").limit.reserved == 0
        assert len(services.cache) == made  # type: ignore[arg-type]  # the abandoned runs never filled the cache


def _serve_env(fake: FakeProvider, **extra: str) -> dict[str, str]:
    return {
        "PCFJ_OPENAI_API_KEY": OPENAI_KEY,
        "PCFJ_OPENAI_BASE_URL": f"{fake.url}/v1",
        "PCFJ_DEFAULT_MODEL": "openai:judge-x",
        "PCFJ_MAX_RETRIES": "0",
        **extra,
    }


def _provider_calls(fake: FakeProvider) -> int:
    return sum(fake.calls()["calls"].values())


async def test_calls_of_clients_that_left_are_cancelled(fake: FakeProvider) -> None:
    # 6 requests of 3 calls each on 2 slots, a provider taking 3 s a call, every client gone at 0.4 s. Not cancelled,
    # their 18 calls would go on starting two by two every 3 s. Cancelled, nothing starts once the service has seen
    # the clients go. (On a loaded machine it may see them go one by one: a slot freed by the first request's
    # cancelled calls can start a call of a request whose leaving is noticed a few milliseconds later. So the test
    # counts what starts after a settling second, not the calls started before it.)
    fake.faults(latency_ms=3000)
    env = _serve_env(fake, PCFJ_BACKEND_CONCURRENCY="2")
    with serve_process(env=env) as url:
        async with httpx.AsyncClient(base_url=url, timeout=0.4) as client:
            results = await asyncio.gather(
                *(client.post("/judge/listwise", json=item(i)) for i in range(6)), return_exceptions=True
            )
        assert all(isinstance(r, httpx.TimeoutException) for r in results)  # every client gave up at 0.4 s
        await asyncio.sleep(1.0)  # the service sees every client go (before any first call could have ended)
        settled = _provider_calls(fake)
        await asyncio.sleep(6.5)  # > 2 rounds of provider latency: queued calls would have started by now
        started = _provider_calls(fake)
        assert 1 <= settled <= 12, f"{settled} provider calls before the service saw the clients go"  # 2 a request
        assert started == settled, f"{started - settled} provider calls started after every client had gone"
        fake.faults(latency_ms=0)
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            after = await client.post("/judge/listwise", json={**item(99), "k": 1})
        assert after.status_code == 200  # served at once: nothing of the abandoned work is queued ahead


def _raw(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(data)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (then ours is closed too)."""
    with sock:
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_slow_headers_slow_bodies_and_idle_connections_are_cut_off() -> None:
    env = {"PCFJ_HEADER_TIMEOUT_S": "1", "PCFJ_BODY_TIMEOUT_S": "1", "PCFJ_KEEP_ALIVE_S": "1"}
    with serve_process(env=env) as url:
        port = int(url.rsplit(":", 1)[1])
        partial = [_raw(port, b"POST /judge/listwise HTTP/1.1\r\nHost: x\r\n") for _ in range(20)]
        silent = _raw(port, b"")
        slow_body = _raw(port, b'POST /judge/listwise HTTP/1.1\r\nHost: x\r\ncontent-length: 100\r\n\r\n{"q')
        idle = _raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        for sock in partial:
            assert _read_all(sock).startswith(b"HTTP/1.1 408"), "partial headers must get 408 and a close"
        assert _read_all(silent).startswith(b"HTTP/1.1 408")
        answer = _read_all(slow_body)
        assert answer.startswith(b"HTTP/1.1 408") and b'"error":"body_timeout"' in answer
        assert b'"status":"ok"' in _read_all(idle)  # answered, then closed when idle
        assert httpx.get(f"{url}/healthz").status_code == 200


async def test_redis_restart_costs_no_failed_operation(redis_server: RedisServer) -> None:
    settings = Settings(redis_url=redis_server.url)
    async with app_with_services(settings) as (client, services):
        shared = services.cache.shared  # type: ignore[attr-defined]
        assert (await client.post("/judge/listwise", json=item(0))).status_code == 200
        redis_server.kill()
        redis_server.start()
        for i in range(1, 6):
            assert (await client.post("/judge/listwise", json=item(i))).status_code == 200
        assert shared.failures == 0 and shared.breaker.state == "closed"  # stale connections were replaced


async def test_a_cold_burst_waits_for_a_pooled_connection(redis_server: RedisServer) -> None:
    settings = Settings(redis_url=redis_server.url, redis_max_connections=2, redis_pool_timeout_s=2.0)
    async with app_with_services(settings) as (client, services):
        responses = await asyncio.gather(*(client.post("/judge/listwise", json=item(i)) for i in range(16)))
        assert all(r.status_code == 200 for r in responses)
        shared = services.cache.shared  # type: ignore[attr-defined]
        assert shared.failures == 0, shared.last_error


def test_json_log_one_line_per_request(tmp_path: Any) -> None:
    port = free_port()
    log_path = tmp_path / "serve.log"
    env = clean_env({"PCFJ_API_KEYS": "ci:sk-ci-secret"})
    argv = [sys.executable, "-m", "pcfjudge.cli.main", "serve", "--port", str(port), "--log-format", "json"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: _up(url), what="pcfjudge serve", timeout_s=30)
            headers = {"Authorization": "Bearer sk-ci-secret", "x-request-id": "log-test-1"}
            assert httpx.post(f"{url}/judge/listwise", json=item(0), headers=headers).status_code == 200
            assert httpx.post(f"{url}/judge/listwise", json=item(0)).status_code == 401
            time.sleep(0.3)
        finally:
            proc.terminate()
            proc.wait(10)
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]  # every line is JSON
    access = [line for line in lines if line.get("logger") == "pcfjudge.access"]
    judged = next(line for line in access if line["request_id"] == "log-test-1")
    assert judged["route"] == "/judge/listwise" and judged["status"] == 200 and judged["key"] == "ci"
    assert judged["backend_calls"] == 3 and judged["cache_hits"] == 0 and judged["latency_ms"] > 0
    assert any(line["status"] == 401 and line["key"] == "anonymous" for line in access)
    assert "sk-ci-secret" not in log_path.read_text()


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.parametrize("fmt", ["text"])
def test_text_log_format_is_the_default(fmt: str) -> None:
    from pcfjudge.telemetry.logs import log_config

    config = log_config(fmt)  # type: ignore[arg-type]
    assert config["formatters"]["default"]["()"].__name__ == "TextAccessFormatter"


async def test_past_the_pending_limit_a_request_is_refused_at_the_door() -> None:
    settings = Settings(max_pending_requests=2, sim_latency_ms=300)
    async with app_with_services(settings) as (client, _services):
        responses = await asyncio.gather(*(client.post("/judge/listwise", json=item(i)) for i in range(4)))
        assert sorted(r.status_code for r in responses) == [200, 200, 503, 503]
        refused = next(r for r in responses if r.status_code == 503)
        assert "PCFJ_MAX_PENDING_REQUESTS" in refused.json()["detail"] and refused.headers["retry-after"] == "1"
        assert (await client.get("/healthz")).status_code == 200  # GETs are never held at the door


def test_an_idle_backend_admits_a_request_larger_than_its_queue() -> None:
    from pcfjudge.backends.slots import Saturated, Slots

    slots = Slots(size=2, max_queued=0)
    slots.reserve(21, remaining_s=1.0)  # nothing ahead (and no latency measured yet): admitted
    assert slots.reserved == 21
    with pytest.raises(Saturated) as refused:  # a backend error; the runner declines the request with it
        slots.reserve(1, remaining_s=1.0)  # now something is ahead: the queue is full
    assert refused.value.failure == "backend_overloaded" and refused.value.retry_after is not None
    slots.release(21)
    slots.reserve(3, remaining_s=1.0)
    assert slots.reserved == 3
