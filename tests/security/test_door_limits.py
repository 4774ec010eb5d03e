"""Issue 22, rows 1, 2 and 10: every front door bounded before any work (samples, and backend calls of all of a
reward request's groups together), and strict JSON bodies (no duplicate keys, no NaN/Infinity)."""

from __future__ import annotations

from typing import Any

import pytest
from pcfjudge.settings import Settings

from tests.support.inprocess import FakeProvider, app_client, app_with_services, provider_settings

PROMPT = "Which gas makes up most of Earth's atmosphere?"
RESPONSES = ["Nitrogen, about 78%.", "Oxygen.", "Carbon dioxide, mostly.", "Nitrogen."]


def provider_calls(fake: FakeProvider) -> int:
    return sum(fake.calls(last=0)["calls"].values())


# ── row 1: /get_reward had no sample limit ──────────────────────────────────────────────────────────────────────────


async def test_get_reward_refuses_more_samples_than_the_limit_before_any_call(fake: FakeProvider) -> None:
    n = 600  # > PCFJ_MAX_SAMPLES_PER_REQUEST (512); each its own prompt, so each its own group
    body = {"query": [f"Prompt {i}? Answer {i}." for i in range(n)], "prompts": [f"Prompt {i}?" for i in range(n)]}
    async with app_client(provider_settings("openai", fake)) as client:
        response = await client.post("/get_reward", json=body)
    assert response.status_code == 413, response.text[:300]
    assert response.json()["error"] == "too_many_samples"
    assert "PCFJ_MAX_SAMPLES_PER_REQUEST" in response.json()["detail"] and "512" in response.json()["detail"]
    assert provider_calls(fake) == 0


@pytest.mark.parametrize("route", ["/v1/reward", "/get_reward"])
async def test_the_sample_limit_is_the_setting_on_every_reward_door(route: str) -> None:
    samples = [{"prompt": PROMPT, "response": r} for r in RESPONSES]
    body: dict[str, Any] = {"samples": samples}
    if route == "/get_reward":
        body = {"query": [PROMPT + r for r in RESPONSES], "prompts": [PROMPT] * 4}
    async with app_client(Settings(max_samples_per_request=3)) as client:
        response = await client.post(route, json=body)
    assert response.status_code == 413, response.text
    assert "PCFJ_MAX_SAMPLES_PER_REQUEST" in response.json()["detail"]


# ── row 2: PCFJ_MAX_CALLS_PER_REQUEST applied per group, not per request ───────────────────────────────────────────


async def test_twelve_groups_at_k21_are_refused_as_one_request_before_any_call(fake: FakeProvider) -> None:
    samples = [{"prompt": f"{PROMPT} ({g})", "response": r} for g in range(12) for r in RESPONSES]
    # 168 (the default before issue 36): the total is what refuses 12 groups of 21 calls, none of them over its own cap
    async with app_client(provider_settings("openai", fake, max_reward_calls_per_request=168)) as client:
        response = await client.post("/v1/reward", json={"samples": samples, "k": 21})
    assert response.status_code == 422, response.text[:300]
    detail = response.json()["detail"]
    assert (
        response.json()["error"] == "over_limit" and "252" in detail and "PCFJ_MAX_REWARD_CALLS_PER_REQUEST" in detail
    )
    assert provider_calls(fake) == 0


async def test_hundreds_of_one_sample_groups_are_refused_too(fake: FakeProvider) -> None:
    samples = [{"prompt": f"Prompt {i}?", "response": "Yes."} for i in range(300)]
    async with app_client(provider_settings("openai", fake, max_reward_calls_per_request=168)) as client:
        response = await client.post("/v1/reward", json={"samples": samples})
        adapter = await client.post(
            "/get_reward",
            json={"query": [s["prompt"] + " Yes." for s in samples], "prompts": [s["prompt"] for s in samples]},
        )
    for refused in (response, adapter):
        assert refused.status_code == 422, refused.text[:300]
        assert "300 backend calls" in refused.json()["detail"]  # one pointwise call per lone sample
    assert provider_calls(fake) == 0


async def test_a_reward_request_within_the_total_is_judged() -> None:
    samples = [{"prompt": f"{PROMPT} ({g})", "response": r} for g in range(3) for r in RESPONSES]
    async with app_client(Settings(max_reward_calls_per_request=9, default_k=3)) as client:
        ok = await client.post("/v1/reward", json={"samples": samples})
        over = await client.post("/v1/reward", json={"samples": samples, "k": 4})
    assert ok.status_code == 200 and ok.json()["usage"]["backend_calls"] == 9
    assert over.status_code == 422 and "12 backend calls" in over.json()["detail"]


async def test_a_collected_group_counts_at_the_size_it_waits_for() -> None:
    async with app_with_services(Settings(max_reward_calls_per_request=5)) as (client, _services):
        one = {"samples": [{"prompt": PROMPT, "response": RESPONSES[0]}], "group_size": 4, "k": 7}
        response = await client.post("/v1/reward", json=one)
    assert response.status_code == 422 and "7 backend calls" in response.json()["detail"]


# ── row 10: duplicate keys and NaN/Infinity literals ─────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("route", "raw", "needle"),
    [
        ("/judge/listwise", '{"question": "q?", "candidates": ["a", "b"], "k": 3, "k": 1}', "duplicate key 'k'"),
        (
            "/judge/listwise",
            '{"question": "q?", "candidates": [{"id": "a", "text": "x", "text": "y"}, "b"]}',
            "duplicate key 'text'",
        ),
        ("/judge/pairwise", '{"question": "q", "response_a": "a", "response_b": "b", "question": "r"}', "'question'"),
        ("/v1/reward/one", '{"prompt": "2+2?", "response": "4", "label": NaN}', "NaN is not a JSON number"),
        ("/v1/reward/one", '{"prompt": "2+2?", "response": "4", "label": Infinity}', "Infinity"),
        ("/get_reward", '{"query": ["p a"], "prompts": ["p"], "labels": [-Infinity]}', "-Infinity"),
        ("/judge/listwise", '{"question": "q?", "candidates": ["a", "b"], "max_cost_usd": NaN}', "NaN"),
    ],
)
async def test_json_that_is_not_strict_json_is_a_422_saying_what(route: str, raw: str, needle: str) -> None:
    async with app_client() as client:
        response = await client.post(route, content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "validation_error" and needle in response.json()["detail"]
    assert response.json()["errors"][0]["field"] == "body"


async def test_tei_rerank_answers_a_strict_json_refusal_in_its_own_shape() -> None:
    raw = '{"query": "q?", "texts": ["a", "b"], "texts": ["c", "d"]}'
    async with app_client() as client:
        response = await client.post("/rerank", content=raw, headers={"content-type": "application/json"})
        broken = await client.post(
            "/judge/listwise", content='{"question": ', headers={"content-type": "application/json"}
        )
    assert response.status_code == 422 and response.json()["error_type"] == "Validation"
    assert "duplicate key 'texts'" in response.json()["error"]
    assert broken.status_code == 400 and broken.json()["error"] == "invalid_json"  # not JSON at all: unchanged
