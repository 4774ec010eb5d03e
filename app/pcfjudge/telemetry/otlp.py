"""Spans to OTLP/protobuf bytes, written directly, and the exporter that sends them (``telemetry.tracing`` uses it).

The SDK's OTLP exporter builds a protobuf message object per span, attribute and value, then serializes them: about
100 µs per span of the exporter thread's time, holding the GIL, which on a warm request costs more than the request
(docs/performance.md, "Tracing"). This writes the same ``ExportTraceServiceRequest`` as bytes (the wire format is
tags, lengths and values: protobuf's encoding guide), keeping what repeats from span to span: a resource and a scope
are encoded once, and an attribute whose key and value were seen before (the route, the model, the status) is one
dictionary lookup. ``tests/telemetry/test_otlp.py`` parses what this writes with the official ``opentelemetry-proto``
messages and compares it with the SDK's own encoding, field for field.

``SpanExporter`` is the SDK's ``OTLPSpanExporter`` (endpoint, headers, TLS, compression, timeout, retries, all from
the standard variables) with this encoding; ``telemetry.loop_export`` encodes each span as it ends (``span``), and
posts the batches (``request``) from the event loop with the same settings.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from struct import Struct
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status
from opentelemetry.trace.span import DEFAULT_TRACE_STATE

log = logging.getLogger("pcfjudge")
Encoded = tuple["Resource", "InstrumentationScope | None", bytes]
"""A span encoded (``SpanEncoder.span``), with the resource and scope it is sent under."""

_FIXED64 = Struct("<Q").pack
_FIXED32 = Struct("<I").pack
_DOUBLE = Struct("<d").pack
_TIMES = Struct("<BQBQ").pack  # a span's start and end: two fixed64 fields, tags 0x39 and 0x41
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200  # SpanFlags: bit 8 says whether bit 9 (the parent is remote) is known
_KEPT = 8192  # attributes kept encoded; more, and the table starts again
_KEPT_SETS = 1024  # sets of attributes kept encoded (a set holds its values: fewer)
_VOLATILE = 256  # a key seen with this many values not kept before is volatile (its values are not kept)


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # int64: two's complement, ten bytes
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SHORT = [_varint(n) for n in range(1 << 14)]


def _sized(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: ``tag``, the payload's length, the payload."""
    n = len(payload)
    return tag + (_SHORT[n] if n < 16384 else _varint(n)) + payload


def _text(tag: bytes, value: str) -> bytes:
    return _sized(tag, value.encode())


# ── attributes ───────────────────────────────────────────────────────────────────────────────────────────────────


