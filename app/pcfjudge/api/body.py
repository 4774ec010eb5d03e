"""Request bodies and callers that leave (pure ASGI).

* a body over ``max_bytes`` (declared or streamed) is refused with 413 before it is parsed;
* a client that stops sending its body for ``body_timeout_s`` gets 408 (slow headers are cut off by the server's
  protocol, see ``pcfjudge.server``);
* once the body is read, the connection is watched: when the client disconnects, the request's task is cancelled,
  and with it every backend call no other request is waiting for (see ``Runner.run``). The watch starts after
  ``WATCH_AFTER_S`` (50 ms), so a request answered sooner (a cache hit) costs no extra task.
"""

from __future__ import annotations

import asyncio
import contextlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pcfjudge.api.errors import json_response

WATCH_AFTER_S = 0.05
"""A request still running after this long gets a task watching for its client's disconnect."""


class BodyMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int, body_timeout_s: float) -> None:
        self.app, self.max_bytes, self.body_timeout_s = app, max_bytes, body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._reject(413, "body_too_large", self._too_large(), scope, send)
            return
        try:
            body = await self._read(receive)
        except TimeoutError:
            detail = f"the request body did not arrive within {self.body_timeout_s:g}s; send it at once"
            await self._reject(408, "body_timeout", detail, scope, send)
            return
        if body is None:
            await self._reject(413, "body_too_large", self._too_large(), scope, send)
            return
        if not isinstance(body, bytes):  # the client left while sending
            return
        await self._run_until_disconnect(scope, body, receive, send)

    async def _read(self, receive: Receive) -> bytes | Message | None:
        """The whole body; None when it is too large; the disconnect message if the client left."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            async with asyncio.timeout(self.body_timeout_s):
                message = await receive()
            if message["type"] != "http.request":
                return message
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _run_until_disconnect(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """Run the app in this task; a watcher cancels it if the client disconnects while it runs.

        The watcher (a task reading ``receive``) starts only once the request has run ``WATCH_AFTER_S``, or when the
        app itself asks for the next message: a request answered at once (a cache hit) starts no task at all."""
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        delivered = running = False
        left = False  # the watcher saw the client go and cancelled the app
        disconnected = asyncio.Event()
        watcher: asyncio.Task[None] | None = None

        async def watch() -> None:
            nonlocal left
            while (await receive())["type"] != "http.disconnect":
                pass
            disconnected.set()
            if running:  # still inside the app: nobody waits for this any more
                left = True
                task.cancel()

        def start_watching() -> None:
            nonlocal watcher
            if watcher is None:
                watcher = loop.create_task(watch())

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            start_watching()
            await disconnected.wait()
            return {"type": "http.disconnect"}

        timer = loop.call_later(WATCH_AFTER_S, start_watching)
        running = True
        try:
            await self.app(scope, replay, send)  # the app's own exception goes on to the request middleware
        except asyncio.CancelledError:
            if not left:
                raise  # cancelled from outside (the server is stopping): not ours to swallow
        finally:
            running = False
            timer.cancel()
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
        if left and task.uncancel() > 0:
            raise asyncio.CancelledError  # cancelled from outside as well

    def _too_large(self) -> str:
        return f"request body exceeds {self.max_bytes} bytes; send fewer or shorter texts (PCFJ_MAX_BODY_BYTES)"

    async def _reject(self, status: int, kind: str, detail: str, scope: Scope, send: Send) -> None:
        body = {"error": kind, "detail": detail, "request_id": scope.get("state", {}).get("request_id")}
        await json_response(body, status, {"Connection": "close"})(scope, _disconnected, send)


async def _disconnected() -> Message:
    return {"type": "http.disconnect"}
