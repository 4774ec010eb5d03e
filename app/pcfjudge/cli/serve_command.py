"""What ``pcfjudge serve`` says at start-up (``log_startup``), and uvicorn's HTTP protocol with a header deadline: a client must finish its request headers in
``PCFJ_HEADER_TIMEOUT_S`` (default 10 s) from connecting or from the first byte of its next request on a
keep-alive connection, else the connection is answered 408 and closed.

uvicorn closes idle keep-alive connections (``PCFJ_KEEP_ALIVE_S``) and the app times out slow bodies
(``PCFJ_BODY_TIMEOUT_S``, see ``api.body``), but nothing bounds a client that trickles its headers; without this,
a few hundred such connections hold the server's sockets open indefinitely. ``pcfjudge serve`` passes this class
to uvicorn as ``http=``; workers import it by name and read the timeout from the environment.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

if TYPE_CHECKING:
    from pcfjudge.settings import Settings

LOG = logging.getLogger("pcfjudge.cli.serve_command")


def startup_warnings(settings: Settings) -> list[str]:
    """One line each for what an operator must not miss: no authentication, a simulated default judge."""
    lines = []
    if settings.api_keys is None and settings.api_keys_file is None:
        lines.append(
            "authentication is off: anyone who can reach this address can judge, and spend on the judge's provider; "
            "set PCFJ_API_KEYS or PCFJ_API_KEYS_FILE to require keys"
        )
    model = settings.resolved_default_model()
    if model.startswith("sim:"):
        lines.append(
            f"the default judge is simulated ({model}): its verdicts are seeded draws, not a reading of the answers; "
            "set OPENAI_API_KEY or ANTHROPIC_API_KEY (or PCFJ_DEFAULT_MODEL) for a real judge"
        )
    return lines


def log_startup(settings: Settings) -> None:
    """Log ``startup_warnings`` once, when ``pcfjudge serve`` starts (before its workers do)."""
    for line in startup_warnings(settings):
        LOG.warning(line)


_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: "


def header_timeout_s() -> float:
    return float(os.environ.get("PCFJ_HEADER_TIMEOUT_S", "10"))


class HeaderTimeoutProtocol(HttpToolsProtocol):
    header_timeout_s = header_timeout_s()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

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
