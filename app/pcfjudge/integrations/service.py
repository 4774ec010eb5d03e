"""Where the service is and how the trainer-side integrations call it (httpx + standard library only).

``RewardService`` holds the URL, API key, timeout, retry policy and the options every ``/v1/reward`` request carries
(model, k, reward mode, group size and wait). Async callers share one ``httpx.AsyncClient`` per event loop (trainers
call a reward function thousands of times from one long-lived loop); ``aclose_clients()`` closes the current loop's.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from pcfjudge.client.http import RetryPolicy, apost_json, auth_headers, default_key, default_url, post_json

DEFAULT_TIMEOUT_S = 300.0  # a collected group waits (PCFJ_REWARD_GROUP_WAIT_MS) and is then judged: be generous
DEFAULT_RETRY = RetryPolicy(attempts=5, max_wait_s=60.0, backoff_s=1.0)
_OPTIONS = ("model", "k", "reward", "group_size", "group_wait_ms")
# A collected sample's request holds its connection until its whole group is judged: a small pool could be filled by
# partial groups whose other members then cannot be sent (until the wait ends). Allow every sample of a batch.
LIMITS = httpx.Limits(max_connections=4096, max_keepalive_connections=64)

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[RewardService, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


class RewardUnavailable(RuntimeError):
    """The service gave no reward for a sample (its judgment failed, or the service could not be reached)."""


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
