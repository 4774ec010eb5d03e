"""One HTTP/1.1 request over a plain socket, for heads no HTTP client would send (a megabyte of headers, 200,000 of
them): sent a piece at a time, stopping as soon as the server answers, so an answer sent before the whole request
was read (a 431) is read and not lost to a reset."""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

PIECE = 16_384


@dataclass(frozen=True, slots=True)
class RawAnswer:
    status: int  # 0: the server closed the connection without an answer
    headers: dict[str, str]
    body: bytes
    seconds: float  # from the first byte sent to the whole answer read
    sent: int  # bytes of the request sent before the answer came


def raw_request(
    url: str,
    method: str,
    path: str,
    headers: list[tuple[str, str]],
    body: bytes = b"",
    timeout_s: float = 30,
    patient_after: int | None = None,
) -> RawAnswer:
    """``patient_after``: past this many bytes of the head sent, wait up to 0.2 s for an answer after each piece (an
    answer the server gives before reading the rest is then read before the rest goes, not lost to the reset of a
    close with unread data)."""
    parts = urlsplit(url)
    head = f"{method} {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers)
    head += f"Content-Length: {len(body)}\r\n\r\n"
    data = head.encode("latin-1") + body
    started = time.perf_counter()
    with socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout_s) as sock:
        sent = 0
        try:
            while sent < len(data):
                sent += sock.send(data[sent : sent + PIECE])
                patient = patient_after is not None and patient_after < sent <= len(head) + PIECE
                wait = 0.2 if patient else 0.002
                if select.select([sock], [], [], wait)[0]:
                    break  # the server answered before reading it all
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while chunk := sock.recv(65_536):
                answer += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    seconds = time.perf_counter() - started
    if not answer.startswith(b"HTTP/1."):
        return RawAnswer(0, {}, answer, seconds, sent)
    head_bytes, _, rest = answer.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return RawAnswer(int(lines[0].split()[1]), {k.lower(): v for k, v in fields.items()}, rest, seconds, sent)
