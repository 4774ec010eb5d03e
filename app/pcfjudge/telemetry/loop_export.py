"""Spans queued and exported on the event loop that ended them (``telemetry.tracing`` uses this in place of the SDK's
``BatchSpanProcessor``).

The SDK's batch processor exports from a thread of its own. In this service that thread was most of what tracing cost
a warm request, though it ran a few times a second: each time it woke it had to wait for the GIL, and while it waited,
every release of the GIL by the event loop (each ``select``) woke it again, a context switch and a futex call on the
loop's side each time: about 4,500 wake-ups per 5,000 requests and 15–30 µs of the loop's CPU per span
(docs/performance.md, "Spans exported from the event loop"). Here no other thread takes part: a span is queued as it
ends, and a full batch, or the schedule delay, starts a task on the loop that encodes the batch (``telemetry.otlp``:
measured, a span encoded among others in one go costs a third of what it cost encoded as it ended, between the
request's other work) and posts it with aiohttp, one request at a time.

What it sends and how is the SDK exporter's, read from the ``OTLPSpanExporter`` the standard variables configured:
the endpoint, headers, compression, timeout and TLS files (``target``), and the proxy the environment names (looked up
once, not in a thread per batch as aiohttp's ``trust_env`` would). The batching is the SDK's too, from the same
variables (``OTEL_BSP_SCHEDULE_DELAY``, ``OTEL_BSP_MAX_QUEUE_SIZE``, ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``; a span that
finds the queue full is dropped, with a warning), and so is the retry policy (429, 502, 503, 504 and connection
errors, again after 1, 2, 4, … s with a fifth of jitter, or after ``Retry-After``, while the timeout lasts; six tries
at most). Where no loop runs (a span ended outside one, a flush at shutdown), a batch goes the SDK exporter's own way,
blocking. When the SDK keeps its settings somewhere else, or a credential provider supplies its HTTP session,
``target`` is None and ``tracing`` keeps the SDK's batch processor.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import math
import os
import random
import ssl
import weakref
import zlib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from yarl import URL

from pcfjudge.telemetry.otlp import Encoded, SpanExporter

log = logging.getLogger("pcfjudge")
RETRYABLE = frozenset({429, 502, 503, 504})
TRIES = 6
JITTER = 0.2


@dataclass(frozen=True, slots=True)
class Target:
    """Where and how a batch is posted: the SDK exporter's settings."""

    endpoint: str
    headers: Mapping[str, str]  # Content-Encoding included when compressed
    timeout_s: float
    compression: str  # "none", "gzip" or "deflate"
    verify: bool | str = True
    cert: str | tuple[str, str] | None = None

    def tls(self) -> ssl.SSLContext | bool:
        """aiohttp's ``ssl``: the CA file and client certificate the variables name, or the system's CAs."""
        if self.verify is False or not self.endpoint.lower().startswith("https:"):
            return False
        if self.verify is True and self.cert is None:
            return True
        context = ssl.create_default_context(cafile=self.verify if isinstance(self.verify, str) else None)
        if self.cert is not None:
            certfile, keyfile = self.cert if isinstance(self.cert, tuple) else (self.cert, None)
            context.load_cert_chain(certfile, keyfile)
        return context

    def body(self, data: bytes) -> bytes:
        if self.compression == "gzip":
            return gzip.compress(data, mtime=0)
        if self.compression == "deflate":
            return zlib.compress(data)
        return data


def target(exporter: SpanExporter) -> Target | None:
    """The settings ``exporter`` (the SDK's, configured by the standard variables) posts with; None when they are not
    where this SDK release keeps them, or a credential provider makes its HTTP session."""
    client = getattr(exporter, "_client", None)
    session = getattr(getattr(client, "_transport", None), "_session", None)
    endpoint, headers = getattr(client, "_endpoint", None), getattr(client, "_headers", None)
    timeout, compression = getattr(client, "_timeout", None), getattr(client, "_compression", None)
    if any(os.environ.get(f"_OTEL_PYTHON_EXPORTER_OTLP_HTTP{s}_CREDENTIAL_PROVIDER") for s in ("", "_TRACES")):
        return None
    if session is None or not isinstance(endpoint, str) or not isinstance(headers, dict):
        return None
    if not isinstance(timeout, int | float) or getattr(compression, "value", None) not in ("none", "gzip", "deflate"):
        return None
    return Target(
        endpoint,
        {**headers, "Content-Type": "application/x-protobuf"},
        float(timeout),
        str(compression.value),  # type: ignore[union-attr]
        session.verify,
        session.cert,
    )


