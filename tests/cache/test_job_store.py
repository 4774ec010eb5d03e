"""The job stores (``cache.job_store``: in process; ``cache.job_store_redis``: a real redis-server) keep the same
contract: per-owner limits (queued and running jobs counted, the bytes of every kept job, ended ones by their
result), an ended job without its request, queued jobs taken fairly between owners, one claim per job, leases that
lapse, renewals that see a cancel or a lost lease, a finish only by the holder, a release that does not count the
attempt, a job that keeps killing its runner failed, and records that expire; the in-process store bounded in
bytes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from pcfjudge.cache.job_record import RECORD_BYTES, Ending, JobRecord, JobStore
from pcfjudge.cache.job_store import MemoryJobStore
from pcfjudge.cache.job_store_redis import ACTIVE_KEY, RedisJobStore, job_key, owner_key
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.cache.redis_client import connect

from tests.support.redis_server import RedisServer

TTL_S = 60.0


def record(job_id: str, owner: str = "alice", size: int = 100) -> JobRecord:
    request = b"x" * size
    return JobRecord(job_id, owner, "/judge/listwise", request, {"prefer": "wait=5"}, size, webhook_url=None)


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[JobStore]:
    if request.param == "memory":
        yield MemoryJobStore()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    redis = RedisCache(connect(server.url, timeout_s=2, connect_timeout_s=2), ttl_s=TTL_S, op_timeout_s=5)
    try:
        yield RedisJobStore(redis)
    finally:
        await redis.aclose()


async def test_a_job_is_stored_queued_with_its_request(store: JobStore) -> None:
    admission = await store.admit(record("j1", size=10), 5, 1000, TTL_S)
    assert admission.admitted and admission.active == 0 and admission.created_ms > 0
    found = await store.get("j1")
    assert found is not None and found.status == "queued" and found.owner == "alice"
    assert found.request == b"x" * 10 and found.headers == {"prefer": "wait=5"} and found.attempts == 0
    assert found.created_ms == admission.created_ms and await store.get("nope") is None


async def test_per_owner_limits_count_active_jobs_and_the_bytes_of_all_kept_jobs(store: JobStore) -> None:
    assert (await store.admit(record("a1", size=400), 2, 2000, TTL_S)).admitted
    too_big = await store.admit(record("a2", size=1700), 2, 2000, TTL_S)
    assert too_big.refused == "bytes" and too_big.active == 1 and too_big.kept_bytes == 400
    assert (await store.admit(record("a3", size=1600), 2, 2000, TTL_S)).admitted  # exactly the byte limit
    full = await store.admit(record("a4", size=1), 2, 2000, TTL_S)
    assert full.refused == "count" and full.active == 2
    assert (await store.admit(record("b1", owner="bob"), 2, 2000, TTL_S)).admitted  # another owner: own limits
    # an ended job no longer counts as queued or running, and keeps only its result (and the record) in bytes
    claimed = await store.claim("a1", "r1", 30, 3, b"{}")
    assert claimed is not None
    assert await store.finish("a1", "r1", Ending("succeeded", 200, b'{"ok":true}', {"calls_done": 1}), TTL_S)
    assert await store.cancel("a3")
    ended = (RECORD_BYTES + len(b'{"ok":true}')) + RECORD_BYTES
    assert (await store.admit(record("a5", size=2000 - ended), 2, 2000, TTL_S)).admitted
    over = await store.admit(record("a6", size=1), 2, 2000, TTL_S)
    assert over.refused == "bytes" and over.active == 1 and over.kept_bytes == 2000  # ended jobs still count


async def test_an_ended_job_keeps_its_result_and_drops_its_request(store: JobStore) -> None:
    for job_id in ("j1", "j2", "j3"):
        await store.admit(record(job_id, size=1000), 5, 10_000, TTL_S)
    assert await store.claim("j1", "r1", 30, 3, b"{}") is not None
    assert await store.finish("j1", "r1", Ending("succeeded", 200, b'{"a":1}'), TTL_S)
    assert await store.cancel("j2")
    for _ in range(2):  # j3 keeps losing its runner: failed on its last attempt
        assert await store.claim("j3", "r1", 0.01, 2, b'{"error":"job_abandoned"}') is not None
        await asyncio.sleep(0.05)
    assert await store.claim("j3", "r2", 30, 2, b'{"error":"job_abandoned"}') is None
    for job_id in ("j1", "j2", "j3"):
        found = await store.get(job_id)
        assert found is not None and found.status in ("succeeded", "cancelled", "failed")
        assert found.request == b"" and found.headers == {}, job_id
    done = await store.get("j1")
    assert done is not None and done.response == b'{"a":1}'


async def test_queued_jobs_are_taken_fairly_between_owners(store: JobStore) -> None:
    for n in range(5):
        await store.admit(record(f"a{n}"), 100, 100_000, TTL_S)
    assert await store.claim("a0", "r1", 30, 3, b"{}") is not None
    await store.admit(record("b0", owner="bob"), 100, 100_000, TTL_S)
    await store.admit(record("b1", owner="bob"), 100, 100_000, TTL_S)
    # bob's first job goes before alice's backlog, then the two owners take turns
    assert await store.claimable(10) == ["b0", "a1", "b1", "a2", "a3", "a4"]
    assert await store.claim("b0", "r1", 30, 3, b"{}") is not None
    assert await store.claimable(2) == ["a1", "b1"]


async def test_the_in_process_store_is_bounded_in_bytes() -> None:
    store = MemoryJobStore(max_bytes=2500)
    await store.admit(record("a1", size=1000), 5, 10_000, TTL_S)
    assert await store.claim("a1", "r1", 30, 3, b"{}") is not None
    assert await store.finish("a1", "r1", Ending("succeeded", 200, b"x" * 900), TTL_S)
    assert (await store.admit(record("b1", owner="bob", size=1000), 5, 10_000, TTL_S)).admitted
    assert (await store.admit(record("c1", owner="carol", size=1000), 5, 10_000, TTL_S)).admitted
    assert await store.get("a1") is None  # the oldest ended job was forgotten to make room
    refused = await store.admit(record("d1", owner="dave", size=1000), 5, 10_000, TTL_S)
    assert refused.refused == "store" and await store.get("d1") is None  # the rest is queued: no room


async def test_one_claim_per_job_and_a_lapsed_lease_is_claimed_again(store: JobStore) -> None:
    await store.admit(record("j1"), 5, 10_000, TTL_S)
    assert await store.claimable(10) == ["j1"]
    first, second = await asyncio.gather(store.claim("j1", "r1", 0.3, 3, b"{}"), store.claim("j1", "r2", 0.3, 3, b"{}"))
    assert [c is not None for c in (first, second)].count(True) == 1
    holder = "r1" if first is not None else "r2"
    other = "r2" if holder == "r1" else "r1"
    running = await store.get("j1")
    assert running is not None and running.status == "running" and running.runner == holder
    assert running.attempts == 1 and running.started_ms is not None
    assert await store.claimable(10) == []  # held by a live lease
    assert await store.claim("j1", other, 0.3, 3, b"{}") is None
    assert await store.renew("j1", holder, 0.3, {"calls_done": 2, "cache_hits": 0, "call_errors": 0}) == "ok"
    await asyncio.sleep(0.45)  # the holder stops renewing: killed
    assert await store.claimable(10) == ["j1"]
    taken = await store.claim("j1", other, 30, 3, b"{}")
    assert (
        taken is not None
        and taken.attempts == 2
        and taken.progress == {"calls_done": 2, "cache_hits": 0, "call_errors": 0}
    )
    assert taken.started_ms == running.started_ms  # the first start stays (the job's timeout counts from it)
    assert await store.renew("j1", holder, 30, {}) == "lost"
    assert not await store.finish("j1", holder, Ending("succeeded", 200, b"{}"), TTL_S)  # only the holder finishes
    assert await store.finish("j1", other, Ending("succeeded", 200, b'{"a":1}', {"calls_done": 3}), TTL_S)
    done = await store.get("j1")
    assert done is not None and done.status == "succeeded" and done.http_status == 200 and done.response == b'{"a":1}'
    assert done.runner is None and done.finished_ms is not None and done.progress == {"calls_done": 3}
    assert await store.claimable(10) == [] and await store.claim("j1", "r3", 30, 3, b"{}") is None


async def test_cancel_reaches_the_runner_at_its_next_renewal(store: JobStore) -> None:
    await store.admit(record("j1"), 5, 10_000, TTL_S)
    assert await store.claim("j1", "r1", 30, 3, b"{}") is not None
    assert await store.cancel("j1")
    assert await store.renew("j1", "r1", 30, {}) == "cancelled"
    assert not await store.finish("j1", "r1", Ending("succeeded", 200, b"{}"), TTL_S)  # a cancelled job stays so
    found = await store.get("j1")
    assert found is not None and found.status == "cancelled" and found.finished_ms is not None
    assert not await store.cancel("j1")  # nothing left to cancel
    await store.admit(record("j2"), 5, 10_000, TTL_S)
    assert await store.cancel("j2")  # a queued job too
    assert await store.claimable(10) == []


async def test_a_released_job_is_claimable_at_once_and_the_attempt_is_not_counted(store: JobStore) -> None:
    await store.admit(record("j1"), 5, 10_000, TTL_S)
    assert await store.claim("j1", "r1", 30, 3, b"{}") is not None
    await store.release("j1", "r2")  # not the holder: nothing happens
    assert (await store.get("j1")).status == "running"  # type: ignore[union-attr]
    await store.release("j1", "r1")
    assert await store.claimable(10) == ["j1"]
    again = await store.claim("j1", "r2", 30, 3, b"{}")
    assert again is not None and again.attempts == 1


async def test_a_job_that_keeps_losing_its_runner_fails_after_the_last_attempt(store: JobStore) -> None:
    await store.admit(record("j1"), 5, 10_000, TTL_S)
    for runner in ("r1", "r2"):
        assert await store.claim("j1", runner, 0.05, 2, b"{}") is not None
        await asyncio.sleep(0.1)
    assert await store.claim("j1", "r3", 0.05, 2, b'{"error":"job_abandoned"}') is None
    found = await store.get("j1")
    assert found is not None and found.status == "failed" and found.http_status == 500
    assert json.loads(found.response or b"") == {"error": "job_abandoned"}
    assert await store.claimable(10) == []


async def test_webhook_outcome_is_kept_and_records_expire(store: JobStore) -> None:
    await store.admit(record("j1"), 5, 10_000, 0.3)
    await store.set_webhook("j1", {"url": "https://example.com/h", "delivered": True})
    found = await store.get("j1")
    assert found is not None and found.webhook == {"url": "https://example.com/h", "delivered": True}
    await asyncio.sleep(0.45)
    assert await store.get("j1") is None
    await store.set_webhook("j1", {"delivered": True})  # never brings an expired job back without its expiry
    assert await store.get("j1") is None
    assert (await store.admit(record("j2", size=10_000), 1, 10_000, TTL_S)).admitted  # the expired one no longer counts


async def test_redis_keys_are_one_hash_per_job_with_an_expiry_and_its_indexes(redis_server: RedisServer) -> None:
    redis = RedisCache(connect(redis_server.url, timeout_s=2, connect_timeout_s=2), ttl_s=TTL_S, op_timeout_s=5)
    store = RedisJobStore(redis)
    try:
        await store.admit(record("j1"), 5, 10_000, TTL_S)
        assert await store.claim("j1", "r1", 30, 3, b"{}") is not None
        with redis_server.client() as sync:
            assert 0 < sync.pttl(job_key("j1")) <= TTL_S * 1000
            assert sync.zscore(ACTIVE_KEY, "j1") > 0  # the lease's end: not due before it
            assert sync.hget(owner_key("alice"), "j1").decode().startswith("100:")
            assert await store.finish("j1", "r1", Ending("failed", 422, b"{}"), TTL_S)
            assert sync.zscore(ACTIVE_KEY, "j1") is None and sync.hget(job_key("j1"), "request") is None
            size, expiry, state = sync.hget(owner_key("alice"), "j1").decode().split(":")
            assert int(size) == RECORD_BYTES + 2 and state == "e" and int(expiry) > 0  # its result's bytes, ended
            assert 0 < sync.pttl(job_key("j1")) <= TTL_S * 1000
    finally:
        await redis.aclose()
