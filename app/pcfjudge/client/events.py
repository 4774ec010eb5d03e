"""``"stream": true`` for the typed client: a judgment's server-sent events (docs/streaming.md), parsed by httpx-sse.

Each ``run`` (listwise, reward, rerank) or ``pass`` (pairwise) event is yielded as it arrives, with the consensus so
far in ``data``; the last event is ``result`` with ``response`` parsed into the route's response model. An ``error``
event raises ``ServiceError`` (its ``status`` and JSON body), as a non-streamed error would; so does a non-2xx
answer before the stream starts (a 422, a 429). Streams are not retried: a dropped stream is resumed by sending the
request again, whose finished runs come from the cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx
from httpx_sse import ServerSentEvent, aconnect_sse, connect_sse
from pydantic import BaseModel

from pcfjudge.client.http import ServiceError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class StreamEvent(Generic[M]):
    """One event: ``kind`` (run, pass or result), its JSON ``data``; ``response`` on the result event."""

    kind: str
    data: dict[str, Any]
    response: M | None = None


def _event(sse: ServerSentEvent, response: type[M]) -> StreamEvent[M]:
    data: dict[str, Any] = sse.json()
    if sse.event == "error":
        raise ServiceError(int(data.get("status", 502)), data)
    parsed = response.model_validate(data) if sse.event == "result" else None
    return StreamEvent(sse.event, data, parsed)


def _check(reply: httpx.Response) -> None:
    if reply.status_code >= 300:
        reply.read()
        raise ServiceError(reply.status_code, reply.json() if reply.content else {})


async def _acheck(reply: httpx.Response) -> None:
    if reply.status_code >= 300:
        await reply.aread()
        raise ServiceError(reply.status_code, reply.json() if reply.content else {})


def events(http: httpx.Client, path: str, body: Mapping[str, Any], response: type[M]) -> Iterator[StreamEvent[M]]:
    with connect_sse(http, "POST", path, json={**body, "stream": True}) as source:
        _check(source.response)
        for sse in source.iter_sse():
            yield _event(sse, response)


async def aevents(
    http: httpx.AsyncClient, path: str, body: Mapping[str, Any], response: type[M]
) -> AsyncIterator[StreamEvent[M]]:
    async with aconnect_sse(http, "POST", path, json={**body, "stream": True}) as source:
        await _acheck(source.response)
        async for sse in source.aiter_sse():
            yield _event(sse, response)
