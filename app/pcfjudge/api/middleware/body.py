"""Request bodies and callers that leave (pure ASGI).

* a body over ``max_bytes`` (declared or streamed) is refused with 413 before it is parsed;
* a client that stops sending its body for ``body_timeout_s`` gets 408, and so does one whose whole body has not
  arrived within ``PCFJ_BODY_DEADLINE_S`` however it trickles (slow headers are cut off by the server's protocol, see
  ``pcfjudge.api.header_timeout``);
* a JSON body must be strict JSON: a duplicate key in an object, or a ``NaN`` / ``Infinity`` literal (which Python's
  parser accepts), is a 422 naming it (checked in one pass of the C parser with hooks, before the app parses it);
  so is one nested deeper than ``PCFJ_MAX_JSON_DEPTH`` (64), found before any parser recurses into it (``json_depth``:
  Python's parser would raise RecursionError, a 500, at about a thousand levels). A body is JSON to these checks when
  its content type says so or it has none (FastAPI parses both);
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
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pcfjudge.http.error_handlers import json_response

WATCH_AFTER_S = 0.05
"""A request still running after this long gets a task watching for its client's disconnect."""


TEI_PATHS = frozenset({"/rerank"})
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
        deadline_s = self._deadline_s(scope)
        try:
            body = await self._read(receive, deadline_s)
        except TimeoutError as exc:
            detail = str(exc) or f"the request body did not arrive within {self.body_timeout_s:g}s; send it at once"
            await self._reject(408, "body_timeout", detail, scope, send)
            return
        if body is None:
            await self._reject(413, "body_too_large", self._too_large(), scope, send)
            return
        if not isinstance(body, bytes):  # the client left while sending
            return
        problem = strict_json_problem(body, self.max_depth) if body and _json_body(scope) else None
        if problem is not None:
            await self._invalid(problem, scope, send)
            return
        await self._run_until_disconnect(scope, body, receive, send)

    def _deadline_s(self, scope: Scope) -> float:
        if self.body_deadline_s is not None:
            return self.body_deadline_s
        services = getattr(getattr(scope.get("app"), "state", None), "services", None)
        deadline: float = getattr(getattr(services, "settings", None), "body_deadline_s", math.inf)
        return deadline

    async def _read(self, receive: Receive, deadline_s: float = math.inf) -> bytes | Message | None:
        """The whole body; None when it is too large; the disconnect message if the client left. ``TimeoutError``
        when a chunk is later than ``body_timeout_s`` or the whole body later than ``deadline_s``."""
        chunks: list[bytes] = []
        seen = 0
        loop = asyncio.get_running_loop()
        give_up = loop.time() + deadline_s
        late = f"the request body did not arrive within {deadline_s:g}s in all (PCFJ_BODY_DEADLINE_S); send it at once"
        while True:
            left = give_up - loop.time()
            if left <= 0:
                raise TimeoutError(late)
            try:
                async with asyncio.timeout(min(self.body_timeout_s, left)):
                    message = await receive()
            except TimeoutError:
                if left < self.body_timeout_s:
                    raise TimeoutError(late) from None
                raise
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

    async def _invalid(self, problem: str, scope: Scope, send: Send) -> None:
        detail = f"body: {problem}"
        if scope.get("path") in TEI_PATHS:
            await json_response({"error": detail, "error_type": "Validation"}, 422)(scope, _disconnected, send)
            return
        body = {
            "error": "validation_error",
            "detail": detail,
            "errors": [{"field": "body", "message": problem}],
            "request_id": scope.get("state", {}).get("request_id"),
        }
        await json_response(body, 422)(scope, _disconnected, send)

    def _too_large(self) -> str:
        return f"request body exceeds {self.max_bytes} bytes; send fewer or shorter texts (PCFJ_MAX_BODY_BYTES)"

    async def _reject(self, status: int, kind: str, detail: str, scope: Scope, send: Send) -> None:
        body = {"error": kind, "detail": detail, "request_id": scope.get("state", {}).get("request_id")}
        await json_response(body, status, {"Connection": "close"})(scope, _disconnected, send)


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


def strict_json_problem(body: bytes, max_depth: int = 64) -> str | None:
    """What makes ``body`` not strict JSON (nested deeper than ``max_depth``, a duplicate key, NaN or Infinity), or
    None; a body that is not JSON at all is left to the app's parser (400 invalid_json)."""
    if json_depth(body, max_depth) > max_depth:
        return (
            f"JSON nested more than {max_depth} levels deep (arrays and objects within each other); flatten it "
            "(PCFJ_MAX_JSON_DEPTH)"
        )
    try:
        json.loads(body, object_pairs_hook=_pairs, parse_constant=_constant)
    except _NotStrict as exc:
        return str(exc)
    except ValueError:  # not JSON (or not UTF-8): the app says so in its own words
        return None
    except RecursionError:  # within PCFJ_MAX_JSON_DEPTH but deeper than this thread's stack allows
        return f"JSON nested too deeply for this server; flatten it (PCFJ_MAX_JSON_DEPTH is {max_depth})"
    return None


def _json_body(scope: Scope) -> bool:
    """Whether the app will parse this body as JSON (FastAPI does for a JSON content type, and without one)."""
    if scope.get("method") not in ("POST", "PUT", "PATCH"):
        return False
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            kind: bytes = value.split(b";", 1)[0].strip().lower()
            return kind == b"application/json" or kind.endswith(b"+json")
    return True
