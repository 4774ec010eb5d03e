"""The lean path of ``OpenAIBackend``: one Chat Completions POST on a pooled aiohttp session, typed errors out.

Why it exists (measured with ``pcfjudge bench http``, README "Performance"): the official SDK spends most of a call's
client CPU walking the request params with typing introspection (``openai._utils._transform``) and building response
models, several times what the HTTP exchange itself costs, and on a busy service that CPU is serialised on the event
loop in front of every fan-out. This client sends the same bytes (the body ``OpenAIBackend.request`` builds,
serialised once with orjson; the SDK's own headers, key and base URL, read from the injected ``AsyncOpenAI``) and reads
the answer as JSON. What the SDK would do on failure is kept: its timeouts (connect / read / pool), no retries (the
runner owns them), and the same mapping of HTTP errors (``sdkerrors.status_error``, with the provider's message from
``error.message``, keys scrubbed).

The pool holds as many connections as the backend's call slots (``PCFJ_BACKEND_CONCURRENCY``), so a call never waits
for a connection it has a slot for. The session is made on first use, on the running loop. A proxy named by the
environment (``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY``, ``NO_PROXY``) is read once here: aiohttp's own
``trust_env`` would look it (and ``~/.netrc``) up again on a worker thread for every call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import aiohttp
import orjson

from pcfjudge.backends.base import BackendError, BackendTimeout, ProviderError
from pcfjudge.backends.sdkerrors import status_error
from pcfjudge.telemetry import tracing

MAX_ANSWER_BYTES = 8 * 1024 * 1024
"""The most of an answer's body read (a judge's answer is kilobytes): past it the call fails and its connection is
dropped, so an endpoint that streams without end costs at most this much memory, not gigabytes."""
log = logging.getLogger("pcfjudge")
Timeouts = tuple[float | None, float | None, float | None]
"""(connect, read, pool) seconds, as the SDK's ``httpx`` timeout names them; None: no limit."""


class ChatWire:
    def __init__(
        self,
        endpoint: str,
        headers: Mapping[str, str],
        timeouts: Timeouts,
        connections: int,
        *,
        provider: str = "openai",
        key_env: str = "OPENAI_API_KEY",
        secrets: tuple[str, ...] = (),
        public: str = "",
    ) -> None:
        self.endpoint = endpoint
        self.headers = dict(headers)
        connect, read, pool = timeouts
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read, connect=pool)
        self.connections = connections
        self.provider, self.key_env, self.secrets, self.public = provider, key_env, secrets, public
        self.proxy = env_proxy(endpoint)
        self.observe: Callable[[Mapping[str, str]], None] | None = None  # shown each answer's headers (fleets)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            connector = aiohttp.TCPConnector(limit=self.connections, limit_per_host=self.connections)
            self._session = aiohttp.ClientSession(connector=connector, headers=self.headers, timeout=self.timeout)
            self._loop = loop
        return self._session

    async def post(self, body: bytes) -> dict[str, object]:
        """POST ``body``; the answer's JSON object, or a typed ``BackendError``. With tracing on, the request carries
        the call span's ``traceparent``."""
        traced = tracing.outgoing_headers()
        try:
            async with self._client().post(self.endpoint, data=body, proxy=self.proxy, headers=traced) as response:
                raw = await bounded_body(response, self.provider)
                status, headers = response.status, response.headers
        except TimeoutError:
            raise BackendTimeout(f"{self.provider} request timed out") from None
        except aiohttp.ClientError:
            log.warning("cannot reach the %s endpoint at %s", self.provider, self.public)  # its address: for operators
            raise ProviderError(f"cannot reach the {self.provider} endpoint (connection failed)") from None
        if status >= 400:
            raise self._status_error(status, raw, headers)
        if self.observe is not None:
            self.observe(headers)
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            raise ProviderError(f"{self.provider} answered {status} with a body that is not a JSON object")
        return data

    def _status_error(self, status: int, raw: bytes, headers: Mapping[str, str]) -> BackendError:
        """As the SDK reads an error: the body's ``error`` object's message, else the body's text."""
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        error = body.get("error", body) if isinstance(body, dict) else body
        message = error.get("message", "") if isinstance(error, dict) else str(error or "")
        return status_error(self.provider, status, str(message), headers, key_env=self.key_env, secrets=self.secrets)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (None: connect directly)."""
    parts = urlsplit(url)
    proxies = getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or proxy_bypass(parts.hostname or ""):
        return None
    return proxy


async def bounded_body(response: aiohttp.ClientResponse, provider: str, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The answer's body, read up to ``limit`` bytes; past it (or a Content-Length past it) the connection is dropped
    and the call fails (not retried: the endpoint would send as much again)."""
    if (response.content_length or 0) > limit:
        response.close()
        raise ProviderError(f"the {provider} endpoint's answer is over {limit} bytes; dropped", retryable=False)
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(65536):
        size += len(chunk)
        if size > limit:
            response.close()
            raise ProviderError(f"the {provider} endpoint's answer is over {limit} bytes; dropped", retryable=False)
        chunks.append(chunk)
    return b"".join(chunks)
