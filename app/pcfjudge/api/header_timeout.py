"""uvicorn's HTTP protocol with a header deadline: a client must finish its request headers in
``PCFJ_HEADER_TIMEOUT_S`` (default 10 s) from connecting or from the first byte of its next request on a
keep-alive connection, else the connection is answered 408 and closed.

uvicorn closes idle keep-alive connections (``PCFJ_KEEP_ALIVE_S``) and the app times out slow bodies
(``PCFJ_BODY_TIMEOUT_S``, see ``api.middleware.body``), but nothing bounds a client that trickles its headers;
without this, a few hundred such connections hold the server's sockets open indefinitely. ``pcfjudge serve`` passes
this class to uvicorn as ``http=`` by name (workers import it); each process reads the deadline from its settings,
as the app it serves does (``create_app`` builds ``Settings()`` the same way).
"""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from pcfjudge.settings import Settings


@cache
def header_timeout_s() -> float:
    """This process's PCFJ_HEADER_TIMEOUT_S, from its settings (read once)."""
    return Settings().header_timeout_s


_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: "


class HeaderTimeoutProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self.header_timeout_s = header_timeout_s()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

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