def _env_int(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        log.error("tracing: %s is not an integer; using %d", name, default)
        return default
    return value if value > 0 else default


class _OnLoop:
    """What one event loop holds for exporting: its HTTP client and what it posts with, the task draining the queue,
    the delay's timer."""

    __slots__ = ("client", "options", "task", "timer")

    def __init__(self) -> None:
        self.client: aiohttp.ClientSession | None = None
        self.options: dict[str, Any] = {}  # each post's headers, TLS and proxy
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None


class LoopSpanProcessor(SpanProcessor):
    """Sampled spans, batched and exported from the loop that ended them (module docstring)."""

    def __init__(self, exporter: SpanExporter, to: Target) -> None:
        self._exporter, self._to = exporter, to
        self.max_queue = _env_int("OTEL_BSP_MAX_QUEUE_SIZE", 2048)
        self.batch = min(_env_int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512), self.max_queue)
        self.delay_s = _env_int("OTEL_BSP_SCHEDULE_DELAY", 5000) / 1000
        self.export_timeout_s = _env_int("OTEL_BSP_EXPORT_TIMEOUT", 30_000) / 1000  # the last flush's, in all
        self._encoder = exporter.encoder
        self._queue: deque[ReadableSpan] = deque()  # ended spans, encoded by the batch (``_take``)
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _OnLoop] = weakref.WeakKeyDictionary()
        self._shutdown = False
        self._closing = False  # the last flush: a batch is tried twice at most
        self._sending = 0  # spans in the batch being posted
        self._armed = False  # a timer or a task will export what is queued
        self._draining = 0  # tasks exporting
        self.dropped = 0

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None or not context[3] & 1 or self._shutdown:  # (its trace flags' sampled bit, as a tuple)
            return
        queue = self._queue
        if len(queue) >= self.max_queue:
            if self.dropped == 0 or self.dropped % 10_000 == 0:
                log.warning(
                    "tracing: the span queue is full (OTEL_BSP_MAX_QUEUE_SIZE=%d): spans dropped", self.max_queue
                )
            self.dropped += 1
            return
        queue.append(span)
        if self._armed and (len(queue) < self.batch or self._draining):  # a timer or a task will export it
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # ended outside any loop: a full batch goes now, the rest at the next flush
            if len(queue) >= self.batch:
                self._send(self._take(self.batch))
            return
        on = self._on(loop)
        if len(queue) >= self.batch:
            if on.task is None:
                on.task = loop.create_task(self._drain(loop, on, everything=False))
                self._draining += 1
        elif on.timer is None and on.task is None:
            on.timer = loop.call_later(self.delay_s, self._due, loop, on)
        self._armed = True

    def _on(self, loop: asyncio.AbstractEventLoop) -> _OnLoop:
        on = self._loops.get(loop)
        if on is None:
            on = self._loops[loop] = _OnLoop()
        return on

    def _due(self, loop: asyncio.AbstractEventLoop, on: _OnLoop) -> None:
        on.timer = None
        if on.task is None:
            on.task = loop.create_task(self._drain(loop, on, everything=True))
            self._draining += 1

    def _send(self, batch: list[Encoded]) -> None:
        """A batch sent the SDK exporter's way (blocking)."""
        self._exporter.send(self._encoder.request(batch))

    def _take(self, n: int) -> list[Encoded]:
        """Up to ``n`` spans off the queue, encoded in one go (measured: a span costs a third of what it cost
        encoded as it ended, between its request's other work)."""
        queue, encoder, out = self._queue, self._encoder, []
        for _ in range(min(n, len(queue))):
            span = queue.popleft()
            try:
                out.append((span.resource, span.instrumentation_scope, encoder.span(span)))
            except Exception as error:  # as the SDK's exporter drops a batch it cannot encode, and says so
                log.error("tracing: span %s not exported: %s", span.name, error)
        return out

    async def _drain(self, loop: asyncio.AbstractEventLoop, on: _OnLoop, *, everything: bool) -> None:
        """Post batches while a full one is queued (``everything``: until the queue is empty); then, with spans left,
        the delay's timer."""
        try:
            while len(self._queue) >= (1 if everything else self.batch):
                await self._post(on, self._take(self.batch))
        finally:
            on.task = None
            self._draining -= 1
            if self._queue and not self._shutdown:
                on.timer = on.timer or loop.call_later(self.delay_s, self._due, loop, on)
            else:
                self._armed = on.timer is not None

    async def _post(self, on: _OnLoop, spans: list[Encoded]) -> bool:
        """One batch, tried as the SDK's exporter tries it; whether it was delivered (failures are logged)."""
        self._sending = len(spans)
        try:
            return await self._tried(on, spans)
        finally:
            self._sending = 0

    async def _tried(self, on: _OnLoop, spans: list[Encoded]) -> bool:
        to = self._to
        body = to.body(self._encoder.request(spans))
        if on.client is None:
            proxy, proxy_auth = _proxy(to.endpoint)
            on.options = {"headers": to.headers, "ssl": to.tls(), "proxy": proxy, "proxy_auth": proxy_auth}
            on.client = aiohttp.ClientSession()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + to.timeout_s
        for attempt in range(TRIES):
            left = deadline - loop.time()
            wait = 2**attempt * random.uniform(1 - JITTER, 1 + JITTER)
            try:
                limit = aiohttp.ClientTimeout(total=max(left, 0.001))
                async with on.client.post(to.endpoint, data=body, timeout=limit, **on.options) as reply:
                    status, retry_after = reply.status, reply.headers.get("Retry-After")
                    await reply.read()
            except (aiohttp.ClientError, TimeoutError) as error:
                outcome = f"{type(error).__name__}: {error}"
            except Exception as error:  # not the collector's trouble: not tried again
                log.error("tracing: a batch of %d spans could not be sent: %r", len(spans), error)
                return False
            else:
                if 200 <= status < 400:
                    return True
                outcome = f"HTTP {status}"
                if status not in RETRYABLE:
                    log.error("tracing: a batch of %d spans was refused: %s", len(spans), outcome)
                    return False
                wait = _retry_after(retry_after, wait)
            if attempt + 1 == TRIES or wait > deadline - loop.time() or self._shutdown or (self._closing and attempt):
                log.error("tracing: a batch of %d spans was not delivered: %s", len(spans), outcome)
                return False
            log.warning("tracing: exporting spans failed (%s); trying again in %.2f s", outcome, wait)
            await asyncio.sleep(wait)
        return False

    async def aflush(self) -> None:
        """Export what is queued, from this loop, and wait for it (the app's shutdown): within
        ``OTEL_BSP_EXPORT_TIMEOUT`` in all, each batch tried once more at most; what is left then is dropped, and
        said so. This loop's client closes."""
        on = self._on(asyncio.get_running_loop())
        if on.timer is not None:
            on.timer.cancel()
            on.timer = None
        self._closing = True
        try:
            async with asyncio.timeout(self.export_timeout_s):
                if on.task is not None:
                    await asyncio.shield(on.task)
                while self._queue:
                    await self._post(on, self._take(self.batch))
        except TimeoutError:
            log.warning(
                "tracing: %d spans not exported: the collector did not take them within OTEL_BSP_EXPORT_TIMEOUT "
                "(%g s)", len(self._queue) + self._sending, self.export_timeout_s,
            )  # fmt: skip
            self._queue.clear()
        finally:
            self._closing = False
            self._armed = False
            if on.client is not None:
                await on.client.close()
                on.client = None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export what is queued now, the SDK exporter's way (blocking)."""
        while self._queue:
            self._send(self._take(self.batch))
        return True

    def shutdown(self) -> None:
        self.force_flush()
        self._shutdown = True
        for on in list(self._loops.values()):
            if on.timer is not None:
                on.timer.cancel()
        self._exporter.shutdown()  # type: ignore[no-untyped-call]


def _proxy(endpoint: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy the environment names for ``endpoint`` (``HTTPS_PROXY``, ``NO_PROXY``, …, as the SDK's requests
    session honours them), looked up once: aiohttp's ``trust_env`` would look it up, and .netrc, in a thread for
    every batch, and a thread waiting for the GIL is what this module avoids."""
    try:
        return get_env_proxy_for_url(URL(endpoint))
    except LookupError:
        return None, None


def _retry_after(value: str | None, default: float) -> float:
    """``Retry-After`` in seconds (the HTTP-date form is not used by collectors: the default then)."""
    try:
        seconds = float(value) if value is not None else default
    except ValueError:
        return default
    return max(0.0, seconds) if math.isfinite(seconds) else default
