"""The shared Redis cache against a real private redis-server: hits, keys, TTL, modes, K-prefix reuse, sharing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import pytest
from pcfjudge.backends.base import Completion, JudgeCall, ProviderError
from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.backends.sim import SimBackend, SimParams
from pcfjudge.backends.slots import Slots
from pcfjudge.cache.layered import LayeredCache
from pcfjudge.cache.redis_cache import RedisCache, hash_tag
from pcfjudge.cache.redis_client import connect
from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask, judge_listwise
from pcfjudge.engine.progress import Watch
from pcfjudge.engine.runner import Runner
from pcfjudge.judging.cache_keys import cache_key, item_hash
from pcfjudge.judging.prompts import PromptStyle
from pcfjudge.judging.window_rounds import WindowOptions
from pcfjudge.services import Services
from pcfjudge.settings import Settings
from pcfjudge.types import CacheMode, DecodingParams

from tests.support.redis_server import RedisServer

PARAMS = DecodingParams()


class Counting:
    """The sim judge behind a call counter; optionally slow or always failing."""

    provider = "sim"

    def __init__(self, *, latency_s: float = 0.0, fail: bool = False) -> None:
        self.calls = 0
        self.latency_s = latency_s
        self.fail = fail
        self.sim = SimBackend(SimParams())

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        self.calls += 1
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if self.fail:
            raise ProviderError("scripted failure")
        return await self.sim.complete(call)

    async def aclose(self) -> None:
        return None


def soon(seconds: float) -> float:
    """A deadline ``seconds`` from now on the running loop's clock."""
    return asyncio.get_running_loop().time() + seconds


def make_task(question: str = "Which is best?", k: int = 3, cache: CacheMode = "use", **kw: Any) -> ListwiseTask:
    ids, texts = ["a", "b", "c", "d"], ["alpha", "beta", "gamma", "delta"]
    return ListwiseTask(question, ids, texts, k=k, cache_mode=cache, **kw)


def services_for(server: RedisServer, backend: Counting, **settings: Any) -> Services:
    services = Services.build(Settings(redis_url=server.url, retry_base_s=0.0, max_retries=0, **settings))
    services.registry.backends["sim"] = backend
    return services


async def judge(services: Services, task: ListwiseTask, model: str = "sim:default") -> ListwiseResult:
    return await services.judge.using(timeout_s=10).listwise(dataclasses.replace(task, model=model))


def data_keys(server: RedisServer) -> list[str]:
    with server.client() as client:
        return sorted(k.decode() for k in client.keys("pcfj:*") if not k.endswith(b":lock"))


async def test_default_without_redis_url_is_memory_only() -> None:
    services = Services.build(Settings())
    assert (await services.cache.status())["layer"] == "memory"
    await services.aclose()


async def test_hit_and_miss_are_shared_through_redis(redis_server: RedisServer) -> None:
    backend = Counting()
    first, second = services_for(redis_server, backend), services_for(redis_server, backend)
    try:
        cold = await judge(first, make_task())
        assert (cold.backend_calls, cold.cache_hits, backend.calls) == (3, 0, 3)
        assert isinstance(second.cache, LayeredCache)
        warm = await judge(second, make_task())  # another "replica": empty memory, same Redis
        assert (warm.backend_calls, warm.cache_hits, backend.calls) == (0, 3, 3)
        assert (second.cache.shared.stats.hits, second.cache.front.stats.hits) == (3, 0)
        again = await judge(second, make_task())  # now from its memory layer: no Redis round trip
        assert (again.cache_hits, second.cache.shared.stats.hits, second.cache.front.stats.hits) == (3, 3, 3)
        assert warm.consensus == cold.consensus == again.consensus
        keys = data_keys(redis_server)
        assert len(keys) == 3 and len({hash_tag(k) for k in keys}) == 1  # one item → one hash tag → one MGET
    finally:
        await first.aclose()
        await second.aclose()


def _variant(name: str) -> tuple[ListwiseTask, str, DecodingParams]:
    """The base request (direct, K=1) with exactly one cache-key component changed."""
    task, model, params = make_task(k=1, mode="direct"), "sim:default", PARAMS
    if name == "item":
        task = dataclasses.replace(task, question="Which is worst?")
    elif name == "permutation":
        task = dataclasses.replace(task, mode="consensus", permutations=[(1, 0, 2, 3)])
    elif name == "model":
        model = "sim:oracle"
    elif name == "sample":
        task = dataclasses.replace(task, mode="repeated_canonical", k=2)
    elif name == "decoding":
        params = DecodingParams(temperature=0.7)
    return task, model, params


