"""``"stream": true``: a judgment as server-sent events (docs/streaming.md).

One ``run`` event (``pass`` for pairwise) per finished run, from the cache or the backend, carrying the consensus so
far (a window's run event carries none: the fit comes with the result); a ``round`` event as each round of windows
ends and a ``juror`` event as each juror of a jury delivers (or not); then one ``result`` event whose data is
exactly the ordinary response body; or one ``error`` event whose data is the ordinary error body plus its
``status``. Until the first event is ready nothing is sent: a judgment refused or failed before then (a quota,
admission control, a failed backend) is the ordinary error response with its real status and Retry-After. A client
that disconnects cancels the judgment (its backend calls are cancelled as for any request that goes away); the
caller's deadline applies as without streaming.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import Any

import orjson
from sse_starlette import EventSourceResponse, ServerSentEvent

from pcfjudge import context
from pcfjudge.backends.slots import Priority
from pcfjudge.engine.progress import RunEvent, Watch
from pcfjudge.http.error_handlers import STATUS, answer_of, error_body

_DONE = object()


async def stream(
    judgment: Callable[[Watch], Awaitable[dict[str, Any]]], watch: Watch, request_id: str
) -> EventSourceResponse:
    """``judgment(watch)`` (the ordinary response data) as an event stream, its events heard through the watch's
    listener, once its first event is ready; it runs in a task of this request's context. Raises what the judgment
    raised if it ends before any event."""
    queue: asyncio.Queue[RunEvent | object] = asyncio.Queue()

    async def judge() -> dict[str, Any]:
        try:
            return await judgment(replace(watch, listener=partial(_streamed, queue), priority=_streaming(watch)))
        finally:
            queue.put_nowait(_DONE)

    task = asyncio.create_task(judge())  # copies this request's context (its id, key and meters)
    try:
        first = await queue.get()
    except BaseException:  # cancelled (the client went away): stop spending
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    if first is _DONE and not task.cancelled() and task.exception() is not None:
        raise task.exception()  # type: ignore[misc]  # the ordinary error answer: nothing has been sent yet
    return EventSourceResponse(_events(task, queue, first, request_id), ping=15, send_timeout=30)


def _streaming(watch: Watch) -> Priority:
    """A stream's calls wait for slots after direct requests' (``backends.slots``); background work stays so."""
    return "stream" if watch.priority == "interactive" else watch.priority


def _streamed(queue: asyncio.Queue[RunEvent | object], event: RunEvent) -> None:
    """The events a stream sends: all but ``cached`` and ``calling`` (its runs' events say it) and ``stopped`` (the
    ``result`` or ``error`` event that follows says how the judgment ended)."""
    if event.kind not in _UNSENT:
        queue.put_nowait(event)


_UNSENT = frozenset({"cached", "calling", "stopped"})


async def _events(
    task: asyncio.Task[dict[str, Any]], queue: asyncio.Queue[RunEvent | object], item: object, request_id: str
) -> AsyncIterator[ServerSentEvent]:
    try:
        while item is not _DONE:
            assert isinstance(item, RunEvent)
            data = item.data
            if item.kind == "juror" and "error" in data:  # a juror that did not deliver: its failure's status too
                data = {**data, "status": STATUS[data["error"]]}
            yield ServerSentEvent(orjson.dumps(data).decode(), event=item.kind)
            item = await queue.get()
        try:
            data = await task
        except Exception as exc:  # an error the ordinary route would answer, as an event
            error = answer_of(exc)
            if error is None:
                raise
            body = error_body(error.kind, error.detail, None, status=error.status, request_id=request_id)
            yield ServerSentEvent(orjson.dumps(body).decode(), event="error")
            return
        yield ServerSentEvent(orjson.dumps(data).decode(), event="result")
    finally:
        if not task.done():  # the client went away: stop spending
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def request_id() -> str:
    ctx = context.current()
    return ctx.request_id if ctx is not None else ""
