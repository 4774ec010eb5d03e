"""A small OTLP/HTTP trace receiver: ``POST /v1/traces`` (a protobuf ``ExportTraceServiceRequest``, gzip or not, as
the OpenTelemetry SDK's exporter sends it), decoded with ``opentelemetry-proto`` into plain ``ReceivedSpan`` records.

It is what the tracing tests export to (``tests/telemetry/test_tracing.py``) and the sink of ``pcfjudge bench
tracing``; it is not a collector (no gRPC, no JSON encoding, nothing stored past the process). ``GET /count`` answers
``{"spans": n, "requests": n}``.

    python -m pcfjudge_lab.otlp_receiver [--port 4318]     # prints "listening on http://127.0.0.1:<port>"
"""

from __future__ import annotations

import argparse
import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
STATUSES = {0: "UNSET", 1: "OK", 2: "ERROR"}


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    service: str
    scope: str
    name: str
    kind: str  # SERVER, CLIENT, INTERNAL, …
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str | None
    start_ns: int
    end_ns: int
    status: str  # UNSET, OK, ERROR
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def event_names(self) -> list[str]:
        return [name for name, _ in self.events]


def value_of(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [value_of(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    return getattr(value, which) if which else None


def attributes_of(pairs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in pairs}


def spans_of(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    out = []
    for resource_spans in request.resource_spans:
        service = str(attributes_of(resource_spans.resource.attributes).get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out.append(_span(service, scope_spans.scope.name, span))
    return out


def _span(service: str, scope: str, span: Span) -> ReceivedSpan:
    status: Status = span.status
    return ReceivedSpan(
        service=service,
        scope=scope,
        name=span.name,
        kind=KINDS.get(span.kind, str(span.kind)),
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex() or None,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        status=STATUSES.get(status.code, str(status.code)),
        attributes=attributes_of(span.attributes),
        events=[(e.name, attributes_of(e.attributes)) for e in span.events],
    )


class OtlpReceiver:
    """The receiver on ``127.0.0.1:<port>`` (0: a free one), in a thread; ``keep=False`` only counts spans."""

    def __init__(self, port: int = 0, *, keep: bool = True) -> None:
        self.keep = keep
        self.lock = threading.Lock()
        self.spans: list[ReceivedSpan] = []
        self.count = 0
        self.requests = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self.server.daemon_threads = True
        self.port: int = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def received(self, count: int, spans: list[ReceivedSpan] | None = None) -> None:
        """A request's ``count`` spans, kept when it keeps them (``spans``)."""
        with self.lock:
            self.requests += 1
            self.count += count
            if spans is not None:
                self.spans.extend(spans)

    def snapshot(self) -> list[ReceivedSpan]:
        with self.lock:
            return list(self.spans)

    def wait_for(
        self, found: Callable[[list[ReceivedSpan]], bool], timeout_s: float = 20.0, what: str = "spans"
    ) -> list[ReceivedSpan]:
        """The spans received, once ``found(spans)`` holds (TimeoutError after ``timeout_s``)."""
        until = time.monotonic() + timeout_s
        while True:
            spans = self.snapshot()
            if found(spans):
                return spans
            if time.monotonic() > until:
                raise TimeoutError(f"the OTLP receiver did not get {what} within {timeout_s}s: {len(spans)} spans")
            time.sleep(0.02)


def _handler(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the exporter's session expects

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.path.rstrip("/") != "/v1/traces":
                self._answer(404, b"", "text/plain")
                return
            encoding = (self.headers.get("content-encoding") or "").lower()
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            request = ExportTraceServiceRequest()
            try:
                request.ParseFromString(body)
            except Exception:
                self._answer(400, b"", "text/plain")
                return
            if receiver.keep:
                kept = spans_of(request)
                receiver.received(len(kept), kept)
            else:  # counted only (the bench's sink): no record made of each span, the answer sooner
                receiver.received(sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans))
            self._answer(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/count":
                self._answer(404, b"", "text/plain")
                return
            with receiver.lock:
                counts = {"spans": receiver.count, "requests": receiver.requests}
            self._answer(200, json.dumps(counts).encode(), "application/json")

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pcfjudge_lab.otlp_receiver", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    receiver = OtlpReceiver(args.port, keep=False)
    print(f"listening on {receiver.url}", flush=True)
    try:
        receiver.server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        receiver.server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
