"""Request bodies and callers that leave (pure ASGI).

* a body over ``max_bytes`` (declared or streamed) is refused with 413 before it is parsed;
* a client that stops sending its body for ``body_timeout_s`` gets 408, and so does one whose whole body has not
  arrived within ``PCFJ_BODY_DEADLINE_S`` however it trickles (slow headers are cut off by the server's protocol, see
  ``pcfjudge.api.header_timeout``);
* a JSON body must be strict JSON: a duplicate key in an object, or a ``NaN`` / ``Infinity`` literal (which Python's
  parser accepts), is a 422 naming it (checked in one pass of the C parser with hooks, before the app parses it);
  so is one nested deeper than ``PCFJ_MAX_JSON_DEPTH`` (64), found before any parser recurses into it (``json_depth``:
  Python's parser would raise RecursionError, a 500, at about a thousand levels). A body is JSON to these checks when
  its content type says so or it has none; with a JSON content type, the value that one parse made is what the
  routes validate (``http.read_body``: FastAPI does not parse the body again);
* once the body is read, the connection is watched: when the client disconnects, the request's task is cancelled,
  and with it every backend call no other request is waiting for (see ``Runner.run``). The watch starts after
  ``WATCH_AFTER_S`` (50 ms), so a request answered sooner (a cache hit) costs no extra task.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import itertools
import json
import math
import re
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pcfjudge.api.middleware.refusals import refusal
from pcfjudge.http.read_body import NOT_PARSED, READ

WATCH_AFTER_S = 0.05
"""A request still running after this long gets a task watching for its client's disconnect."""


"""Routes that answer errors in text-embeddings-inference's shape (``{"error", "error_type"}``)."""


class BodyMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        body_timeout_s: float,
        body_deadline_s: float | None = None,
        max_depth: int = 64,
    ) -> None:
        self.app, self.max_bytes, self.body_timeout_s = app, max_bytes, body_timeout_s
        self.body_deadline_s = body_deadline_s  # None: PCFJ_BODY_DEADLINE_S from the app's settings
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._reject(413, "body_too_large", self._too_large(), scope, send)
            return
        clock = _Clock(asyncio.get_running_loop(), self.body_timeout_s, self._deadline_s(scope))
        try:
            body = await self._read(receive, clock)
        except TimeoutError as exc:
            clock.stop()
            detail = str(exc) or f"the request body did not arrive within {self.body_timeout_s:g}s; send it at once"
            await self._reject(408, "body_timeout", detail, scope, send)
            return
        except BaseException:
            clock.stop()
            raise
        problem, parsed = None, NOT_PARSED
        if isinstance(body, bytes) and body and (json_type := _json_body(scope)) is not False:
            problem, parsed = strict_json(body, self.max_depth)
            parsed = parsed if json_type else NOT_PARSED  # without a content type FastAPI does not parse it
        if not isinstance(body, bytes) or problem is not None:
            clock.stop()
            if body is None:
                await self._reject(413, "body_too_large", self._too_large(), scope, send)
            elif problem is not None:
                await self._invalid(problem, scope, send)
            return  # or the client left while sending
        scope[READ] = (body, parsed)
        await self._run_until_disconnect(scope, body, receive, send, clock)

    def _deadline_s(self, scope: Scope) -> float:
        if self.body_deadline_s is not None:
            return self.body_deadline_s
        services = getattr(getattr(scope.get("app"), "state", None), "services", None)
        if services is None:  # the app has not started (yet): no deadline of its own
            return math.inf
        self.body_deadline_s = services.settings.access.body_deadline_s  # read once: the app's settings do not change
        return math.inf if self.body_deadline_s is None else self.body_deadline_s

    async def _read(self, receive: Receive, clock: _Clock) -> bytes | Message | None:
        """The whole body; None when it is too large; the disconnect message if the client left. ``TimeoutError``
        when ``clock`` cut the read off: a chunk later than ``body_timeout_s``, or the whole body later than its
        deadline."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            try:
                message = await receive()
            except asyncio.CancelledError:
                late = clock.expired()
                if late is None:
                    raise  # cancelled from outside
                raise TimeoutError(late) from None
            if message["type"] != "http.request":
                return message
            clock.chunk()
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _run_until_disconnect(
        self, scope: Scope, body: bytes, receive: Receive, send: Send, clock: _Clock
    ) -> None:
        """Run the app in this task; a watcher cancels it if the client disconnects while it runs.

        The watcher (a task reading ``receive``) starts only once the request has run ``WATCH_AFTER_S`` (``clock``),
        or when the app itself asks for the next message: a request answered at once (a cache hit) starts no task."""
        task, loop = clock.task, clock.loop
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

        clock.running(start_watching)
        running = True
        try:
            await self.app(scope, replay, send)  # the app's own exception goes on to the request middleware
        except asyncio.CancelledError:
            if not left:
                raise  # cancelled from outside (the server is stopping): not ours to swallow
        finally:
            running = False
            clock.stop()
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
        if left and task.uncancel() > 0:
            raise asyncio.CancelledError  # cancelled from outside as well

    async def _invalid(self, problem: str, scope: Scope, send: Send) -> None:
        await refusal(scope, 422, "validation_error", f"body: {problem}", field="body")(scope, _disconnected, send)

    def _too_large(self) -> str:
        return f"request body exceeds {self.max_bytes} bytes; send fewer or shorter texts (PCFJ_MAX_BODY_BYTES)"

    async def _reject(self, status: int, kind: str, detail: str, scope: Scope, send: Send) -> None:
        await refusal(scope, status, kind, detail, {"Connection": "close"})(scope, _disconnected, send)


class _Clock:
    """A request's one timer (a request answered at once arms it and cancels it). While the body is read it cuts
    the read off (``task.cancel``; ``_read`` then raises ``TimeoutError``) when a chunk is later than ``chunk_s`` or
    the whole body later than ``deadline_s``; once the app runs, it starts the disconnect watch ``WATCH_AFTER_S``
    after the request began. One timer, not a timeout per chunk and another for the watch: on every request's way."""

    def __init__(self, loop: asyncio.AbstractEventLoop, chunk_s: float, deadline_s: float) -> None:
        task = asyncio.current_task()
        assert task is not None
        now = loop.time()
        self.loop, self.task, self._chunk_s, self._deadline_s = loop, task, chunk_s, deadline_s
        self._chunk_by, self._give_up = now + chunk_s, now + deadline_s
        self._cancelling = task.cancelling()
        self._late: str | None = None  # why the read was cut off
        self._watch: Callable[[], None] | None = None
        self.handle: asyncio.TimerHandle | None = loop.call_at(
            min(now + WATCH_AFTER_S, self._chunk_by, self._give_up), self._tick
        )

    def chunk(self) -> None:
        """A chunk of the body arrived: the next has ``chunk_s``."""
        self._chunk_by = self.loop.time() + self._chunk_s

    def expired(self) -> str | None:
        """Why the clock cut the read off ("" for a chunk too late), or None: the read was cancelled from outside."""
        if self._late is None or self.task.uncancel() > self._cancelling:
            return None
        return self._late

    def running(self, watch: Callable[[], None]) -> None:
        """The app runs: ``watch`` starts the disconnect watch when the timer fires (``WATCH_AFTER_S`` from now, at
        the latest)."""
        self._watch = watch
        at = self.loop.time() + WATCH_AFTER_S
        if self.handle is None or self.handle.when() > at:  # a slow upload: the timer was set for its next chunk
            self.stop()
            self.handle = self.loop.call_at(at, self._tick)

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def _tick(self) -> None:
        self.handle = None
        if self._watch is not None:
            self._watch()
            return
        now = self.loop.time()
        if now >= self._give_up:
            self._late = (
                f"the request body did not arrive within {self._deadline_s:g}s in all (PCFJ_BODY_DEADLINE_S); send it "
                "at once"
            )
        elif now >= self._chunk_by:
            self._late = ""  # the caller says it in its own words (``body_timeout_s``)
        else:
            self.handle = self.loop.call_at(min(self._chunk_by, self._give_up), self._tick)
            return
        self.task.cancel()