@pytest.mark.parametrize("component", ["item", "permutation", "model", "sample", "prompt_version", "decoding"])
async def test_changing_any_key_component_misses(redis_server: RedisServer, component: str) -> None:
    backend = Counting()
    services = services_for(redis_server, backend)
    runner = Runner(RedisCache(services.cache.shared.client, ttl_s=60))  # type: ignore[attr-defined]
    try:
        sim = services.registry.resolve("sim:default")
        base = await judge_listwise(make_task(k=1, mode="direct"), sim, runner, PARAMS, watch=Watch(until=soon(10)))
        assert base.backend_calls == 1
        repeat = await judge_listwise(make_task(k=1, mode="direct"), sim, runner, PARAMS, watch=Watch(until=soon(10)))
        assert (repeat.backend_calls, repeat.cache_hits) == (0, 1)
        task, model, params = _variant(component)
        if component == "prompt_version":  # the same task in another prompt version (v1, kept selectable)
            task = dataclasses.replace(task, style=PromptStyle("v1"))
        resolved = services.registry.resolve(model)
        changed = await judge_listwise(task, resolved, runner, params, watch=Watch(until=soon(10)))
        # "sample" repeats the canonical order twice: sample 0 is the base entry, sample 1 is new.
        expected = (1, 1) if component == "sample" else (1, 0)
        assert (changed.backend_calls, changed.cache_hits) == expected
        assert len(data_keys(redis_server)) == 2
    finally:
        await services.aclose()


async def test_entries_carry_a_ttl_and_the_judgment(redis_server: RedisServer) -> None:
    services = services_for(redis_server, Counting(), cache_ttl_s=3600)
    try:
        await judge(services, make_task())
        with redis_server.client() as client:
            for key in data_keys(redis_server):
                ttl_ms = client.pttl(key)
                assert 3_590_000 < ttl_ms <= 3_600_000
                value = json.loads(client.get(key) or b"null")
                assert set(value) == {"answer", "usage", "prompt_version", "model"}
                assert value["prompt_version"] == "listwise-v2" and value["model"] == "sim:default"
                assert value["answer"]["candidates"] and value["usage"]["input_tokens"] > 0
    finally:
        await services.aclose()


async def test_failed_runs_are_never_cached(redis_server: RedisServer) -> None:
    backend = Counting(fail=True)
    services = services_for(redis_server, backend)
    try:
        with pytest.raises(JudgingFailed):
            await judge(services, make_task())
        assert backend.calls == 3
        with redis_server.client() as client:
            assert client.dbsize() == 0  # no answers, and the failed holders deleted their locks
        backend.fail = False
        result = await judge(services, make_task())
        assert (result.backend_calls, result.cache_hits) == (3, 0)
    finally:
        await services.aclose()


async def test_refresh_rewrites_and_bypass_neither_reads_nor_writes(redis_server: RedisServer) -> None:
    backend = Counting()
    services = services_for(redis_server, backend)
    other = services_for(redis_server, backend)
    try:
        bypass = await judge(services, make_task(cache="bypass"))
        assert (bypass.backend_calls, backend.calls, data_keys(redis_server)) == (3, 3, [])
        await judge(services, make_task())
        assert backend.calls == 6 and len(data_keys(redis_server)) == 3
        again = await judge(services, make_task(cache="bypass"))
        assert (again.backend_calls, again.cache_hits, backend.calls) == (3, 0, 9)

        key = data_keys(redis_server)[0]
        with redis_server.client() as client:
            client.set(key, json.dumps({"answer": {"stale": True}, "usage": {}, "prompt_version": "x", "model": "x"}))
        refreshed = await judge(other, make_task(cache="refresh"))
        assert (refreshed.backend_calls, refreshed.cache_hits, backend.calls) == (3, 0, 12)
        with redis_server.client() as client:
            assert "stale" not in json.loads(client.get(key) or b"{}")["answer"]
        used = await judge(other, make_task())
        assert (used.backend_calls, used.cache_hits) == (0, 3)
    finally:
        await services.aclose()
        await other.aclose()


async def test_larger_k_reuses_the_smaller_k_entries(redis_server: RedisServer) -> None:
    backend = Counting()
    small_k, large_k = services_for(redis_server, backend), services_for(redis_server, backend)
    try:
        await judge(small_k, make_task(k=3))
        result = await judge(large_k, make_task(k=7))  # another replica: the 3 entries come from Redis
        assert (result.cache_hits, result.backend_calls, backend.calls) == (3, 4, 7)
    finally:
        await small_k.aclose()
        await large_k.aclose()


async def test_concurrent_identical_requests_on_two_replicas_make_k_calls(redis_server: RedisServer) -> None:
    backend = Counting(latency_s=0.2)
    replicas = [services_for(redis_server, backend) for _ in range(2)]
    try:
        results = await asyncio.gather(*(judge(replicas[i % 2], make_task(k=5)) for i in range(10)))
        assert backend.calls == 5
        assert all(r.consensus == results[0].consensus for r in results)
        with redis_server.client() as client:
            assert client.keys("*:lock") == []  # every holder released its lock
    finally:
        for s in replicas:
            await s.aclose()


