"""``BodyMiddleware`` at the ASGI level: a quick request starts no watcher (it reads ``receive`` for its body only);
a client that leaves cancels the request, whether it leaves at once or later; the server's own cancellation and the
app's own errors go on up; an app that asks for the next message learns of the disconnect."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pcfjudge.api.middleware.body import WATCH_AFTER_S, BodyMiddleware
from starlette.types import Message, Receive, Scope, Send

SCOPE: Scope = {"type": "http", "method": "POST", "path": "/", "headers": [(b"content-length", b"2")], "state": {}}


class Client:
    """The server side of one connection: the body, then nothing until the client leaves."""

    def __init__(self) -> None:
        self.reads = 0
        self.gone = asyncio.Event()
        self.sent: list[Message] = []

    async def receive(self) -> Message:
        self.reads += 1
        if self.reads == 1:
            return {"type": "http.request", "body": b"{}", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        self.sent.append(message)


def app_that(work: Any) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        assert (await receive())["body"] == b"{}"
        await work(receive)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


async def test_a_quick_request_reads_only_its_body() -> None:
    client = Client()

    async def nothing(receive: Receive) -> None:
        return None

    await BodyMiddleware(app_that(nothing), 1000, 5)(SCOPE, client.receive, client.send)
    assert client.reads == 1 and client.sent[-1]["body"] == b"ok"


@pytest.mark.parametrize("leave_after", [0.0, 3 * WATCH_AFTER_S])
async def test_a_client_that_leaves_cancels_the_request(leave_after: float) -> None:
    client = Client()
    cancelled = asyncio.Event()

    async def slow(receive: Receive) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def leave() -> None:
        await asyncio.sleep(leave_after)
        client.gone.set()

    leaving = asyncio.create_task(leave())
    async with asyncio.timeout(10):
        await BodyMiddleware(app_that(slow), 1000, 5)(SCOPE, client.receive, client.send)  # returns quietly
    await leaving
    assert cancelled.is_set() and client.sent == []
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]  # nothing left pending


async def test_the_servers_cancellation_goes_on_up() -> None:
    client = Client()

    async def slow(receive: Receive) -> None:
        await asyncio.sleep(30)

    request = asyncio.create_task(BodyMiddleware(app_that(slow), 1000, 5)(SCOPE, client.receive, client.send))
    await asyncio.sleep(2 * WATCH_AFTER_S)  # the watcher runs by now
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request


async def test_the_apps_error_goes_on_up() -> None:
    client = Client()

    async def broken(receive: Receive) -> None:
        await asyncio.sleep(2 * WATCH_AFTER_S)
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError, match="bug"):
        await BodyMiddleware(app_that(broken), 1000, 5)(SCOPE, client.receive, client.send)


async def test_an_app_asking_for_the_next_message_is_cancelled_when_the_client_leaves() -> None:
    client = Client()
    ended: list[str] = []

    async def listens(receive: Receive) -> None:
        try:
            await receive()  # starts the watch at once; waits until the client leaves
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise
        ended.append("told")

    asyncio.get_running_loop().call_later(0.01, client.gone.set)
    async with asyncio.timeout(10):
        await BodyMiddleware(app_that(listens), 1000, 5)(SCOPE, client.receive, client.send)
    assert client.reads == 2  # the body, then the one read that saw the disconnect
    assert len(ended) == 1 and client.sent == []
