"""Ready means connected: a replica configured with Redis answers ``/readyz`` 503 until Redis first answered, opens
its pool's connections at start-up (so the first burst pays for none), and is ready by itself once Redis is up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pcfjudge.settings import Settings

from tests.support.inprocess import app_with_services
from tests.support.processes import serve_process
from tests.support.redis_server import RedisServer, require_redis
from tests.support.waits import eventually, wait_until


@pytest.fixture
def redis_not_started(tmp_path: Path) -> Iterator[RedisServer]:
    """A private Redis on a free port that is not running yet (the test starts it; the fixture stops it)."""
    require_redis()
    server = RedisServer(tmp_path / "redis")
    try:
        yield server
    finally:
        server.stop()


def readyz(url: str) -> httpx.Response:
    return httpx.get(f"{url}/readyz", timeout=10)


@pytest.mark.slow
def test_readyz_is_503_until_redis_answers_then_200(redis_not_started: RedisServer) -> None:
    with serve_process(env={"PCFJ_REDIS_URL": redis_not_started.url}) as url:  # /healthz: the process is up
        before = readyz(url)
        assert before.status_code == 503 and before.headers["Retry-After"] == "1"
        body = before.json()
        assert body["error"] == "not_ready" and body["status"] == "starting"
        assert "waiting for Redis" in body["detail"] and body["cache"]["status"] == "degraded"
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200  # alive, just not ready

        redis_not_started.start()
        ready = wait_until(lambda: (r := readyz(url)).status_code == 200 and r, what="/readyz to answer 200")
        assert ready.json()["status"] == "ready" and ready.json()["cache"]["status"] == "ok"


async def test_the_pool_is_open_before_the_first_request(redis_server: RedisServer) -> None:
    settings = Settings(redis_url=redis_server.url, redis_warm_connections=6)
    async with app_with_services(settings) as (client, services):
        with redis_server.client() as redis:
            clients = [c for c in redis.client_list() if c.get("cmd") != "client|list"]
        assert len(clients) >= 6  # connected, handshaken and pinged at start-up, then left in the pool
        shared = services.cache.shared  # type: ignore[attr-defined]
        assert shared.connected and shared.retries == 0
        assert (await client.get("/readyz")).status_code == 200


async def test_ready_by_itself_once_redis_comes_up(redis_not_started: RedisServer) -> None:
    async with app_with_services(Settings(redis_url=redis_not_started.url)) as (client, services):
        shared = services.cache.shared  # type: ignore[attr-defined]
        assert not shared.connected
        assert services.unready() is not None
        redis_not_started.start()
        await eventually(lambda: shared.connected, what="the background connection to succeed")
        assert services.unready() is None
        assert (await client.get("/readyz")).json()["status"] == "ready"