async def test_windows_of_many_candidates_are_shared_between_replicas_and_with_plain_requests(
    redis_server: RedisServer,
) -> None:
    """40 candidates past one window (issue 30): every window judged once across two replicas, concurrent or not,
    and a window's entry is what a plain one-run request of its candidates in its order reads."""
    backend = Counting(latency_s=0.05)
    replicas = [services_for(redis_server, backend) for _ in range(2)]
    ids = [f"c{i}" for i in range(40)]
    texts = [f"Answer {i}: {i * 7 % 11}." for i in range(40)]
    task = ListwiseTask("Which is best?", ids, texts, k=4, windows=WindowOptions(top_n=1))
    try:
        both = await asyncio.gather(judge(replicas[0], task), judge(replicas[1], task))
        windows = both[0].windows
        assert windows is not None and both[0].consensus == both[1].consensus
        assert backend.calls == windows.windows_judged  # each window once, across both replicas
        again = await judge(replicas[1], task)
        assert (again.backend_calls, again.cache_hits) == (0, windows.windows_judged)
        first = both[0].runs[0]
        plain = ListwiseTask("Which is best?", first.order, [texts[ids.index(c)] for c in first.order], k=1)
        alone = await judge(replicas[0], plain)
        assert (alone.backend_calls, alone.cache_hits) == (0, 1)
        assert alone.runs[0].result == first.result
    finally:
        for s in replicas:
            await s.aclose()


def test_hash_tag_follows_redis_cluster_rules() -> None:
    assert hash_tag("pcfj:{abc}:listwise:0-1") == "abc"
    assert hash_tag("pcfj:{}:x") == "pcfj:{}:x"
    assert hash_tag("plain") == "plain"
    key = cache_key("f00d", "listwise", (0, 1), "sim:default", 0, "v1", PARAMS)
    assert hash_tag(key) == "f00d" and hash_tag(key + ":lock") == "f00d"


async def test_model_string_in_key_separates_models(redis_server: RedisServer) -> None:
    """A second provider with the same model name is a different key (provider is part of the model string)."""
    backend = Counting()
    services = services_for(redis_server, backend)
    try:
        sim = services.registry.resolve("sim:default")
        other = ResolvedModel("other", "default", backend, Slots(4, 64))
        await judge_listwise(make_task(k=1, mode="direct"), sim, services.runner, PARAMS, watch=Watch(until=soon(10)))
        result = await judge_listwise(
            make_task(k=1, mode="direct"), other, services.runner, PARAMS, watch=Watch(until=soon(10))
        )
        assert (result.backend_calls, backend.calls) == (1, 2)
    finally:
        await services.aclose()


async def test_waiting_on_another_replicas_lock_ends_at_the_deadline_without_a_call(redis_server: RedisServer) -> None:
    backend = Counting()
    services = services_for(redis_server, backend)
    task = make_task(k=1, mode="direct")
    key = cache_key(
        item_hash(task.question, task.texts), "listwise", (0, 1, 2, 3), "sim:default", 0, "listwise-v2", PARAMS
    )
    with redis_server.client() as client:
        client.set(f"{key}:lock", "another-replica", px=60_000)  # its call is still running
    try:
        model = services.registry.resolve("sim:default")
        with pytest.raises(JudgingFailed) as failed:
            await judge_listwise(task, model, services.runner, PARAMS, watch=Watch(until=soon(0.3)))
        assert failed.value.kind == "backend_timeout"
        # The waiter gives up at the deadline (or is cancelled there: nobody waits for it any more) …
        await asyncio.gather(*services.runner._inflight.values(), return_exceptions=True)
        assert not services.runner._inflight
        assert backend.calls == 0  # … and never calls the backend itself
    finally:
        await services.aclose()


async def test_keys_of_several_items_are_fetched_with_one_mget_per_item(redis_server: RedisServer) -> None:
    cache = RedisCache(connect(redis_server.url, timeout_s=1, connect_timeout_s=1), ttl_s=60)
    try:
        await cache.set("pcfj:{item-a}:run0", {"answer": "a0"})
        await cache.set("pcfj:{item-b}:run0", {"answer": "b0"})
        before = cache.attempts
        got = await cache.get_many(["pcfj:{item-a}:run0", "pcfj:{item-b}:run0", "pcfj:{item-a}:run1"])
        assert [g["answer"] if g else None for g in got] == ["a0", "b0", None]
        assert cache.attempts - before == 2  # one MGET per hash tag: Cluster-safe
        assert (cache.stats.hits, cache.stats.misses) == (2, 1)
    finally:
        await cache.aclose()