async def _disconnected() -> Message:
    return {"type": "http.disconnect"}


class _NotStrict(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _NotStrict(f"duplicate key {key!r} in an object; send each field once")
            seen.add(key)
    return obj


def _constant(name: str) -> Any:
    raise _NotStrict(f"{name} is not a JSON number; send a finite number (or null)")


_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # as signed bytes: +1 opens, -1 closes
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(body: bytes, limit: int) -> int:
    """How deep ``body``'s arrays and objects nest (exact for JSON), read without parsing it. A body of at most
    ``limit`` brackets is not scanned (a count in C); the scan drops the strings (a regex) and all but the brackets,
    then sums ±1 per bracket in C (``itertools.accumulate`` over signed bytes): at worst about 0.1 s for 2 MB that
    are all brackets, a few microseconds for a request's few thousand."""
    opened = body.count(b"[") + body.count(b"{")
    if opened <= limit:
        return opened
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS).translate(_STEPS)
    return max(itertools.accumulate(array.array("b", brackets)), default=0)


def strict_json(body: bytes, max_depth: int = 64) -> tuple[str | None, Any]:
    """What makes ``body`` not strict JSON (nested deeper than ``max_depth``, a duplicate key, NaN or Infinity), or
    None, and the value parsed (``NOT_PARSED`` unless it is strict JSON); a body that is not JSON at all is left to
    the app's parser (400 invalid_json)."""
    if json_depth(body, max_depth) > max_depth:
        return (
            f"JSON nested more than {max_depth} levels deep (arrays and objects within each other); flatten it "
            "(PCFJ_MAX_JSON_DEPTH)"
        ), NOT_PARSED
    try:
        return None, json.loads(body, object_pairs_hook=_pairs, parse_constant=_constant)
    except _NotStrict as exc:
        return str(exc), NOT_PARSED
    except ValueError:  # not JSON (or not UTF-8): the app says so in its own words
        return None, NOT_PARSED
    except RecursionError:  # within PCFJ_MAX_JSON_DEPTH but deeper than this thread's stack allows
        return f"JSON nested too deeply for this server; flatten it (PCFJ_MAX_JSON_DEPTH is {max_depth})", NOT_PARSED


def _json_body(scope: Scope) -> bool | None:
    """Whether the body is JSON to these checks: True for a JSON content type (``application/json``,
    ``application/…+json``: what FastAPI parses), None without a content type (checked too, though FastAPI parses
    it only with ``strict_content_type`` off), False otherwise."""
    if scope.get("method") not in ("POST", "PUT", "PATCH"):
        return False
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            kind: bytes = value.split(b";", 1)[0].strip().lower()
            main, _, sub = kind.partition(b"/")
            return main == b"application" and (sub == b"json" or sub.endswith(b"+json"))
    return None
