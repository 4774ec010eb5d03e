"""Three ``pcfjudge serve`` processes, one private Redis, one fake OpenAI-compatible provider that counts calls:
30 concurrent identical requests spread over the replicas cost exactly K provider calls and agree exactly, on cold
replicas (each just ready: ``/readyz`` 200, Redis connected) while one busy-loop process per core keeps the CPUs busy.
``pcfjudge bench flight`` repeats it over many cold starts."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack

import httpx
import pytest
from pcfjudge_lab.bench.procs import busy_cores

from tests.support.processes import fake_provider_process, serve_process
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

K = 5
PAYLOAD = {
    "question": "Which city is the capital of Australia?",
    "candidates": ["Sydney.", "Canberra.", "Melbourne, since 1901.", "I am not sure; possibly Canberra."],
    "k": K,
    "model": "openai:judge-under-test",
}


async def test_three_replicas_make_k_provider_calls_for_30_identical_requests(redis_server: RedisServer) -> None:
    # Provider latency keeps the 30 requests overlapping, as concurrent traffic behind a balancer would.
    with fake_provider_process("--latency-ms", "400") as fake:
        env = {
            "OPENAI_API_KEY": "test",
            "PCFJ_OPENAI_BASE_URL": f"{fake}/v1",
            "PCFJ_REDIS_URL": redis_server.url,
            "PCFJ_ALLOWED_MODELS": '["openai:judge-under-test"]',  # not a configured default: allow it explicitly
        }
        with ExitStack() as stack:
            urls = [stack.enter_context(serve_process(env=env, ready_path="/readyz")) for _ in range(3)]
            async with httpx.AsyncClient(timeout=120) as client:
                with busy_cores():  # one busy loop per core during the burst: no spare CPU for any replica
                    responses = await asyncio.gather(
                        *(client.post(f"{urls[i % 3]}/judge/listwise", json=PAYLOAD) for i in range(30))
                    )
                ready = [(await client.get(f"{url}/readyz")).json()["cache"] for url in urls]
                served = (await client.get(f"{fake}/_control/calls", params={"last": 0})).json()
                fail_open = [(await client.get(f"{url}/metrics")).text for url in urls]

    assert all(r.status_code == 200 for r in responses), [r.text for r in responses if r.status_code != 200]
    assert served["calls"] == {"openai": K}
    for text in fail_open:  # nothing went without the shared single flight
        assert "pcfjudge_single_flight_unavailable_calls_total 0.0" in text
        assert "pcfjudge_single_flight_duplicates_total 0.0" in text
    bodies = [r.json() for r in responses]
    first = bodies[0]
    assert first["model"] == "openai:judge-under-test" and first["diagnostics"]["runs_ok"] == K
    for body in bodies[1:]:
        assert body["winners"] == first["winners"]
        assert body["ranking"] == first["ranking"]
        assert body["candidates"] == first["candidates"]
        assert [r["judgments"] for r in body["runs"]] == [r["judgments"] for r in first["runs"]]
    assert all(c["layer"] == "redis+memory" and c["status"] == "ok" and c["breaker"] == "closed" for c in ready)
    with redis_server.client() as redis:
        assert len(redis.keys("pcfj:*")) == K  # K answers stored, every lock released
