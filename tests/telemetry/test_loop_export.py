"""Spans exported from the event loop (``pcfjudge.telemetry.loop_export``): batches posted to a real OTLP receiver
(``pcfjudge_lab.otlp_receiver``, on a free port) by a task on the loop, with the SDK exporter's settings read from
the standard variables; the schedule delay; a batch ended outside any loop; the retry policy against a collector's
transient failures (an aiohttp server lined up with answers the real receiver does not give) and an unreachable
one; a full queue; and, in the service, no exporter thread at all."""

from __future__ import annotations

import asyncio
import gzip
import logging
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
from aiohttp import web
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Tracer, TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import SpanKind
from pcfjudge.telemetry import tracing
from pcfjudge.telemetry.light_spans import start_span
from pcfjudge.telemetry.loop_export import LoopSpanProcessor, Target, _proxy, target
from pcfjudge.telemetry.otlp import SpanExporter
from pcfjudge_lab.otlp_receiver import OtlpReceiver

from tests.support.inprocess import app_client

Answer = web.Response | Callable[[], Awaitable[web.Response]]
Collector = tuple[str, list[Answer], list[bytes]]
LISTWISE = {"question": "Which is the largest planet?", "candidates": ["Jupiter.", "Saturn."], "k": 2}


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", running.url)
        yield running


def processor_and_tracer() -> tuple[LoopSpanProcessor, Tracer]:
    exporter = SpanExporter()
    to = target(exporter)
    assert to is not None, "the SDK exporter keeps its settings elsewhere: loop_export.target must follow it"
    processor = LoopSpanProcessor(exporter, to)
    provider = TracerProvider(ALWAYS_ON, Resource.create({"service.name": "t"}), False)
    provider.add_span_processor(processor)
    return processor, provider.get_tracer("pcfjudge")  # type: ignore[return-value]


def spans(tracer: Tracer, n: int, first: int = 0) -> None:
    for i in range(first, first + n):
        start_span(tracer, f"span {i}", kind=SpanKind.SERVER, attributes={"i": i}).end()


def test_target_is_what_the_standard_variables_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://collector.example:4318/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0ken,x-tenant=a")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "3")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ssl/collector-ca.pem")
    to = target(SpanExporter())
    assert to is not None
    assert to.endpoint == "https://collector.example:4318/v1/traces" and to.timeout_s == 3.0
    assert to.compression == "gzip" and to.verify == "/etc/ssl/collector-ca.pem" and to.cert is None
    assert to.headers["authorization"] == "Bearer t0ken" and to.headers["x-tenant"] == "a"
    assert to.headers["Content-Encoding"] == "gzip" and to.headers["Content-Type"] == "application/x-protobuf"
    assert gzip.decompress(to.body(b"spans")) == b"spans"
    plain = Target("http://127.0.0.1:4318/v1/traces", {}, 10.0, "none")
    assert plain.body(b"spans") == b"spans" and plain.tls() is False  # http://: no CA bundle loaded


def test_a_credential_provider_keeps_the_sdks_own_exporter_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("_OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER", "my_credentials")
    monkeypatch.setattr(
        "opentelemetry.exporter.otlp.proto.http.trace_exporter._load_session_from_envvar", lambda _name: None
    )
    assert target(SpanExporter()) is None


