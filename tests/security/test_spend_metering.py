"""Issue 22, rows 8 and 9: retries counted against caps and quotas as what they cost, a call shared in flight charged
once, and an opt-in per-key cache namespace."""

from __future__ import annotations

import asyncio
from typing import Any

from pcfjudge.settings import Settings
from pydantic import SecretStr

from tests.support.inprocess import FakeProvider, app_client, app_with_services, provider_settings

BODY: dict[str, Any] = {"question": "Capital of France?", "candidates": ["Paris", "Lyon", "Nice"], "k": 3}
ALICE, BOB = "sk-alice-0123456789", "sk-bob-9876543210"
KEYS = SecretStr(f"alice:{ALICE},bob:{BOB}")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def provider_calls(fake: FakeProvider) -> int:
    return sum(fake.calls(last=0)["calls"].values())


# ── row 8: retries and shared calls ─────────────────────────────────────────────────────────────────────────────


async def test_provider_error_retries_count_against_the_call_cap(fake: FakeProvider) -> None:
    fake.faults(always="500")
    settings = provider_settings("openai", fake, max_calls_per_request=4, max_retries=2)
    async with app_client(settings) as client:
        response = await client.post("/judge/listwise", json={**BODY, "cache": "bypass"})
    assert response.status_code == 502, response.text
    assert provider_calls(fake) == 4  # 3 calls × 3 attempts would be 9; the cap is the request's, retries included
    assert "over_limit" in response.json()["detail"]


async def test_truncation_retries_are_charged_to_the_call_quota(fake: FakeProvider) -> None:
    # One call (k=1), answered unusably once: the faults go to calls in the order they arrive, so with several calls
    # a retry may arrive before another call's first attempt and take its fault.
    fake.faults(["truncated"])
    settings = provider_settings("openai", fake, quota_calls_per_min=2)
    async with app_client(settings) as client:
        first = await client.post("/judge/listwise", json={**BODY, "k": 1})
        assert first.status_code == 200 and provider_calls(fake) == 2
        second = await client.post("/judge/listwise", json={**BODY, "question": "Capital of Italy?", "k": 1})
    assert second.status_code == 429, second.text  # the two attempts used the quota, not the one run


async def test_a_reward_requests_groups_share_one_allowance_retries_included(fake: FakeProvider) -> None:
    fake.faults(always="500")
    settings = provider_settings("openai", fake, max_reward_calls_per_request=7, max_retries=5, default_k=3)
    samples = [{"prompt": f"Question {g}?", "response": r} for g in range(2) for r in ("Yes.", "No.")]
    async with app_client(settings) as client:
        response = await client.post("/v1/reward", json={"samples": samples})
    assert response.status_code in (502, 503), response.text
    assert provider_calls(fake) == 7  # two groups of K=3 (6 planned) and their retries: 7 attempts in all


async def test_a_call_shared_in_flight_is_charged_once(fake: FakeProvider) -> None:
    fake.faults(latency_ms=300)
    settings = provider_settings("openai", fake, quota_calls_per_min=30)
    async with app_client(settings) as client:
        same = await asyncio.gather(*(client.post("/judge/listwise", json=BODY) for _ in range(10)))
        assert all(r.status_code == 200 for r in same), [r.text for r in same]
        assert provider_calls(fake) == 3
        assert sum(r.json()["usage"]["backend_calls"] for r in same) == 3  # the others report cache hits
        assert sum(r.json()["usage"]["cache_hits"] for r in same) == 27
        fake.faults(latency_ms=0)
        other = await client.post("/judge/listwise", json={**BODY, "question": "Capital of Spain?", "k": 7})
    assert other.status_code == 200, other.text  # 27 of the 30 planned calls were refunded


# ── row 9: the shared cache tells one key what another judged ──────────────────────────────────────────────────


async def test_the_cache_is_shared_by_default() -> None:
    async with app_client(Settings(api_keys=KEYS)) as client:
        await client.post("/judge/listwise", json=BODY, headers=bearer(ALICE))
        bobs = await client.post("/judge/listwise", json=BODY, headers=bearer(BOB))
    assert bobs.json()["usage"]["cache_hits"] == 3  # what saves money, and what a multi-tenant operator may not want


async def test_per_key_cache_keeps_keys_apart_in_the_cache_and_in_flight() -> None:
    async with app_with_services(Settings(api_keys=KEYS, cache_per_key=True, sim_latency_ms=200)) as (client, svc):
        alices = await client.post("/judge/listwise", json=BODY, headers=bearer(ALICE))
        bobs = await client.post("/judge/listwise", json=BODY, headers=bearer(BOB))
        again = await client.post("/judge/listwise", json=BODY, headers=bearer(ALICE))
        both = await asyncio.gather(
            *(client.post("/judge/listwise", json={**BODY, "question": "Q?"}, headers=bearer(k)) for k in (ALICE, BOB))
        )
        status = (await client.get("/readyz")).json()
        entries = len(svc.cache)  # type: ignore[arg-type]
    assert (alices.json()["usage"]["backend_calls"], bobs.json()["usage"]["backend_calls"]) == (3, 3)
    assert bobs.json()["usage"]["cache_hits"] == 0 and again.json()["usage"]["cache_hits"] == 3
    assert [r.json()["usage"]["backend_calls"] for r in both] == [3, 3]  # no call shared across keys either
    assert status["cache"]["per_key"] is True
    assert entries == 12  # two items, each once per key
