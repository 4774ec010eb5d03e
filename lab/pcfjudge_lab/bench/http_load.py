"""The load side of ``pcfjudge bench http``: closed-loop HTTP/1.1 keep-alive clients that cost little CPU.

The servers under test (``pcfjudge serve``, the bare FastAPI echo, the fake provider) share two cores with this
client, so the client must cost far less per request than they do, or it caps what they can show. A general client
(httpx, aiohttp) spends 100-300 µs of CPU per request; this one writes a prebuilt request and reads one
``Content-Length`` response per round trip on a persistent connection (tens of µs). It speaks only what these
servers answer: HTTP/1.1, ``Content-Length`` bodies, keep-alive.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

Body = Callable[[int], bytes]
"""The body of request number ``i`` of a phase."""


class Connection:
    """One keep-alive connection to ``url``'s host; ``post`` sends a JSON body and returns (status, body)."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        self._head = f"Host: {self.host}:{self.port}\r\nContent-Type: application/json\r\n{extra}"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self._writer is None or self._writer.is_closing():
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port, limit=1 << 22)
        assert self._reader is not None
        request = f"POST {path} HTTP/1.1\r\n{self._head}Content-Length: {len(body)}\r\n\r\n".encode() + body
        self._writer.write(request)
        head = await self._reader.readuntil(b"\r\n\r\n")
        status, length, close = _parse_head(head)
        data = await self._reader.readexactly(length)
        if close:
            await self.close()
        return status, data

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _parse_head(head: bytes) -> tuple[int, int, bool]:
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length, close = None, False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "connection" and value.strip().lower() == "close":
            close = True
        elif name == "transfer-encoding":
            raise ValueError("the bench client reads Content-Length bodies only")
    if length is None:
        raise ValueError(f"response without Content-Length: {lines[0]}")
    return status, length, close


@dataclass(slots=True)
class LoadResult:
    """What one closed-loop phase saw: per-request latencies (s), statuses and the wall time."""

    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    last_body: bytes = b""

    @property
    def count(self) -> int:
        return len(self.latencies)

    @property
    def ok(self) -> int:
        return self.statuses.get(200, 0)

    @property
    def rate(self) -> float:
        """Requests per second over the phase."""
        return self.count / self.seconds if self.seconds > 0 else 0.0

    def percentile_ms(self, q: float) -> float:
        data = sorted(self.latencies)
        if not data:
            return 0.0
        return data[min(len(data) - 1, max(0, round(q * (len(data) - 1))))] * 1000


async def closed_loop(
    url: str, path: str, body: Body, *, requests: int, concurrency: int, headers: dict[str, str] | None = None
) -> LoadResult:
    """``requests`` POSTs to ``url + path`` from ``concurrency`` connections, each sending its next request as
    soon as the previous answer arrived; request ``i`` carries ``body(i)``."""
    result = LoadResult()
    counter = iter(range(requests))

    async def loop() -> None:
        connection = Connection(url, headers)
        try:
            for i in counter:
                payload = body(i)
                started = time.perf_counter()
                status, data = await connection.post(path, payload)
                result.latencies.append(time.perf_counter() - started)
                result.statuses[status] = result.statuses.get(status, 0) + 1
                result.last_body = data
        finally:
            await connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(max(1, min(concurrency, requests)))))
    result.seconds = time.perf_counter() - started
    return result
