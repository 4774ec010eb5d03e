"""/judge/listwise through each real backend (official SDK → real HTTP → fake provider), app in process.

Every injected fault gives the documented outcome: a run that fails after its retries is listed with its error
kind and the answer is a degraded 200 while a quorum (2 of K=3) succeeds; below quorum the answer is a 5xx JSON
naming the cause (429/529 → 503 with Retry-After, 5xx → 502, too slow → 504). Keys never leave the server.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.support.basics import ANTHROPIC_KEY, CANDIDATES, OPENAI_KEY
from tests.support.inprocess import FakeProvider, app_client, provider_settings

PROVIDERS = ["openai", "anthropic"]


@pytest.fixture(autouse=True)
def _short_retry_after(fake: FakeProvider) -> None:
    fake.faults(retry_after=0.01)  # keep Retry-After honoured but short


def _request(question: str = "In which year did the Berlin Wall fall?", **extra: Any) -> dict[str, Any]:
    return {"question": question, "candidates": CANDIDATES, "k": 3, **extra}


def _kinds(body: dict[str, Any]) -> list[str]:
    return [run["error"].split(":")[0] for run in body["runs"] if run["error"]]


def _calls(fake: FakeProvider, provider: str) -> int:
    count: int = fake.calls(last=0)["calls"].get(provider, 0)
    return count


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_judges_through_the_provider(fake: FakeProvider, provider: str) -> None:
    async with app_client(provider_settings(provider, fake)) as client:
        response = await client.post("/judge/listwise", json=_request())
        ready = (await client.get("/readyz")).json()
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == ("openai:judge-x" if provider == "openai" else "anthropic:judge-y")
    assert body["degraded"] is False
    assert body["diagnostics"]["runs_ok"] == 3
    assert body["usage"]["backend_calls"] == 3
    assert body["usage"]["input_tokens"] > 0 and body["usage"]["output_tokens"] > 0
    # The K permutations share one prefix: after the first run, the provider serves it from its cache.
    assert body["usage"]["cached_tokens"] > 0
    assert all(run["input_tokens"] > 0 for run in body["runs"])
    assert _calls(fake, provider) == 3
    assert provider in ready["backends"]
    assert ready["endpoints"][provider].rstrip("/") == (f"{fake.url}/v1" if provider == "openai" else fake.url)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("fault", "times", "kind", "calls"),
    [
        ("truncated", 2, "truncated", 4),  # an unusable answer is retried once, then the run fails
        ("bad_json", 2, "invalid_json", 4),
        ("wrong_labels", 2, "wrong_labels", 4),
        ("missing_label", 2, "wrong_labels", 4),
        ("refusal", 1, "refusal", 3),  # refusals are not retried
        ("content_filter", 1, "refusal", 3),
        ("429", 3, "rate_limited", 5),  # provider trouble: 1 call + max_retries (2)
        ("529", 3, "rate_limited", 5),
        ("500", 3, "provider_error", 5),
    ],
)
async def test_one_failed_run_gives_a_degraded_200(
    fake: FakeProvider, provider: str, fault: str, times: int, kind: str, calls: int
) -> None:
    fake.faults([{"fault": fault, "times": times}])
    async with app_client(provider_settings(provider, fake)) as client:
        response = await client.post("/judge/listwise", json=_request())
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["degraded"] is True
    assert _kinds(body) == [kind]
    assert body["diagnostics"]["runs_failed"] == 1
    assert _calls(fake, provider) == calls


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", ["429", "500", "truncated"])
async def test_a_fault_that_clears_on_retry_leaves_no_trace(fake: FakeProvider, provider: str, fault: str) -> None:
    fake.faults([fault])
    async with app_client(provider_settings(provider, fake)) as client:
        response = await client.post("/judge/listwise", json=_request())
    assert response.status_code == 200, response.text
    assert response.json()["degraded"] is False
    assert _calls(fake, provider) == 4


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("fault", "status", "error", "cause"),
    [
        ("429", 503, "backend_overloaded", "rate_limited"),
        ("529", 503, "backend_overloaded", "rate_limited"),
        ("500", 502, "backend_error", "provider_error"),
        ("truncated", 502, "backend_error", "truncated"),
        ("refusal", 502, "backend_error", "refusal"),
    ],
)
async def test_below_quorum_is_a_clear_5xx(
    fake: FakeProvider, provider: str, fault: str, status: int, error: str, cause: str
) -> None:
    fake.faults(always=fault)
    async with app_client(provider_settings(provider, fake)) as client:
        response = await client.post("/judge/listwise", json=_request())
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error
    assert f"3× {cause}" in body["detail"]
    if status == 503:
        assert int(response.headers["Retry-After"]) >= 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_slow_provider_past_the_deadline_is_504(fake: FakeProvider, provider: str) -> None:
    fake.faults(always="slow", slow_seconds=30)
    async with app_client(provider_settings(provider, fake, request_timeout_s=0.5)) as client:
        response = await client.post("/judge/listwise", json=_request())
    assert response.status_code == 504, response.text
    assert response.json()["error"] == "backend_timeout"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_keys_never_leave_the_server(fake: FakeProvider, provider: str, caplog: pytest.LogCaptureFixture) -> None:
    """Not in responses (even when the provider echoes a wrong key), /readyz, /metrics or any log record."""
    key = OPENAI_KEY if provider == "openai" else ANTHROPIC_KEY
    for name in (None, "openai", "anthropic", "httpx", "httpx2", "httpcore2", "pcfjudge", "uvicorn"):
        caplog.set_level(logging.DEBUG, logger=name)
    texts: list[str] = []
    async with app_client(provider_settings(provider, fake)) as client:
        ok = await client.post("/judge/listwise", json=_request("Which planet is largest?"))
        fake.faults(expect_key="sk-some-other-key-0000000000")  # now the provider rejects and echoes our key
        rejected = await client.post("/judge/listwise", json=_request("Which planet is smallest?"))
        for path in ("/readyz", "/metrics", "/healthz"):
            texts.append((await client.get(path)).text)
    assert ok.status_code == 200
    assert rejected.status_code == 502
    assert "3× provider_error" in rejected.json()["detail"]
    assert _calls(fake, provider) == 3 + 3  # a rejected key is not retried
    texts += [ok.text, rejected.text, caplog.text]
    texts += [str(record.__dict__) for record in caplog.records]
    assert caplog.records, "expected the SDK and app to log something at DEBUG"
    for text in texts:
        assert key not in text
        assert key[-12:] not in text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_random_failures_give_honest_answers(fake: FakeProvider, provider: str) -> None:
    """With 30% of calls failing (500/429), each request is a 200 (maybe degraded) or a clear 5xx JSON."""
    fake.faults(fail_rate=0.3)
    statuses: list[int] = []
    async with app_client(provider_settings(provider, fake)) as client:
        for i in range(20):
            response = await client.post("/judge/listwise", json=_request(f"Question number {i}?"))
            statuses.append(response.status_code)
            body = response.json()
            if response.status_code == 200:
                assert body["degraded"] == bool(_kinds(body))
                assert set(_kinds(body)) <= {"rate_limited", "provider_error"}
            else:
                assert response.status_code in (502, 503), response.text
                assert body["error"] in ("backend_error", "backend_overloaded") and body["detail"]
    assert 200 in statuses
    assert fake.calls(last=0)["faults_served"], "the fake should have injected failures"


async def test_unconfigured_provider_is_a_422_naming_the_key(fake: FakeProvider) -> None:
    async with app_client(provider_settings("openai", fake)) as client:
        response = await client.post("/judge/listwise", json=_request(model="anthropic:claude-x"))
    assert response.status_code == 422
    assert "ANTHROPIC_API_KEY" in response.json()["detail"]
