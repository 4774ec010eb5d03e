"""PCFJ_REDIS_URL forms: parsing (no network), and a real 3-node Redis Cluster and a real Sentinel-managed master."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pcfjudge.backends.base import Completion, JudgeCall
from pcfjudge.backends.sim import SimBackend, SimParams
from pcfjudge.cache.redis_client import connect
from pcfjudge.engine.listwise_runs import ListwiseTask
from pcfjudge.services import Services
from pcfjudge.settings import Settings
from redis.asyncio import BlockingConnectionPool, Redis, RedisCluster

from tests.support.redis_server import RedisServer, require_redis
from tests.support.waits import free_cluster_port, wait_until


def test_plain_url_gets_short_timeouts_one_reconnect_and_a_waiting_pool() -> None:
    client = connect("redis://:secret@cache.internal:6380/2", timeout_s=0.25, connect_timeout_s=0.1, max_connections=8)
    assert isinstance(client, Redis)
    pool = client.connection_pool
    kwargs = pool.connection_kwargs
    assert (kwargs["host"], kwargs["port"], kwargs["db"], kwargs["password"]) == ("cache.internal", 6380, 2, "secret")
    assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (0.25, 0.1)
    # one retry, on a broken connection only (a timeout is never retried: the breaker handles a slow Redis)
    assert kwargs["retry"].get_retries() == 1 and kwargs["health_check_interval"] > 0
    assert isinstance(pool, BlockingConnectionPool) and pool.max_connections == 8 and pool.timeout == 0.5


def test_cluster_url_lists_every_seed_node() -> None:
    client = connect("redis+cluster://u:pw@10.0.0.1:7000,10.0.0.2:7001", timeout_s=0.25, connect_timeout_s=0.25)
    assert isinstance(client, RedisCluster)
    seeds = sorted((n.host, n.port) for n in client.nodes_manager.startup_nodes.values())
    assert seeds == [("10.0.0.1", 7000), ("10.0.0.2", 7001)]
    assert client.connection_kwargs["password"] == "pw" and client.retry.get_retries() == 1


def test_sentinel_url_names_the_service() -> None:
    client = connect("redis+sentinel://s1:26379,s2/mymaster/3", timeout_s=0.25, connect_timeout_s=0.25)
    pool = client.connection_pool
    assert pool.service_name == "mymaster" and pool.connection_kwargs["db"] == 3
    sentinels = pool.sentinel_manager.sentinels
    assert [
        (s.connection_pool.connection_kwargs["host"], s.connection_pool.connection_kwargs["port"]) for s in sentinels
    ] == [
        ("s1", 26379),
        ("s2", 26379),
    ]


@pytest.mark.parametrize(
    ("url", "fix"),
    [
        ("memcached://x:1", "use one of"),
        ("redis+cluster://h:7000/0", "drop the path"),
        ("redis+sentinel://h:26379", "name the Sentinel service"),
        ("redis+cluster://h:notaport", "host:port"),
    ],
)
def test_bad_urls_say_how_to_fix_them(url: str, fix: str) -> None:
    with pytest.raises(ValueError, match=fix):
        connect(url, timeout_s=0.25, connect_timeout_s=0.25)


def _task(question: str) -> ListwiseTask:
    return ListwiseTask(question, ["a", "b", "c", "d"], ["alpha", "beta", "gamma", "delta"], k=5)


class Counter(SimBackend):
    def __init__(self) -> None:
        super().__init__(SimParams())
        self.calls = 0

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        self.calls += 1
        return await super().complete(call)


async def _judge_twice(url: str, questions: list[str]) -> tuple[int, int]:
    """Judge every question on two fresh replicas; returns (backend calls, cache hits on the second replica)."""
    backend, hits = Counter(), 0
    for replica in range(2):
        services = Services.build(Settings(redis_url=url))
        services.registry.backends["sim"] = backend
        try:
            for q in questions:
                result = await services.judge.listwise(_task(q))
                hits += result.cache_hits if replica else 0
            assert (await services.cache.status())["status"] == "ok"
        finally:
            await services.aclose()
    return backend.calls, hits


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[list[RedisServer]]:
    """Three masters, slots spread by ``redis-cli --cluster create``."""
    require_redis()
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.skip("redis-cli not found (it ships with redis-server)")
    opts = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
    nodes = [RedisServer(tmp_path / f"node{i}", free_cluster_port(), extra=opts) for i in range(3)]
    try:
        for node in nodes:
            node.start()
        addrs = [f"127.0.0.1:{n.port}" for n in nodes]
        create = [cli, "--cluster", "create", *addrs, "--cluster-replicas", "0", "--cluster-yes"]
        subprocess.run(create, check=True, capture_output=True, timeout=60)
        wait_until(
            lambda: all(b"cluster_state:ok" in _info(n) for n in nodes),
            what="the test cluster to reach cluster_state:ok",
            interval_s=0.1,
        )
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def _info(node: RedisServer) -> bytes:
    with node.client() as client:
        return bytes(client.execute_command("CLUSTER", "INFO"))


@pytest.mark.slow
async def test_redis_cluster_one_slot_per_item(cluster: list[RedisServer]) -> None:
    url = f"redis+cluster://127.0.0.1:{cluster[0].port},127.0.0.1:{cluster[1].port}"
    questions = [f"question {i}" for i in range(6)]  # six items: their hash tags land on different nodes
    calls, hits = await _judge_twice(url, questions)
    assert (calls, hits) == (6 * 5, 6 * 5)
    holders = []
    for node in cluster:
        with node.client() as client:
            keys = [k.decode() for k in client.keys("pcfj:*")]
        holders.append({k.split("}")[0] for k in keys})
        assert all(len(k.split("}")[0]) > 6 for k in keys)
    assert sum(bool(h) for h in holders) >= 2  # items spread over the cluster …
    assert sum(len(h) for h in holders) == 6  # … and each item's five runs sit together on one node


@pytest.mark.slow
async def test_redis_sentinel_finds_the_master(tmp_path: Path, redis_server: RedisServer) -> None:
    sentinel = RedisServer(
        tmp_path / "sentinel",
        config=f"sentinel monitor mymaster 127.0.0.1 {redis_server.port} 1\n",
        extra=("--sentinel",),
    )
    sentinel.start()
    try:
        calls, hits = await _judge_twice(f"redis+sentinel://127.0.0.1:{sentinel.port}/mymaster", ["q1", "q2"])
        assert (calls, hits) == (10, 10)
        with redis_server.client() as client:
            assert len(client.keys("pcfj:*")) == 10
    finally:
        sentinel.stop()