def _value(value: Any) -> bytes:
    """An ``AnyValue``'s fields (as the SDK's ``_encode_value``: a oneof, so a zero or an empty string is written)."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _text(b"\x0a", value)
    if isinstance(value, int):
        return b"\x18" + _varint(value)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE(value)
    if isinstance(value, bytes):
        return _sized(b"\x3a", value)
    if isinstance(value, Sequence):
        return _sized(b"\x2a", b"".join(_sized(b"\x0a", _value(v)) for v in value))
    if isinstance(value, Mapping):
        return _sized(b"\x32", b"".join(_sized(b"\x0a", _key_value(str(k), v)) for k, v in value.items()))
    raise TypeError(f"an attribute of type {type(value).__name__} has no OTLP encoding")


def _key_value(key: str, value: Any) -> bytes:
    return _text(b"\x0a", key) + _sized(b"\x12", _value(value))


class _Attributes:
    """``repeated KeyValue`` fields of one kind of message (a span's attributes, an event's), as bytes, keeping what
    repeats: a set of attributes seen before (a warm request's route, status and key name; a judgment's model and
    size) is one lookup of its items and their types. A set seen for the first time is encoded item by item, each
    item kept by its (key, value) in a table of the value's type (1, 1.0 and True are equal keys, in three tables).
    A volatile key (a request's id: new on every span) is left out of the set and encoded every time, after it; a
    key found with ``_VOLATILE`` values never seen before becomes one."""

    __slots__ = ("_heads", "_items", "_misses", "_sets", "_volatile")

    def __init__(self, volatile: Iterable[str] = ()) -> None:
        self._sets: dict[tuple[Any, ...], bytes] = {}
        self._items: dict[type, dict[tuple[str, Any], bytes]] = {str: {}, int: {}, float: {}, bool: {}}
        self._misses: dict[str, int] = {}
        self._volatile = {key: _text(b"\x0a", key) for key in volatile}  # a volatile key -> its KeyValue.key field
        self._heads: dict[tuple[bytes, bytes, int], bytes] = {}  # (tag, key field, length) -> a volatile field's head

    def __call__(self, tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
        if not attributes:
            return b""
        volatile, tail = self._volatile, b""
        if not volatile.keys().isdisjoint(attributes.keys()):
            rest = dict(attributes)
            for name in volatile.keys() & rest.keys():
                tail += self._volatile_item(tag, volatile[name], name, rest.pop(name))
            attributes = rest
        try:
            key = (*attributes.items(), *map(type, attributes.values()))
            found = self._sets.get(key)
        except TypeError:  # a value that is a list (it has no hash): item by item
            return b"".join(self._item(tag, *item) for item in attributes.items()) + tail
        if found is None:
            found = b"".join(self._item(tag, *item) for item in attributes.items())
            if len(self._sets) >= _KEPT_SETS:
                self._sets.clear()
            self._sets[key] = found
        return found + tail

    def _volatile_item(self, tag: bytes, named: bytes, key: str, value: Any) -> bytes:
        """A volatile attribute's field: its text, after the fields' head kept by key and length (a request id's
        length is always the same)."""
        if value.__class__ is not str:
            return self._encoded(tag, key, value)
        data = value.encode()
        head = self._heads.get((tag, named, len(data)))
        if head is None:
            n = len(data)
            any_value = b"\x0a" + (_SHORT[n] if n < 16384 else _varint(n))  # AnyValue.string_value, before the text
            n = len(any_value) + n
            pair = named + b"\x12" + (_SHORT[n] if n < 16384 else _varint(n)) + any_value  # KeyValue, before it
            n = len(pair) + len(data)
            head = tag + (_SHORT[n] if n < 16384 else _varint(n)) + pair
            if len(self._heads) >= _KEPT:
                self._heads.clear()
            self._heads[(tag, named, len(data))] = head
        return head + data

    def _item(self, tag: bytes, key: str, value: Any) -> bytes:
        """One attribute's field: kept, or encoded and kept unless its key is volatile (b"": it has no encoding, as
        the SDK's encoder leaves such an attribute out, and says so)."""
        table = self._items.get(value.__class__)
        if table is not None:
            found = table.get((key, value))
            if found is not None:
                return found
        found = self._encoded(tag, key, value)
        if table is None or not found or key in self._volatile:
            return found
        misses = self._misses[key] = self._misses.get(key, 0) + 1
        if misses > _VOLATILE:
            if value.__class__ is str:
                self._volatile[key] = _text(b"\x0a", key)
            return found
        if len(table) >= _KEPT:
            table.clear()
        table[(key, value)] = found
        return found

    @staticmethod
    def _encoded(tag: bytes, key: str, value: Any) -> bytes:
        try:
            return _sized(tag, _key_value(key, value))
        except (TypeError, ValueError) as error:
            log.error("tracing: attribute %s not exported: %s", key, error)
            return b""


# ── spans ────────────────────────────────────────────────────────────────────────────────────────────────────────


class SpanEncoder:
    """``encode(spans)``: an ``ExportTraceServiceRequest``'s bytes. One per exporter (its tables are its own);
    ``volatile``: attribute keys whose values are new every time (a request's id), never kept."""

    def __init__(self, volatile: Iterable[str] = ()) -> None:
        self._span_attributes = _Attributes(volatile)  # tag 9: Span.attributes
        self._event_attributes = _Attributes(volatile)  # tag 3: Event.attributes
        self._scoped: dict[int, tuple[object, bytes]] = {}  # id(resource or scope) -> (it, its encoded message)
        self._names: dict[tuple[str, int], bytes] = {}
        self._event_names: dict[str, bytes] = {}
        self._statuses: dict[int, tuple[Status, bytes]] = {}

    def encode(self, spans: Sequence[ReadableSpan]) -> bytes:
        return self.request([(span.resource, span.instrumentation_scope, self.span(span)) for span in spans])

    def span(self, span: ReadableSpan) -> bytes:
        """One span, as a ``ScopeSpans.spans`` field (``request`` puts it in its scope and resource)."""
        body = self._span(span)
        n = len(body)
        return b"\x12" + (_SHORT[n] if n < 16384 else _varint(n)) + body

    def request(self, encoded: Iterable[Encoded]) -> bytes:
        """The ``ExportTraceServiceRequest`` of spans ``span`` encoded, grouped by resource and scope."""
        scoped: dict[tuple[int, int], tuple[Resource, InstrumentationScope | None, list[bytes]]] = {}
        for resource, scope, data in encoded:
            group = scoped.get((id(resource), id(scope)))
            if group is None:
                group = scoped[(id(resource), id(scope))] = (resource, scope, [])
            group[2].append(data)
        resources: dict[int, tuple[Resource, list[bytes]]] = {}
        for resource, scope, spans in scoped.values():
            body = _sized(b"\x0a", self._scope(scope)) + b"".join(spans)
            if scope is not None and scope.schema_url:
                body += _text(b"\x1a", scope.schema_url)
            resources.setdefault(id(resource), (resource, []))[1].append(_sized(b"\x12", body))  # .scope_spans
        out = []
        for resource, scope_spans in resources.values():
            body = _sized(b"\x0a", self._resource(resource)) + b"".join(scope_spans)
            if resource.schema_url:
                body += _text(b"\x1a", resource.schema_url)
            out.append(_sized(b"\x0a", body))  # ExportTraceServiceRequest.resource_spans
        return b"".join(out)

    def _resource(self, resource: Resource) -> bytes:
        kept = self._scoped.get(id(resource))
        if kept is None or kept[0] is not resource:
            kept = self._scoped[id(resource)] = (resource, _Attributes()(b"\x0a", resource.attributes))
        return kept[1]

    def _scope(self, scope: InstrumentationScope | None) -> bytes:
        if scope is None:
            return b""
        kept = self._scoped.get(id(scope))
        if kept is None or kept[0] is not scope:
            encoded = _text(b"\x0a", scope.name) if scope.name else b""
            encoded += _text(b"\x12", scope.version) if scope.version else b""
            encoded += _Attributes()(b"\x1a", scope.attributes)
            kept = self._scoped[id(scope)] = (scope, encoded)
        return kept[1]

    def _span(self, span: ReadableSpan) -> bytes:
        context, parent = span.context, span.parent
        assert context is not None
        trace_id, span_id, _, _, state, _ = context  # (a SpanContext is a tuple: one unpacking, no property call)
        head = b"\x0a\x10" + trace_id.to_bytes(16, "big") + b"\x12\x08" + span_id.to_bytes(8, "big")
        if state is not DEFAULT_TRACE_STATE and state:  # (the default, empty, is most spans': no call to its len)
            head += _text(b"\x1a", ",".join(f"{k}={v}" for k, v in state.items()))
        if parent is not None:
            head += b"\x22\x08" + parent[1].to_bytes(8, "big")
        kind = span.kind
        named = self._names.get((span.name, kind._value_))
        parts = [head, named if named is not None else self._named(span.name, kind)]
        start, end = span.start_time, span.end_time
        if start and end:
            parts.append(_TIMES(0x39, start, 0x41, end))
        elif start or end:
            parts.append(b"\x39" + _FIXED64(start) if start else b"\x41" + _FIXED64(end))
        parts.append(self._span_attributes(b"\x4a", span.attributes))
        if span.dropped_attributes:
            parts.append(b"\x50" + _varint(span.dropped_attributes))
        for event in span.events:
            parts.append(self._event(event))
        if span.dropped_events:
            parts.append(b"\x60" + _varint(span.dropped_events))
        for link in span.links:
            parts.append(_sized(b"\x6a", self._link(link)))
        if span.dropped_links:
            parts.append(b"\x70" + _varint(span.dropped_links))
        status = span.status
        kept = self._statuses.get(id(status))
        parts.append(kept[1] if kept is not None and kept[0] is status else self._status(status))
        parts.append(_REMOTE_PARENT if parent is not None and parent[2] else _LOCAL_PARENT)
        return b"".join(parts)

    def _named(self, name: str, kind: SpanKind) -> bytes:
        """A span's ``name`` and ``kind`` fields, kept (a service names its spans from a few patterns; keyed by the
        kind's value, an int, since an enum member hashes in Python)."""
        found = (_text(b"\x2a", name) if name else b"") + b"\x30" + _SHORT[kind.value + 1]  # UNSPECIFIED is 0
        if len(self._names) >= _KEPT:
            self._names.clear()
        self._names[(name, kind._value_)] = found
        return found

    def _status(self, status: Status) -> bytes:
        """A span's ``status`` field, kept by the status object (most spans share the unset one)."""
        code, description = status.status_code.value, status.description
        if code or description:
            message = _text(b"\x12", description) if description else b""
            encoded = _sized(b"\x7a", message + (b"\x18" + _SHORT[code] if code else b""))
        else:
            encoded = b"\x7a\x00"  # UNSET, no message: an empty Status, as the SDK's encoder writes it
        if len(self._statuses) >= 64:
            self._statuses.clear()
        self._statuses[id(status)] = (status, encoded)
        return encoded

    def _event(self, event: Event) -> bytes:
        """An event, as a ``Span.events`` field."""
        name = event.name
        head = self._event_names.get(name)
        if head is None:
            head = _text(b"\x12", name) if name else b""
            if len(self._event_names) >= _KEPT:
                self._event_names.clear()
            self._event_names[name] = head
        timestamp = event.timestamp
        parts = [b"\x09" + _FIXED64(timestamp) + head if timestamp else head]
        parts.append(self._event_attributes(b"\x1a", event.attributes))
        if event.dropped_attributes:
            parts.append(b"\x20" + _varint(event.dropped_attributes))
        return _sized(b"\x5a", b"".join(parts))

    def _link(self, link: Link) -> bytes:
        context = link.context
        parts = [b"\x0a\x10" + context.trace_id.to_bytes(16, "big"), b"\x12\x08" + context.span_id.to_bytes(8, "big")]
        parts.append(_Attributes()(b"\x22", link.attributes))
        if link.dropped_attributes:
            parts.append(b"\x28" + _varint(link.dropped_attributes))
        parts.append(b"\x35" + _FIXED32(_flags(context)))
        return b"".join(parts)


def _flags(context: SpanContext | None) -> int:
    """As the SDK writes a span's and a link's ``flags``: whether the parent (the linked span) is remote."""
    return _HAS_IS_REMOTE | _IS_REMOTE if context is not None and context.is_remote else _HAS_IS_REMOTE


_LOCAL_PARENT = b"\x85\x01" + _FIXED32(_HAS_IS_REMOTE)  # Span.flags (fixed32, field 16): a local parent, or none
_REMOTE_PARENT = b"\x85\x01" + _FIXED32(_HAS_IS_REMOTE | _IS_REMOTE)


# ── the exporter ─────────────────────────────────────────────────────────────────────────────────────────────────


class SpanExporter(OTLPSpanExporter):
    """The SDK's OTLP/HTTP span exporter, encoding with ``SpanEncoder``. Should a release of the SDK no longer keep
    its HTTP client where this looks for it, each batch goes the SDK's own way (slower, the same on the wire) and
    ``tests/telemetry/test_otlp.py`` says so."""

    def __init__(self, volatile: Iterable[str] = ()) -> None:
        super().__init__()
        self.encoder = SpanEncoder(volatile)
        self.direct = callable(getattr(getattr(self, "_client", None), "export", None))

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not self.direct or getattr(self, "_shutdown", False):
            return super().export(spans)
        try:
            data = self.encoder.encode(spans)
        except Exception as error:  # as the SDK's exporter: a batch that cannot be encoded is dropped, and said so
            log.error("tracing: a batch of %d spans could not be encoded: %s", len(spans), error)
            return SpanExportResult.FAILURE
        return self.send(data)

    def send(self, data: bytes) -> SpanExportResult:
        """An encoded ``ExportTraceServiceRequest``, sent the SDK's way (blocking; ``direct`` only)."""
        result = self._client.export(data)
        return SpanExportResult.SUCCESS if result.success else SpanExportResult.FAILURE
