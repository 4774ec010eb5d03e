"""Judge fleets end to end (issue 39): three fake providers behind one model name (``fleet:judge``), the app in
process, real HTTP to the fakes, and for the shared limits two replicas on one real Redis.

* calls spread by load: a slow endpoint gets fewer calls than a fast one; a failing endpoint is cooled down after
  three failures, its calls retried on the others (no request lost), named by /readyz and counted by /metrics, then
  probed back once it answers again;
* an endpoint that answers 429 past N requests a minute: with its rpm declared and counted in Redis by both replicas
  it sees (almost) no request past its limit; counted by each replica alone, one limit's worth of 429s; not declared,
  a few (the first 429s' Retry-After blocks the endpoint for every replica).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pcfjudge.settings import Settings

from tests.support.basics import CANDIDATES, gauge
from tests.support.inprocess import FakeProvider, app_with_services, running_fake
from tests.support.redis_server import RedisServer
from tests.support.waits import free_port

RATE_LIMIT = 9  # the limited fake's requests per minute


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeProvider, FakeProvider, FakeProvider]]:
    with running_fake() as one, running_fake() as two, running_fake() as three:
        yield one, two, three


@pytest.fixture(autouse=True)
def _fresh(fakes: tuple[FakeProvider, ...]) -> None:
    for fake in fakes:
        fake.reset()


def models_file(tmp_path: Path, endpoints: list[tuple[str, FakeProvider | str, dict[str, Any]]]) -> Path:
    """A LiteLLM models file of one fleet, ``judge``: an endpoint per (id, fake provider or base URL, limits)."""
    lines = ["model_list:"]
    for ident, where, limits in endpoints:
        base = where if isinstance(where, str) else f"{where.url}/v1"
        lines += [
            "  - model_name: judge",
            "    litellm_params:",
            "      model: hosted_vllm/judge-x",
            f"      api_base: {base}",
            *(f"      {name}: {value}" for name, value in limits.items()),
            "    model_info:",
            f"      id: {ident}",
        ]
    path = tmp_path / "models.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def settings(path: Path, **overrides: Any) -> Settings:
    base: dict[str, Any] = {
        "models_file": path,
        "default_model": "fleet:judge",
        "openai_api_key": None,
        "anthropic_api_key": None,
        "retry_base_s": 0.001,
        "retry_max_s": 0.01,
        "default_k": 3,
        "request_timeout_s": 20.0,
    }
    return Settings(**(base | overrides))


async def judge_many(client: httpx.AsyncClient, n: int, tag: str, every_s: float = 0.0) -> list[httpx.Response]:
    """``n`` judgments, each its own question (no cache hits): all at once, or one every ``every_s`` (a stream)."""

    async def one(i: int) -> httpx.Response:
        await asyncio.sleep(i * every_s)
        body = {"question": f"{tag} question {i}?", "candidates": CANDIDATES, "k": 3}
        return await client.post("/judge/listwise", json=body)

    return list(await asyncio.gather(*(one(i) for i in range(n))))


def completions(fake: FakeProvider) -> int:
    count: int = fake.calls(last=0)["completions"].get("openai", 0)
    return count


def rate_limited(fake: FakeProvider) -> int:
    count: int = fake.calls(last=0)["faults_served"].get("429", 0)
    return count


def all_answered(responses: list[httpx.Response]) -> bool:
    """Every judgment answered 200 with every run successful: no request, and no run, lost."""
    return all(r.status_code == 200 and not any(run["error"] for run in r.json()["runs"]) for r in responses)


async def test_calls_spread_by_load_and_a_failing_endpoint_cools_down_and_comes_back(
    tmp_path: Path, fakes: tuple[FakeProvider, FakeProvider, FakeProvider]
) -> None:
    slow, bad, fast = fakes
    slow.faults(latency_ms=300)
    fast.faults(latency_ms=10)
    bad.faults(always="500")
    path = models_file(tmp_path, [("slow", slow, {}), ("bad", bad, {}), ("fast", fast, {})])
    # a cooldown long enough that the whole first stream and the second batch fit in one, on a loaded machine too
    async with app_with_services(settings(path, fleet_cooldown_s=8.0)) as (client, _):
        first = await judge_many(client, 16, "first", every_s=0.05)  # a steady stream of judgments
        assert all_answered(first), [r.text for r in first if r.status_code != 200][:1]
        failed_calls = bad.calls(last=0)["calls"].get("openai", 0)
        assert failed_calls >= 3 and completions(bad) == 0
        spread = completions(slow), completions(fast)
        assert spread[1] > 2 * spread[0] > 0, spread  # fewest outstanding: the fast one frees up sooner
        ready = (await client.get("/readyz")).json()["fleets"]["judge"]
        assert ready["unhealthy"] == ["bad"] and ready["endpoints"]["bad"]["cooldown_left_s"] > 0
        second = await judge_many(client, 4, "cooling")
        assert all_answered(second)
        assert bad.calls(last=0)["calls"].get("openai", 0) == failed_calls  # left alone while cooling down
        bad.faults(always=None)
        left = (await client.get("/readyz")).json()["fleets"]["judge"]["endpoints"]["bad"]["cooldown_left_s"]
        await asyncio.sleep(left + 0.2)  # rounded to 0.1 s
        third = await judge_many(client, 12, "back")
        assert all_answered(third)
        assert completions(bad) > 0  # probed, and back in the rotation
        assert (await client.get("/readyz")).json()["fleets"]["judge"]["unhealthy"] == []
        exposition = (await client.get("/metrics")).text
        assert 'pcfjudge_fleet_cooldowns_total{endpoint="bad",fleet="judge"}' in exposition
        assert 'pcfjudge_fleet_calls_total{endpoint="fast",fleet="judge",outcome="ok"}' in exposition
        listed = [m["id"] for m in (await client.get("/v1/models")).json()["data"]]
        assert "fleet:judge" in listed
    print(f"\nfirst stream: slow {spread[0]}, fast {spread[1]} answers; bad failed {failed_calls} calls, then cooled")


async def run_two_replicas(path: Path, redis_url: str | None, tag: str) -> list[httpx.Response]:
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            (await stack.enter_async_context(app_with_services(settings(path, redis_url=redis_url))))[0]
            for _ in range(2)
        ]
        batches = await asyncio.gather(*(judge_many(c, 8, f"{tag}{n}") for n, c in enumerate(clients)))
    return [r for batch in batches for r in batch]


async def test_rate_limits_hold_across_two_replicas_with_redis(
    tmp_path: Path, fakes: tuple[FakeProvider, FakeProvider, FakeProvider], redis_server: RedisServer
) -> None:
    limited, other, _ = fakes
    seen: dict[str, tuple[int, int]] = {}
    runs = {
        "shared": ({"rpm": RATE_LIMIT}, redis_server.url),  # declared, counted in Redis by both replicas
        "per_replica": ({"rpm": RATE_LIMIT}, None),  # declared, each replica counting its own
        "undeclared": ({}, redis_server.url),  # learnt from 429s only
    }
    for name, (limits, redis_url) in runs.items():
        for fake in (limited, other):
            fake.reset()
        limited.faults(rpm_limit=RATE_LIMIT, latency_ms=20)
        other.faults(latency_ms=20)
        redis_server.client().flushall()
        path = models_file(tmp_path, [("limited", limited, limits), ("other", other, {})])
        responses = await run_two_replicas(path, redis_url, name)
        assert all_answered(responses), name  # 2 replicas x 8 judgments x K=3: every run answered
        seen[name] = (rate_limited(limited), completions(limited))
    print(f"\n429s / answers at the limited endpoint (limit {RATE_LIMIT} a minute): {seen}")
    shared_429s, shared_answers = seen["shared"]
    assert shared_429s <= 2 and shared_answers <= RATE_LIMIT
    assert shared_answers >= RATE_LIMIT - 2  # and the endpoint's budget was used, not left idle
    assert seen["per_replica"][0] > shared_429s + 3  # each replica spends its own 9: the provider refuses the rest
    # Undeclared, the limit is learnt from the first 429s' Retry-After, a block every replica sees through Redis: a few
    # 429s, never none (how many depends on how many calls were in flight when the first came back).
    assert seen["undeclared"][0] >= 1


async def test_every_endpoint_down_is_a_502_naming_each_by_id_and_what_failed(tmp_path: Path) -> None:
    """Issue 49 row 9: with every endpoint of a fleet down, the 502 said only "only 0 of 2 judge runs succeeded".
    Now it names each endpoint (by id, not address) and that it could not be reached."""
    gone: list[tuple[str, FakeProvider | str, dict[str, Any]]] = [
        (ident, f"http://127.0.0.1:{free_port()}/v1", {}) for ident in ("east", "west")
    ]
    path = models_file(tmp_path, gone)
    async with app_with_services(settings(path, max_retries=0)) as (client, _):
        response = await client.post("/judge/listwise", json={"question": "Down?", "candidates": CANDIDATES, "k": 2})
    detail = response.json()["detail"]
    assert response.status_code == 502 and "127.0.0.1" not in detail, detail
    assert "endpoint east" in detail and "endpoint west" in detail and "connection failed" in detail, detail


BLOCKED = "pcfjudge_fleet_endpoint_blocked_until_seconds"


async def test_a_retry_after_of_an_hour_blocks_an_endpoint_for_the_cap_and_the_other_serves(
    tmp_path: Path, fakes: tuple[FakeProvider, FakeProvider, FakeProvider]
) -> None:
    """Issue 49 row 6: one 429 with Retry-After: 3600 blocked its endpoint for an hour, on every replica. Now the
    block is cut to PCFJ_FLEET_MAX_BLOCK_S, the other endpoint serves meanwhile, and /readyz (by id, no URL) and the
    metrics show it."""
    limited, other, _ = fakes
    limited.faults(["429"], retry_after=3600)
    path = models_file(tmp_path, [("limited", limited, {}), ("other", other, {})])
    async with app_with_services(settings(path, fleet_max_block_s=1.5)) as (client, _):
        first = await judge_many(client, 4, "limited")
        assert all_answered(first), [r.text for r in first if r.status_code != 200][:1]
        assert rate_limited(limited) == 1
        endpoint = (await client.get("/readyz")).json()["fleets"]["judge"]["endpoints"]["limited"]
        assert 0 < endpoint["blocked_left_s"] <= 1.5 and "url" not in endpoint
        until = gauge((await client.get("/metrics")).text, BLOCKED, fleet="judge", endpoint="limited")
        assert until is not None and 0 < until - time.time() <= 1.5
        served = completions(limited)
        blocked = await judge_many(client, 4, "blocked")
        assert all_answered(blocked) and completions(limited) == served  # left alone while blocked
        await asyncio.sleep(1.6)
        after = await judge_many(client, 8, "after")
        assert all_answered(after) and completions(limited) > served  # back after the cap, not an hour
        assert (await client.get("/readyz")).json()["fleets"]["judge"]["endpoints"]["limited"]["blocked_left_s"] == 0
