"""uvicorn's HTTP protocol with a header deadline and a header size: a client must finish its request headers in
``PCFJ_HEADER_TIMEOUT_S`` (default 10 s) from connecting or from the first byte of its next request on a
keep-alive connection, else the connection is answered 408 and closed; and the request line and headers must stay
within ``PCFJ_MAX_HEADER_BYTES`` (64 KiB) and ``PCFJ_MAX_HEADER_COUNT`` (256 headers), else 431 and closed, before
any of the app runs (httptools itself sets no limit: without this a 50 MB header was read, and answered).
The head is counted as it arrives (what is buffered before the headers end is at most the limit and one read) and
exactly once complete; ``api.middleware.headers`` checks the same limits on any server.

uvicorn closes idle keep-alive connections (``PCFJ_KEEP_ALIVE_S``) and the app times out slow bodies
(``PCFJ_BODY_TIMEOUT_S``, see ``api.middleware.body``), but nothing bounds a client that trickles its headers;
without this, a few hundred such connections hold the server's sockets open indefinitely. ``pcfjudge serve`` passes
this class to uvicorn as ``http=`` by name (workers import it); each process reads the deadline from its settings,
as the app it serves does (``create_app`` builds ``Settings()`` the same way).
"""

from __future__ import annotations

import asyncio
import logging
import os
from functools import cache
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from pcfjudge.api.middleware.headers import head_too_large
from pcfjudge.settings import Settings

log = logging.getLogger("pcfjudge")


@cache
def _settings() -> Settings:
    return Settings()


def header_timeout_s() -> float:
    """This process's PCFJ_HEADER_TIMEOUT_S, from its settings (read once)."""
    return _settings().access.header_timeout_s


_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: "
_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\nconnection: close\r\n"


class HeaderTimeoutProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self.header_timeout_s = header_timeout_s()
        self.max_head_bytes, self.max_head_count = (
            _settings().limits.max_header_bytes,
            _settings().limits.max_header_count,
        )
        self._head_open, self._head_bytes, self._head_count, self._refused = True, 0, 0, False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._head_open:
            self._head_bytes += len(data)
        super().data_received(data)
        head_over = self._head_open and (
            self._head_bytes > self.max_head_bytes or self._head_count > self.max_head_count
        )
        if self._refused or head_over:
            self._refuse_head()

    def on_message_begin(self) -> None:
        if self._refused:
            return
        super().on_message_begin()
        self._arm()

    def on_url(self, url: bytes) -> None:
        if not self._refused:
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_count += 1
        if not self._refused and self._head_count <= self.max_head_count:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._disarm()
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if self._refused or size > self.max_head_bytes or self._head_count > self.max_head_count:
            self._refused = True  # answered once the parser returns (``data_received``): the app never sees it
            return
        self._head_open = False
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        super().on_message_complete()
        self._head_open, self._head_bytes, self._head_count = True, 0, 0  # the next request's head starts here

    def _refuse_head(self) -> None:
        self._refused = True
        self._disarm()
        if self.transport.is_closing():
            return
        rid = os.urandom(16).hex()  # as the app names its requests (api.middleware.request): quotable in a report
        body = head_too_large(self.max_head_bytes, self.max_head_count, rid)
        head = _431 + b"x-request-id: %s\r\ncontent-length: %d\r\n\r\n" % (rid.encode(), len(body))
        self.transport.write(head + body)
        log.info("refused a request head over its limits (431) request_id=%s", rid)
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        body = b'{"error":"header_timeout","detail":"request headers did not arrive in time"}'
        self.transport.write(_408 + str(len(body)).encode() + b"\r\n\r\n" + body)
        self.transport.close()
