"""POST JSON to a pcfjudge service with retries: the transport under ``pcfjudge.Client`` and the RL reward adapters.

Imports only httpx and the standard library, so a trainer process can use it without FastAPI, Redis or a provider SDK.

* 429 and 503 are retried (the service answers them with ``Retry-After`` when it is overloaded, a quota is spent or a
  backend is down); so are connection failures (refused, reset, a keep-alive connection closed by the server). 502/504
  are not by default: add them with ``RetryPolicy(statuses=...)``. A 502 means the judge's answers failed after the
  service's own retries (``PCFJ_MAX_RETRIES``), e.g. a provider's 5xx, a bad key or an unreadable answer; the
  transient cases that a later try is likely to cure come as 503 with ``Retry-After``. (The Cohere SDK, and so
  langchain-cohere and llama-index's ``CohereRerank`` on it, retries every 5xx twice; llama-index's own loop then
  retries 500/503/504.)
* ``Retry-After`` (seconds or an HTTP date) is honoured, capped at ``max_wait_s``; without it the wait is exponential
  from ``backoff_s`` with jitter, also capped.
* A final non-2xx raises ``ServiceError`` carrying the server's JSON error body.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"
RETRY_STATUSES = frozenset({429, 503})
# Failures where the request did not reach the service or its answer was lost with the connection. Judging is
# idempotent (the same inputs give the same, cached, answer), so resending is safe. Read timeouts are not retried:
# the timeout is the caller's bound on the whole call.
RETRY_ERRORS: tuple[type[Exception], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)


class ServiceError(Exception):
    """The service answered non-2xx (after retries). ``body`` is its JSON error (``{"error", "detail", ...}``)."""

    def __init__(self, status: int, body: dict[str, Any], retry_after: float | None = None) -> None:
        self.status, self.body, self.retry_after = status, body, retry_after
        super().__init__(str(self))

    @property
    def kind(self) -> str:
        """The error kind: ``error`` in pcfjudge's shape, ``error_type`` in the TEI shape of ``/rerank``."""
        if "detail" in self.body or "error_type" not in self.body:
            return str(self.body.get("error", "http_error"))
        return str(self.body["error_type"])

    @property
    def detail(self) -> str:
        if "detail" in self.body:
            return str(self.body["detail"])
        return str(self.body.get("error", "")) if "error_type" in self.body else ""

    def __str__(self) -> str:
        text = f"HTTP {self.status} {self.kind}"
        return f"{text}: {self.detail}" if self.detail else text


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` counts every try (1 = no retry); waits are capped at ``max_wait_s``."""

    attempts: int = 5
    max_wait_s: float = 30.0
    backoff_s: float = 0.5
    statuses: frozenset[int] = field(default=RETRY_STATUSES)

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to sleep before try ``attempt + 1`` (``attempt`` counts from 0)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_wait_s)
        backoff: float = self.backoff_s * (2.0**attempt) * random.uniform(0.5, 1.0)
        return min(backoff, self.max_wait_s)


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(attempts=1)


def default_url() -> str:
    return os.environ.get("PCFJ_URL") or DEFAULT_URL


def default_timeout() -> httpx.Timeout:
    """``PCFJ_CLIENT_TIMEOUT_S`` seconds (default 150: the service's own deadline, PCFJ_REQUEST_TIMEOUT_S, is 120)."""
    seconds = float(os.environ.get("PCFJ_CLIENT_TIMEOUT_S") or 150.0)
    return httpx.Timeout(seconds, connect=min(seconds, 10.0))


def default_key() -> str | None:
    return os.environ.get("PCFJ_API_KEY") or None


def auth_headers(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date (seconds from now); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


def error_from(response: httpx.Response) -> ServiceError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        text = response.text.strip()[:500] or response.reason_phrase
        body = {"error": "http_error", "detail": text}
    return ServiceError(response.status_code, body, parse_retry_after(response.headers.get("retry-after")))


def _outcome(response: httpx.Response, retry: RetryPolicy, attempt: int) -> tuple[Any, float | None]:
    """(result, None) on 2xx; (None, seconds to wait) when retryable; raises ServiceError otherwise."""
    if response.is_success:
        return (response.json() if response.content else None), None
    error = error_from(response)
    if response.status_code in retry.statuses and attempt + 1 < retry.attempts:
        return None, retry.wait(attempt, error.retry_after)
    raise error


async def _aretried(send: Callable[[], Awaitable[httpx.Response]], retry: RetryPolicy) -> Any:
    """``send()`` until it answers 2xx (its decoded JSON) or a final error; retried as the module docstring says."""
    for attempt in range(max(retry.attempts, 1)):
        try:
            response = await send()
        except RETRY_ERRORS:
            if attempt + 1 >= retry.attempts:
                raise
            await asyncio.sleep(retry.wait(attempt, None))
            continue
        result, wait = _outcome(response, retry, attempt)
        if wait is None:
            return result
        await asyncio.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _retried(send: Callable[[], httpx.Response], retry: RetryPolicy) -> Any:
    """The blocking twin of ``_aretried``."""
    for attempt in range(max(retry.attempts, 1)):
        try:
            response = send()
        except RETRY_ERRORS:
            if attempt + 1 >= retry.attempts:
                raise
            time.sleep(retry.wait(attempt, None))
            continue
        result, wait = _outcome(response, retry, attempt)
        if wait is None:
            return result
        time.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")


async def apost_json(
    client: httpx.AsyncClient, path: str, payload: dict[str, Any], *, retry: RetryPolicy = DEFAULT_RETRY
) -> Any:
    """POST ``payload`` to ``path`` (relative to the client's base URL) and return the decoded JSON answer."""
    return await _aretried(lambda: client.post(path, json=payload), retry)


def post_json(client: httpx.Client, path: str, payload: dict[str, Any], *, retry: RetryPolicy = DEFAULT_RETRY) -> Any:
    """The blocking twin of ``apost_json``."""
    return _retried(lambda: client.post(path, json=payload), retry)


async def arequest_json(
    client: httpx.AsyncClient, method: str, path: str, *, retry: RetryPolicy = DEFAULT_RETRY
) -> Any:
    """GET or DELETE ``path`` (idempotent, so retried as ``apost_json`` is) and return the decoded JSON answer."""
    return await _aretried(lambda: client.request(method, path), retry)


def request_json(client: httpx.Client, method: str, path: str, *, retry: RetryPolicy = DEFAULT_RETRY) -> Any:
    """The blocking twin of ``arequest_json``."""
    return _retried(lambda: client.request(method, path), retry)
