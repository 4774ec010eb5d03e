"""Issue 11: API keys, per-key quotas (memory and Redis), cost caps and the model allowlist."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.security.api_keys import KeyRing
from pcfjudge.settings import Settings
from pydantic import SecretStr

from tests.support.inprocess import FakeProvider, app_client, app_with_services, provider_settings
from tests.support.redis_server import RedisServer

BODY: dict[str, Any] = {"question": "Capital of France?", "candidates": ["Paris", "Lyon", "Nice"], "k": 3}
ALICE, BOB = "sk-alice-0123456789", "sk-bob-9876543210"
KEYS = SecretStr(f"alice:{ALICE},bob:sha256:{hashlib.sha256(BOB.encode()).hexdigest()}")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_keys_on_every_judging_route_and_401_says_how() -> None:
    async with app_client(Settings(api_keys=KEYS)) as client:
        missing = await client.post("/judge/listwise", json=BODY)
        assert missing.status_code == 401 and missing.json()["error"] == "unauthorized"
        assert missing.headers["www-authenticate"] == 'Bearer realm="pcfjudge"'
        assert "Authorization: Bearer" in missing.json()["detail"] and missing.json()["request_id"]
        wrong = await client.post("/judge/listwise", json=BODY, headers=bearer("sk-nope"))
        assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
        pair = {"question": "2+2?", "response_a": "4", "response_b": "5"}
        assert (await client.post("/judge/pairwise", json=pair)).status_code == 401
        assert (await client.post("/judge/listwise", json=BODY, headers=bearer(ALICE))).status_code == 200
        assert (await client.post("/judge/listwise", json=BODY, headers={"x-api-key": BOB})).status_code == 200
        for open_path in ("/healthz", "/metrics", "/readyz", "/openapi.json"):
            assert (await client.get(open_path)).status_code == 200, open_path


async def test_ops_endpoints_need_a_key_when_protected() -> None:
    async with app_client(Settings(api_keys=KEYS, protect_ops=True)) as client:
        assert (await client.get("/healthz")).status_code == 200
        for path in ("/metrics", "/readyz"):
            assert (await client.get(path)).status_code == 401
            assert (await client.get(path, headers=bearer(ALICE))).status_code == 200


async def test_keys_file_and_names_not_keys_in_logs_and_metrics(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"# team keys\nalice:{ALICE}\n\nbob:sha256:{hashlib.sha256(BOB.encode()).hexdigest()}\n")
    caplog.set_level(logging.DEBUG)
    async with app_client(Settings(api_keys_file=keys)) as client:
        assert (await client.post("/judge/listwise", json=BODY)).status_code == 401
        ok = await client.post("/judge/listwise", json=BODY, headers=bearer(ALICE))
        assert ok.status_code == 200
        await client.post("/judge/listwise", json=BODY, headers=bearer(ALICE + "x"))
        metrics = (await client.get("/metrics")).text
    assert 'pcfjudge_requests_by_key_total{code="2xx",key="alice"}' in metrics
    access = [r for r in caplog.records if r.name == "pcfjudge.access"]
    assert any(getattr(r, "key", None) == "alice" and getattr(r, "status", None) == 200 for r in access)
    everything = caplog.text + metrics + "".join(str(r.__dict__) for r in caplog.records)
    assert ALICE not in everything and BOB not in everything


def test_bad_key_entries_name_the_line_never_the_key() -> None:
    with pytest.raises(ValueError, match="entry 2") as caught:
        KeyRing.parse(["alice:k1", "no-separator-secret"])
    assert "no-separator-secret" not in str(caught.value)
    with pytest.raises(ValueError, match="64 hex"):
        KeyRing.parse(["bob:sha256:abc"])
    assert KeyRing.parse(["a:x:y"]).identify("x:y") == "a"  # a plain key may contain ':'


async def test_request_quota_per_key_429_with_retry_after() -> None:
    settings = Settings(api_keys=KEYS, quota_requests_per_min=2)
    async with app_client(settings) as client:
        codes = [(await client.post("/judge/listwise", json=BODY, headers=bearer(ALICE))).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        refused = await client.post("/judge/listwise", json=BODY, headers=bearer(ALICE))
        assert refused.json()["error"] == "quota_exceeded" and int(refused.headers["retry-after"]) >= 1
        # another key has its own bucket
        assert (await client.post("/judge/listwise", json=BODY, headers=bearer(BOB))).status_code == 200


async def test_call_quota_charges_planned_calls_and_refuses_what_can_never_run() -> None:
    async with app_client(Settings(quota_calls_per_min=10)) as client:
        first = await client.post("/judge/listwise", json={**BODY, "k": 7})
        assert first.status_code == 200
        second = await client.post("/judge/listwise", json={**BODY, "k": 7, "seed": 1})
        assert second.status_code == 429 and "retry-after" in second.headers
        never = await client.post("/judge/listwise", json={**BODY, "k": 3, "executions": 4})
        assert never.status_code == 429 and "can never run" in never.json()["detail"]


async def test_cache_hits_are_refunded_to_the_call_quota() -> None:
    async with app_client(Settings(quota_calls_per_min=6)) as client:
        assert (await client.post("/judge/listwise", json=BODY)).json()["usage"]["backend_calls"] == 3
        for _ in range(3):  # all cache hits: the 3 planned calls are refunded each time
            again = await client.post("/judge/listwise", json=BODY)
            assert again.status_code == 200 and again.json()["usage"]["cache_hits"] == 3


async def test_quota_is_shared_by_replicas_through_redis(redis_server: RedisServer) -> None:
    settings = Settings(redis_url=redis_server.url, api_keys=KEYS, quota_requests_per_min=3)
    async with app_client(settings) as one, app_client(settings) as two:
        codes = []
        for client in (one, two, one, two):
            codes.append((await client.post("/judge/listwise", json=BODY, headers=bearer(ALICE))).status_code)
    assert codes == [200, 200, 200, 429]
    assert redis_server.client().exists("pcfj:quota:requests:alice")


async def test_quota_fails_open_when_redis_is_down(redis_server: RedisServer) -> None:
    settings = Settings(redis_url=redis_server.url, quota_requests_per_min=100, redis_breaker_min_ops=1)
    async with app_client(settings) as client:
        redis_server.kill()
        response = await client.post("/judge/listwise", json=BODY)
    assert response.status_code == 200  # memory buckets answer while Redis is unavailable


async def test_call_cap_names_the_cap_and_the_need_before_any_call() -> None:
    async with app_with_services(Settings(max_calls_per_request=64)) as (client, services):
        body = {**BODY, "candidates": list("abcdefgh"), "k": 64, "executions": 5, "cache": "bypass"}
        big = await client.post("/judge/listwise", json=body)
        assert big.status_code == 422 and big.json()["error"] == "over_limit"
        assert "320 backend calls" in big.json()["detail"] and "limit is 64" in big.json()["detail"]
        assert services.metrics is not None and len(services.runner._inflight) == 0


async def test_token_cap_refuses_huge_texts(fake: FakeProvider) -> None:
    """21 calls of 17 texts of 32,000 characters: about 2.9 million input tokens, over a cap of 2.5 million."""
    texts = ["x" * 32_000] * 16
    body = {"question": "q" * 32_000, "candidates": texts, "k": 7, "executions": 3, "cache": "bypass"}
    settings = provider_settings("openai", fake).replaced(max_input_tokens_per_request=2_500_000)
    async with app_client(settings) as client:
        response = await client.post("/judge/listwise", json=body)
    assert response.status_code == 422 and "input tokens" in response.json()["detail"]
    assert sum(fake.calls()["calls"].values()) == 0


async def test_models_outside_the_allowlist_are_refused_before_any_call(fake: FakeProvider) -> None:
    async with app_client(provider_settings("openai", fake)) as client:
        response = await client.post("/judge/listwise", json={**BODY, "model": "openai:o1-pro-2025-03-19"})
        assert response.status_code == 422 and response.json()["error"] == "model_not_allowed"
        assert "openai:judge-x" in response.json()["detail"] and "sim:*" in response.json()["detail"]
        assert (await client.post("/judge/listwise", json={**BODY, "model": "sim:oracle"})).status_code == 200
        assert sum(fake.calls()["calls"].values()) == 0
    async with app_client(provider_settings("openai", fake, allowed_models=["openai:*"])) as client:
        response = await client.post("/judge/listwise", json={**BODY, "model": "openai:o1-pro-2025-03-19"})
        assert response.status_code == 200
