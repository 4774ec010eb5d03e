"""/judge/pairwise end to end on ``openai:`` — the official SDK over real HTTP to the fake provider."""

from __future__ import annotations

from tests.doors.pairwise.test_api_pairwise import explain
from tests.support.inprocess import FakeProvider, app_client, provider_settings


async def test_pairwise_over_the_openai_sdk_matches_the_sim_judge(fake: FakeProvider) -> None:
    """The fake provider answers with the simulated judge, so every verdict equals sim:default's for the same pair."""
    keyed_seen = False
    async with app_client(provider_settings("openai", fake)) as client:
        for i in range(40):
            payload = {"question": f"Q{i}: capital of Peru?", "response_a": f"Lima ({i})", "response_b": f"Cusco {i}"}
            real = (await client.post("/judge/pairwise", json={**payload, "model": "openai:gpt-5.4"})).json()
            sim = (await client.post("/judge/pairwise", json={**payload, "model": "sim:default"})).json()
            assert real["model"] == "openai:gpt-5.4" and not real["degraded"], real
            explain(real)
            for key in ("winner", "direct", "swapped", "order_consistent", "override", "decision", "preference_a"):
                assert real[key] == sim[key], (key, real, sim)
            assert real["usage"]["input_tokens"] > 0 and real["usage"]["backend_calls"] == len(real["runs"])
            if real["keyed"]["ran"]:
                keyed_seen = True
                assert real["keyed"]["winner"] == sim["keyed"]["winner"] and real["keyed"]["resolved_answer"]
                break
    assert keyed_seen, "no pair needed the keyed pass"
    names = [r["body"]["response_format"]["json_schema"]["name"] for r in fake.calls(last=3)["requests"]]
    assert names == ["pairwise_judgment", "pairwise_judgment", "keyed_judgment"]


async def test_provider_failures_degrade_or_fail_the_request(fake: FakeProvider) -> None:
    payload = {"question": "2+2?", "response_a": "4", "response_b": "5", "model": "openai:gpt-5.4"}
    # One order's call fails on every attempt (1 + 2 retries): the other order's verdict stands, degraded.
    fake.faults([{"fault": "500", "times": 3}])
    async with app_client(provider_settings("openai", fake, max_retries=2)) as client:
        body = (await client.post("/judge/pairwise", json=payload)).json()
    assert body["degraded"] and body["decision"] in ("direct_only", "swapped_only")
    failed = [r for r in body["runs"] if r["error"]]
    assert len(failed) == 1 and failed[0]["error"].startswith("provider_error")
    assert body["keyed"]["skipped"] == "order_failed" and body["order_consistent"] is None
    # Every call rate limited: both orders fail → 503 JSON with Retry-After.
    fake.faults(always="429")
    async with app_client(provider_settings("openai", fake, max_retries=0)) as client:
        resp = await client.post("/judge/pairwise", json={**payload, "cache": "bypass"})
    assert resp.status_code == 503, resp.text
    assert resp.json()["error"] == "backend_overloaded" and resp.headers["retry-after"]