async def test_full_batches_go_from_the_loop_and_the_rest_after_the_delay(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    processor, tracer = processor_and_tracer()
    spans(tracer, 10)
    for _ in range(200):  # two full batches at once, the last two spans once the delay is over
        await asyncio.sleep(0.01)
        if receiver.count == 10:
            break
    assert receiver.count == 10 and receiver.requests == 3
    assert sorted(s.attributes["i"] for s in receiver.snapshot()) == list(range(10))
    assert {s.name for s in receiver.snapshot()} == {f"span {i}" for i in range(10)}
    await processor.aflush()
    processor.shutdown()


async def test_aflush_sends_what_is_queued_and_waits_for_it(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")  # the receiver inflates it
    processor, tracer = processor_and_tracer()
    spans(tracer, 700)  # one full batch (512) in flight, 188 waiting for the delay (5 s)
    await processor.aflush()
    assert receiver.count == 700 and receiver.requests == 2
    processor.shutdown()


def test_spans_ended_outside_a_loop_go_the_sdk_exporters_way(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "3")
    processor, tracer = processor_and_tracer()
    spans(tracer, 7)  # two full batches, blocking; one span left
    assert receiver.count == 6
    processor.force_flush()
    assert receiver.count == 7 and receiver.requests == 3
    processor.shutdown()


@pytest.fixture
async def collector() -> AsyncIterator[Collector]:
    """An OTLP endpoint that answers what the test lines up (a collector's transient failures, which the real
    receiver does not make), and keeps what it was sent."""
    answers: list[Answer] = []
    posted: list[bytes] = []

    async def traces(request: web.Request) -> web.Response:
        posted.append(await request.read())
        answer = answers.pop(0)
        return answer if isinstance(answer, web.Response) else await answer()

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", answers, posted
    finally:
        await runner.cleanup()


async def test_transient_failures_are_tried_again_and_a_refusal_is_not(
    collector: Collector,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, answers, posted = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2")
    answers += [web.Response(status=503, headers={"Retry-After": "0"}), web.Response(status=200)]
    answers += [web.Response(status=400, text="bad batch")]
    processor, tracer = processor_and_tracer()
    with caplog.at_level(logging.WARNING, logger="pcfjudge"):
        spans(tracer, 2)  # 503 (Retry-After: 0), then 200
        await processor.aflush()
        assert len(posted) == 2 and posted[0] == posted[1] and len(answers) == 1
        spans(tracer, 2, first=2)  # 400: dropped, not tried again
        await processor.aflush()
    assert len(posted) == 3 and not answers
    messages = [r.getMessage() for r in caplog.records]
    assert any("trying again in 0.00 s" in m and "HTTP 503" in m for m in messages)
    assert any("a batch of 2 spans was refused: HTTP 400" in m for m in messages)
    processor.shutdown()


async def test_an_unreachable_collector_is_tried_until_the_timeout(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as closed:  # a free port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "3")
    processor, tracer = processor_and_tracer()
    with caplog.at_level(logging.WARNING, logger="pcfjudge"):
        spans(tracer, 3)  # a full batch: refused, again after ~1 s, then the next wait (~2 s) would pass the timeout
        for _ in range(500):
            await asyncio.sleep(0.01)
            if not processor._draining:
                break
    messages = [r.getMessage() for r in caplog.records]
    assert sum("trying again in" in m for m in messages) == 1
    assert any("a batch of 3 spans was not delivered: ClientConnectorError" in m for m in messages)
    await processor.aflush()
    processor.shutdown()


async def test_the_last_flush_gives_up_after_the_export_timeout(
    collector: Collector,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A collector that does not answer holds the app's shutdown OTEL_BSP_EXPORT_TIMEOUT at most, not a retry
    schedule per batch."""
    url, answers, posted = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_BSP_EXPORT_TIMEOUT", "300")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2")
    processor, tracer = processor_and_tracer()
    stalled = asyncio.Event()

    async def hung() -> web.Response:
        await stalled.wait()
        return web.Response(status=200)

    answers.append(hung)
    with caplog.at_level(logging.WARNING, logger="pcfjudge"):
        spans(tracer, 5)  # two full batches and one span queued
        started = asyncio.get_running_loop().time()
        await processor.aflush()
        took = asyncio.get_running_loop().time() - started
    stalled.set()
    assert took < 2.0 and len(posted) == 1  # the first batch hung; the flush gave up on it and the rest
    assert any("5 spans not exported" in r.getMessage() and "OTEL_BSP_EXPORT_TIMEOUT (0.3 s)" in r.getMessage()
               for r in caplog.records)  # fmt: skip
    processor.shutdown()


async def test_a_full_queue_drops_spans_and_says_so(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "8")
    processor, tracer = processor_and_tracer()
    with caplog.at_level(logging.WARNING, logger="pcfjudge"):
        spans(tracer, 12)  # the loop never ran in between: 8 queued, 4 dropped
    assert processor.dropped == 4
    assert any("span queue is full (OTEL_BSP_MAX_QUEUE_SIZE=8)" in r.getMessage() for r in caplog.records)
    await processor.aflush()
    assert receiver.count == 8
    processor.shutdown()


async def test_the_service_exports_from_its_loop_with_no_thread(receiver: OtlpReceiver) -> None:
    async with app_client() as client:
        assert isinstance(tracing._LOOP, LoopSpanProcessor)
        reply = await client.post("/judge/listwise", json=LISTWISE)
        assert reply.status_code == 200
        assert not [t.name for t in threading.enumerate() if "Otel" in t.name]  # the SDK's exporter thread
    assert not tracing.on()
    trace_id = reply.headers["x-trace-id"]
    received = [s for s in receiver.snapshot() if s.trace_id == trace_id]  # sent by the lifespan's end
    assert {s.name for s in received} >= {"POST /judge/listwise", "judge listwise"}


def test_the_proxy_the_environment_names_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "collector.local")
    proxy, auth = _proxy("https://collector.example:4318/v1/traces")
    assert str(proxy) == "http://proxy.internal:3128" and auth is not None and auth.login == "user"
    assert _proxy("https://collector.local:4318/v1/traces") == (None, None)
    assert _proxy("http://collector.example:4318/v1/traces") == (None, None)  # no HTTP_PROXY
