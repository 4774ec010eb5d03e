"""The HTTP client every SDK backend is given: the SDK's aiohttp transport, each answer read to at most
``MAX_ANSWER_BYTES``, as the lean path (``chat_wire.bounded_body``) reads it.

Without it the SDKs read a whole body into memory, whatever its size: an endpoint that answers 200 with a chunked body
that never ends grew the process by gigabytes in one request (issue 49, row 5). The bound is a response hook (httpx's
public ``event_hooks``): it runs once the headers are in, before the SDK reads the body, refuses a ``Content-Length``
over the limit and wraps the body's stream in one that fails the call past it. The failure is our ``ProviderError``
(not retried: the endpoint would send as much again); the openai SDK passes it through as it is, the anthropic SDK
wraps it in ``APIConnectionError`` (its ``__cause__``), which ``answer_too_large`` unwraps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

from pcfjudge.backends.base import ProviderError
from pcfjudge.backends.chat_wire import MAX_ANSWER_BYTES


def sdk_http_client(
    client: type[httpx2.AsyncClient], provider: str, connections: int, limit: int = MAX_ANSWER_BYTES
) -> httpx2.AsyncClient:
    """The ``provider`` SDK's aiohttp client (``client``: its ``DefaultAioHttpClient``, so that this module loads
    neither SDK) with ``connections`` pooled connections, every answer bounded to ``limit`` bytes."""

    async def bound(response: httpx2.Response) -> None:
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise too_large(provider, limit)
        assert isinstance(response.stream, httpx2.AsyncByteStream)  # an async client's response
        response.stream = _Bounded(response.stream, provider, limit)

    return client(
        limits=httpx2.Limits(max_connections=connections, max_keepalive_connections=connections),
        event_hooks={"response": [bound]},
    )


def too_large(provider: str, limit: int) -> ProviderError:
    return ProviderError(f"the {provider} endpoint's answer is over {limit} bytes; dropped", retryable=False)


def answer_too_large(exc: BaseException) -> ProviderError | None:
    """The bound's own failure behind an SDK's connection error, if that is what it was."""
    cause = exc.__cause__
    return cause if isinstance(cause, ProviderError) and not cause.retryable else None


class _Bounded(httpx2.AsyncByteStream):
    """A body's stream that fails once more than ``limit`` bytes have come (the response is then closed, and its
    connection dropped, by the client reading it)."""

    def __init__(self, inner: httpx2.AsyncByteStream, provider: str, limit: int) -> None:
        self.inner, self.provider, self.limit = inner, provider, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self.inner:
            size += len(chunk)
            if size > self.limit:
                raise too_large(self.provider, self.limit)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()
