"""A job's request, sent to this app in this process: the ordinary route runs it, with every check, cap, quota and
door, and answers exactly as it would have answered the caller.

The owner rides in the ASGI scope (``JOB_SCOPE``), which only this process writes: a client can send any header, but
never a scope key, so the auth middleware may trust it in place of an API key. The request's "client" leaves when
``gone`` is set (cancelled, timed out, this process stopping): the body middleware then cancels the route's task, and
with it every backend call no other request is waiting for, as for any caller that disconnects.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message

from pcfjudge.engine.progress import OutcomeHook

JOB_SCOPE = "pcfjudge.job"
"""The scope key carrying a ``JobCaller`` (set only by ``call``)."""


@dataclass(frozen=True, slots=True)
class JobCaller:
    owner: str  # the API key's name that submitted the job ("anonymous" with authentication off)
    job_id: str
    timeout_s: float | None = None  # the judgment's calls may take the job's time left (PCFJ_JOB_TIMEOUT_S)
    on_outcome: OutcomeHook | None = None  # each call's outcome, as it finishes: the job's progress


@dataclass(slots=True)
class Reply:
    status: int = 0  # 0: no answer (the request was stopped before one started)
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""

    def header(self, name: str) -> str | None:
        wanted = name.lower().encode()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value.decode("latin-1")
        return None


async def call(
    app: ASGIApp, caller: JobCaller, path: str, headers: dict[str, str], body: bytes, gone: asyncio.Event
) -> Reply:
    """POST ``body`` to ``path`` as ``caller``; the route's answer (status, headers, body) once it has answered."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()),
        ],
        "client": None,
        "server": None,
        "state": {},
        JOB_SCOPE: caller,
    }
    delivered = False
    reply = Reply()
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            reply.status, reply.headers = message["status"], list(message.get("headers", ()))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    reply.body = b"".join(chunks)
    return reply
