"""Single flight across replicas at the lock level, against a real redis-server: answer, failure, crash, deadline."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.cache.redis_client import connect

from tests.redis_server import RedisServer

KEY = "pcfj:{item}:listwise:0-1:sim:default:0:listwise-v1:abc"
ANSWER = {"answer": {"candidates": []}, "usage": {}, "prompt_version": "listwise-v1", "model": "sim:default"}


def replica(server: RedisServer, lock_ttl_s: float = 10.0) -> RedisCache:
    client = connect(server.url, timeout_s=1.0, connect_timeout_s=1.0)
    return RedisCache(client, ttl_s=60, op_timeout_s=2.0, lock_ttl_s=lock_ttl_s, poll_s=(0.005, 0.05))


@pytest.fixture
async def pair(redis_server: RedisServer) -> AsyncIterator[tuple[RedisCache, RedisCache]]:
    a, b = replica(redis_server), replica(redis_server)
    yield a, b
    await a.aclose()
    await b.aclose()


def deadline(seconds: float) -> float:
    return asyncio.get_running_loop().time() + seconds


async def test_waiter_takes_the_holders_answer(pair: tuple[RedisCache, RedisCache]) -> None:
    holder, other = pair
    claim = await holder.claim(KEY, deadline(10))
    assert claim.lease is not None and claim.value is None
    waiting = asyncio.create_task(other.claim(KEY, deadline(10)))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the key is locked and has no answer yet
    await holder.set(KEY, ANSWER)
    await claim.release()
    got = await waiting
    assert got.value == ANSWER and got.lease is None


async def test_waiter_takes_over_when_the_holder_fails(pair: tuple[RedisCache, RedisCache]) -> None:
    holder, other = pair
    claim = await holder.claim(KEY, deadline(10))
    waiting = asyncio.create_task(other.claim(KEY, deadline(10)))
    await asyncio.sleep(0.05)
    await claim.release()  # failed call: nothing stored
    got = await waiting
    assert got.lease is not None and got.value is None
    await got.release()


async def test_crashed_holders_lock_expires_and_a_waiter_takes_over(
    redis_server: RedisServer, pair: tuple[RedisCache, RedisCache]
) -> None:
    _, other = pair
    with redis_server.client() as client:
        client.set(f"{KEY}:lock", "crashed-holder", px=300)  # a holder that died without releasing
    got = await other.claim(KEY, deadline(10))
    assert got.lease is not None
    with redis_server.client() as client:
        assert client.get(f"{KEY}:lock") not in (None, b"crashed-holder")
    await got.release()
    with redis_server.client() as client:
        assert client.get(f"{KEY}:lock") is None


async def test_wait_ends_at_the_request_deadline(
    redis_server: RedisServer, pair: tuple[RedisCache, RedisCache]
) -> None:
    _, other = pair
    with redis_server.client() as client:
        client.set(f"{KEY}:lock", "busy-holder", px=60_000)
    got = await other.claim(KEY, deadline(0.2))
    assert got.lease is None and got.value is None  # the runner then reports the deadline


async def test_refresh_never_takes_a_stored_answer_nor_waits(
    redis_server: RedisServer, pair: tuple[RedisCache, RedisCache]
) -> None:
    holder, other = pair
    await holder.set(KEY, ANSWER)
    mine = await holder.claim(KEY, deadline(10), fresh=True)
    assert mine.lease is not None and mine.value is None
    theirs = await other.claim(KEY, deadline(10), fresh=True)  # locked by the first refresh: call on its own
    assert theirs.lease is None and theirs.value is None
    used = await other.claim(KEY, deadline(10))  # a plain "use" caller still gets the stored answer
    assert used.value == ANSWER
    await mine.release()


async def test_holder_renews_its_lock_while_its_call_runs(redis_server: RedisServer) -> None:
    cache = replica(redis_server, lock_ttl_s=0.6)
    try:
        claim = await cache.claim(KEY, deadline(10))
        assert claim.lease is not None
        await asyncio.sleep(1.5)  # more than twice the lock lifetime
        with redis_server.client() as client:
            token = client.get(f"{KEY}:lock")
            assert token is not None and client.pttl(f"{KEY}:lock") > 0
            client.set(f"{KEY}:lock", "someone-else", px=60_000)
        await claim.release()  # never deletes a lock it no longer holds
        with redis_server.client() as client:
            assert client.get(f"{KEY}:lock") == b"someone-else"
    finally:
        await cache.aclose()
