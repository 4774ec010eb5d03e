"""Where the service is and how the trainer-side integrations call it (httpx + standard library only).

``RewardService`` holds the URL, API key, timeout, retry policy and the options every ``/v1/reward`` request carries
(model, k, reward mode, group size and wait). Async callers share one ``httpx.AsyncClient`` per event loop (trainers
call a reward function thousands of times from one long-lived loop); ``aclose_clients()`` closes the current loop's.

Failures are never silent. A request the service refuses as the caller's mistake (a 4xx other than 408 and 429: a
bad option, a group or batch over a limit, a bad key) raises ``RewardRequestRefused`` carrying the service's JSON
error (its ``detail`` names the field and the limit): retrying cannot cure it. A transient failure (5xx, 408/429 after
the retries, a timeout, a connection error) and a sample the service answered without a reward cost only those
rewards: each is logged as a WARNING on the ``pcfjudge.integrations`` logger (the status or error, and how many
rewards were dropped) and counted in a ``Failures`` (``failed_requests``, ``dropped_rewards``, ``last_error``):
``FAILURES`` for the whole process, and a ``PCFJudgeReward``'s own ``failures``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from pcfjudge.client.http import (
    RetryPolicy,
    ServiceError,
    apost_json,
    auth_headers,
    default_key,
    default_url,
    post_json,
)

DEFAULT_TIMEOUT_S = 300.0  # a collected group waits (PCFJ_REWARD_GROUP_WAIT_MS) and is then judged: be generous
DEFAULT_RETRY = RetryPolicy(attempts=5, max_wait_s=60.0, backoff_s=1.0)
_OPTIONS = ("model", "k", "reward", "group_size", "group_wait_ms")
# A collected sample's request holds its connection until its whole group is judged: a small pool could be filled by
# partial groups whose other members then cannot be sent (until the wait ends). Allow every sample of a batch.
LIMITS = httpx.Limits(max_connections=4096, max_keepalive_connections=64)

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[RewardService, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


LOG = logging.getLogger("pcfjudge.integrations")
TRANSIENT_4XX = frozenset({408, 429})  # a body that arrived too slowly, a quota or rate limit: a later try may pass


class RewardUnavailable(RuntimeError):
    """The service gave no reward for a sample (its judgment failed, or the service could not be reached)."""


class RewardRequestRefused(ServiceError):
    """The service refused a reward request as a client error (4xx other than 408/429): a bad option, a group or
    batch over one of its limits, a bad key. ``status``, ``kind``, ``detail`` and ``body`` are the service's answer;
    retrying the same request cannot cure it, so the integrations raise it rather than give rewards of None."""

    def __str__(self) -> str:
        return f"pcfjudge refused the reward request: {super().__str__()}"


def refusal(exc: BaseException) -> RewardRequestRefused | None:
    """``exc`` as a ``RewardRequestRefused`` when it is the service's client-error answer, else None (transient)."""
    if isinstance(exc, ServiceError) and 400 <= exc.status < 500 and exc.status not in TRANSIENT_4XX:
        return RewardRequestRefused(exc.status, exc.body, exc.retry_after)
    return None


def describe(exc: BaseException) -> str:
    """A failed request's cause for a log line: the service's status and error, or the transport error."""
    if isinstance(exc, ServiceError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


_COUNTS_LOCK = threading.Lock()  # module level: a PCFJudgeReward (and its Failures) must pickle


@dataclass
class Failures:
    """Counts of what the integrations could not reward (see the module docstring); read them, e.g. log them."""

    failed_requests: int = 0
    """Reward requests that failed transiently after the retries (their samples got no reward)."""
    dropped_rewards: int = 0
    """Samples returned without a reward: those of failed requests and those the service answered with none."""
    last_error: str | None = None

    def add(self, requests: int, rewards: int, error: str) -> None:
        with _COUNTS_LOCK:
            self.failed_requests += requests
            self.dropped_rewards += rewards
            self.last_error = error


FAILURES = Failures()
"""Every integration's failures in this process (a ``PCFJudgeReward`` also keeps its own)."""


def note_failed_request(exc: BaseException, rewards: int, *counts: Failures) -> None:
    """Log and count one transiently failed request whose ``rewards`` samples get none."""
    error = describe(exc)
    LOG.warning("pcfjudge reward request failed (%s): %d rewards dropped (None)", error, rewards)
    for failures in (FAILURES, *counts):
        failures.add(1, rewards, error)


def note_missing_rewards(errors: list[str], *counts: Failures) -> None:
    """Log and count samples the service answered without a reward (their group's judgment failed)."""
    if not errors:
        return
    kinds = ", ".join(sorted(set(errors)))
    LOG.warning(
        "pcfjudge gave no reward for %d samples (%s): %d rewards dropped (None)", len(errors), kinds, len(errors)
    )
    for failures in (FAILURES, *counts):
        failures.add(0, len(errors), kinds)


@dataclass(frozen=True)
class RewardService:
    url: str = field(default_factory=default_url)
    api_key: str | None = field(default_factory=default_key, repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S
    retry: RetryPolicy = DEFAULT_RETRY
    options: tuple[tuple[str, Any], ...] = ()  # request fields: model, k, reward, group_size, group_wait_ms

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> RewardService:
        """From keyword settings (``url``, ``api_key``, ``timeout_s``, ``retries`` and the request options);
        URL and key default to PCFJ_URL / PCFJ_API_KEY."""
        options = tuple((name, kwargs[name]) for name in _OPTIONS if kwargs.get(name) is not None)
        retries = kwargs.get("retries")
        retry = DEFAULT_RETRY if retries is None else RetryPolicy(int(retries) + 1, DEFAULT_RETRY.max_wait_s)
        return cls(
            url=str(kwargs.get("url") or default_url()),
            api_key=kwargs.get("api_key") or default_key(),
            timeout_s=float(kwargs.get("timeout_s") or DEFAULT_TIMEOUT_S),
            retry=retry,
            options=options,
        )

    def body(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        return {"samples": samples, **dict(self.options)}

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers=auth_headers(self.api_key), timeout=self.timeout_s, limits=LIMITS
        )

    def async_client(self) -> httpx.AsyncClient:
        """This event loop's client for the service (created on first use)."""
        per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
        client = per_loop.get(self)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(
                base_url=self.url, headers=auth_headers(self.api_key), timeout=self.timeout_s, limits=LIMITS
            )
            per_loop[self] = client
        return client

    async def apost(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = await apost_json(
            self.async_client(), "/v1/reward", self.body(samples), retry=self.retry
        )
        return result

    def post(self, client: httpx.Client, samples: list[dict[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = post_json(client, "/v1/reward", self.body(samples), retry=self.retry)
        return result


async def aclose_clients() -> None:
    """Close the clients the current event loop opened (e.g. at the end of training, or of a test)."""
    for client in _clients.pop(asyncio.get_running_loop(), {}).values():
        await client.aclose()


def reference_text(value: Any) -> str | None:
    """A label / ground truth as reference text: strings as they are, numbers as written, lists joined, else JSON."""
    if hasattr(value, "tolist"):  # numpy scalars and arrays (verl's non-tensor batch)
        value = value.tolist()
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return " | ".join(str(v) for v in value)
    return json.dumps(value, ensure_ascii=False, default=str)
