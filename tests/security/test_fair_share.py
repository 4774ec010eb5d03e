"""Issue 22, rows 5 and 7: fair share between keys (requests in flight and reward members waiting per key, a deadline
on a whole body, one key's flood never refusing another key's first request), and X-Forwarded-For trusted only from
configured proxies."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pcfjudge.security.door import Door
from pcfjudge.settings import Settings
from pydantic import SecretStr

from tests.support.inprocess import app_with_services
from tests.support.processes import serve_process
from tests.support.waits import eventually

ALICE, BOB = "sk-alice-0123456789", "sk-bob-9876543210"
KEYS = SecretStr(f"alice:{ALICE},bob:{BOB}")
BODY: dict[str, Any] = {"question": "Capital of France?", "candidates": ["Paris", "Lyon", "Nice"], "k": 1}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# ── row 5: one key occupying every pending slot ─────────────────────────────────────────────────────────────────


async def test_one_keys_flood_leaves_room_for_another_keys_first_request() -> None:
    settings = Settings(api_keys=KEYS, max_pending_requests=8, sim_latency_ms=3000, backend_concurrency=32)
    async with app_with_services(settings) as (client, services):
        limit = services.registry.resolve("sim:default").limit
        flood = [
            asyncio.create_task(
                client.post("/judge/listwise", json={**BODY, "question": f"Alice {i}?"}, headers=bearer(ALICE))
            )
            for i in range(10)
        ]
        # every one of alice's requests is either in flight (one call each) or already answered
        await eventually(lambda: limit.reserved + sum(t.done() for t in flood) == 10, what="alice's flood to settle")
        first = await client.post("/judge/listwise", json={**BODY, "question": "Bob?"}, headers=bearer(BOB))
        answers = await asyncio.gather(*flood)
    assert first.status_code == 200, first.text  # bob's first request got in while alice's flood waited
    refused = [r for r in answers if r.status_code == 503]
    assert len(refused) == 4 and all(r.status_code == 200 for r in answers if r not in refused)  # 6 = 3/4 of 8
    assert "PCFJ_MAX_PENDING_PER_KEY" in refused[0].json()["detail"] and refused[0].headers["retry-after"] == "1"


def test_the_door_admits_a_first_request_past_the_total_up_to_a_ceiling() -> None:
    door = Door(total=8, per_key=6)
    assert [door.enter("alice") for _ in range(6)] == [None] * 6
    assert "PCFJ_MAX_PENDING_PER_KEY" in (door.enter("alice") or "")
    assert [door.enter("carol"), door.enter("carol")] == [None, None]  # the total (8) is now full
    assert "PCFJ_MAX_PENDING_REQUESTS" in (door.enter("carol") or "")  # carol has one in flight already
    assert door.enter("bob") is None  # bob has none: admitted past the total, up to an eighth more (9)
    assert door.enter("dave") is not None  # the ceiling holds
    assert door.enter(None) is not None  # keys off: only the total
    door.leave("bob")
    assert door.pending == 8 and "bob" not in door.by_key


async def test_collected_reward_members_waiting_are_capped_per_key() -> None:
    settings = Settings(api_keys=KEYS, max_waiting_members_per_key=3)
    async with app_with_services(settings) as (client, services):
        url = "/v1/reward/one?group_size=2&group_wait_ms=600000"

        def member(i: int, key: str) -> asyncio.Task[httpx.Response]:
            body = {"prompt": f"Question {i}?", "response": "An answer."}
            return asyncio.create_task(client.post(url, json=body, headers=bearer(key)))

        held = [member(i, ALICE) for i in range(3)]
        await eventually(lambda: services.rewards.local.waiting() == 3, what="alice's three members to wait")
        refused = await asyncio.wait_for(member(3, ALICE), 10)  # refused at once, not held for 10 minutes
        bobs = await client.post("/v1/reward/one", json={"prompt": "2+2?", "response": "4"}, headers=bearer(BOB))
        for task in held:
            task.cancel()
        await asyncio.gather(*held, return_exceptions=True)
    assert refused.status_code == 503, refused.text
    assert "PCFJ_MAX_WAITING_MEMBERS_PER_KEY" in refused.json()["detail"] and "retry-after" in refused.headers
    assert bobs.status_code == 200, bobs.text


async def test_a_body_that_trickles_in_under_the_chunk_timeout_is_cut_at_the_whole_body_deadline() -> None:
    async def trickle() -> AsyncIterator[bytes]:
        yield b'{"question": "'
        for _ in range(60):  # a byte every 0.2 s: never 1 s apart, 12 s in all
            await asyncio.sleep(0.2)
            yield b"x"
        yield b'", "candidates": ["a", "b"]}'

    settings = Settings(body_timeout_s=1.0, body_deadline_s=1.5)
    async with app_with_services(settings) as (client, _services):
        response = await client.post("/judge/listwise", content=trickle(), headers={"content-type": "application/json"})
    assert response.status_code == 408, response.text
    assert response.json()["error"] == "body_timeout" and "PCFJ_BODY_DEADLINE_S" in response.json()["detail"]


# ── row 7: X-Forwarded-For from anyone on the same host ────────────────────────────────────────────────────────


def _codes(url: str) -> Counter[int]:
    with httpx.Client(base_url=url, timeout=30) as client:
        return Counter(
            client.post("/judge/listwise", json=BODY, headers={"x-forwarded-for": f"203.0.113.{i}"}).status_code
            for i in range(8)
        )


@pytest.mark.slow
def test_x_forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy() -> None:
    quota = {"PCFJ_QUOTA_REQUESTS_PER_MIN": "5", "PCFJ_SIM_LATENCY_MS": "0"}
    with serve_process(env=quota) as url:
        spoofed = _codes(url)  # the peer is 127.0.0.1, which uvicorn alone would trust
    assert spoofed == {200: 5, 429: 3}, spoofed
    with serve_process(env={**quota, "PCFJ_TRUSTED_PROXIES": "127.0.0.1"}) as url:
        trusted = _codes(url)  # a configured proxy: each forwarded client has its own quota
    assert trusted == {200: 8}, trusted
