"""``pcfjudge.client.http`` against a real ``pcfjudge serve``, behind a proxy that injects 503s and dropped
connections: retries honour Retry-After, 502 is not retried by default, a final error carries the server's JSON."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from pcfjudge.client.http import (
    RetryPolicy,
    ServiceError,
    apost_json,
    auth_headers,
    default_key,
    default_timeout,
    default_url,
    parse_retry_after,
    post_json,
)

from tests.support.basics import CANDIDATES, QUESTION
from tests.support.flaky_proxy import FlakyProxy

pytestmark = pytest.mark.slow
BODY = {"question": QUESTION, "candidates": CANDIDATES, "k": 3, "include_runs": False}


def test_plain_post_returns_the_servers_json(serve_url: str) -> None:
    with httpx.Client(base_url=serve_url, timeout=60) as client:
        result = post_json(client, "/judge/listwise", BODY)
    assert result["k"] == 3 and set(result["ranking"]) == {"0", "1", "2"}


def test_a_503_is_retried_after_its_retry_after(serve_url: str) -> None:
    with FlakyProxy(serve_url, ["503"], retry_after="1") as proxy, httpx.Client(base_url=proxy.url) as client:
        started = time.monotonic()
        result = post_json(client, "/judge/listwise", BODY)
        waited = time.monotonic() - started
    assert [action for _, _, action in proxy.seen] == ["503", "forward"]
    assert result["ranking"] and waited >= 1.0  # it slept the server's Retry-After before the second try


def test_429_and_a_dropped_connection_are_retried(serve_url: str) -> None:
    plan = ["429", "drop", "503"]
    with FlakyProxy(serve_url, plan, retry_after="0") as proxy, httpx.Client(base_url=proxy.url) as client:
        result = post_json(client, "/judge/listwise", BODY, retry=RetryPolicy(backoff_s=0.01))
    assert [action for _, _, action in proxy.seen] == [*plan, "forward"]
    assert result["k"] == 3


def test_the_last_503_raises_with_the_servers_error_body(serve_url: str) -> None:
    policy = RetryPolicy(attempts=3)
    proxy = FlakyProxy(serve_url, ["503"] * 5, retry_after="0")
    with proxy, httpx.Client(base_url=proxy.url) as client, pytest.raises(ServiceError) as caught:
        post_json(client, "/judge/listwise", BODY, retry=policy)
    assert len(proxy.seen) == 3
    error = caught.value
    assert error.status == 503 and error.retry_after == 0.0
    assert error.body == {"error": "overloaded", "detail": "injected 503 by the test proxy"}
    assert str(error) == "HTTP 503 overloaded: injected 503 by the test proxy"


def test_502_is_not_retried_unless_asked(serve_url: str) -> None:
    with FlakyProxy(serve_url, ["502"], retry_after=None) as proxy, httpx.Client(base_url=proxy.url) as client:
        with pytest.raises(ServiceError) as caught:
            post_json(client, "/judge/listwise", BODY)
        assert caught.value.status == 502 and caught.value.retry_after is None and len(proxy.seen) == 1
        proxy.plan = ["502"]
        policy = RetryPolicy(statuses=frozenset({429, 502, 503}), backoff_s=0.01)
        assert post_json(client, "/judge/listwise", BODY, retry=policy)["k"] == 3
    assert [action for _, _, action in proxy.seen] == ["502", "502", "forward"]


def test_a_client_mistake_is_raised_at_once_with_the_field(serve_url: str) -> None:
    proxy = FlakyProxy(serve_url, [])
    with proxy, httpx.Client(base_url=proxy.url, timeout=60) as client, pytest.raises(ServiceError) as caught:
        post_json(client, "/judge/listwise", {**BODY, "k": 0})
    assert len(proxy.seen) == 1  # a 422 is never retried
    assert caught.value.status == 422 and caught.value.kind == "validation_error"
    assert "k" in caught.value.detail and str(caught.value).startswith("HTTP 422 validation_error: ")


async def test_async_twin_retries_the_same_way(serve_url: str) -> None:
    with FlakyProxy(serve_url, ["503", "drop"], retry_after="0") as proxy:
        async with httpx.AsyncClient(base_url=proxy.url, timeout=60) as client:
            result = await apost_json(client, "/judge/listwise", BODY, retry=RetryPolicy(backoff_s=0.01))
            with pytest.raises(ServiceError) as caught:
                await apost_json(client, "/judge/pairwise", {"question": QUESTION})
    assert result["k"] == 3 and caught.value.status == 422
    assert [action for _, _, action in proxy.seen] == ["503", "drop", "forward", "forward"]


def test_connection_refused_is_retried_then_raised() -> None:
    with httpx.Client(base_url="http://127.0.0.1:9") as client, pytest.raises(httpx.ConnectError):
        post_json(client, "/judge/listwise", BODY, retry=RetryPolicy(attempts=2, backoff_s=0.01))


def test_retry_after_forms_and_the_cap() -> None:
    assert parse_retry_after("7") == 7.0 and parse_retry_after(None) is None and parse_retry_after("soon") is None
    in_a_minute = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    assert 50 < (parse_retry_after(in_a_minute) or 0) <= 60
    policy = RetryPolicy(max_wait_s=2.0, backoff_s=0.5)
    assert policy.wait(0, 3600.0) == 2.0  # a long Retry-After is capped
    assert 0.25 <= policy.wait(1, None) <= 1.0 and policy.wait(10, None) == 2.0  # exponential with jitter, capped


def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_url() == "http://127.0.0.1:8000" and default_key() is None and auth_headers(None) == {}
    monkeypatch.setenv("PCFJ_URL", "http://judge.internal:9000")
    monkeypatch.setenv("PCFJ_API_KEY", "k-123")
    assert default_url() == "http://judge.internal:9000" and default_key() == "k-123"
    assert auth_headers(default_key()) == {"Authorization": "Bearer k-123"}
    assert default_timeout().read == 150.0
    monkeypatch.setenv("PCFJ_CLIENT_TIMEOUT_S", "5")
    assert default_timeout().read == 5.0 and default_timeout().connect == 5.0
