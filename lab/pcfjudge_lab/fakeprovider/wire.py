"""What the fake provider needs from each provider's wire format (one implementation per protocol)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse


@dataclass(frozen=True, slots=True)
class Parsed:
    """A request body reduced to what the fake needs: prompt text, schema/tool name, cacheable prefix."""

    model: str
    system: str
    user: str
    schema_name: str | None
    prompt: str  # all the text counted as prompt tokens
    cache_prefix: str | None  # text whose repetition counts as a prompt-cache hit (None: nothing cacheable)
    schema: dict[str, Any] | None = None  # the answer's JSON schema, in whichever dialect it was sent
    messages: tuple[tuple[str, str], ...] = ()  # (role, text) as sent: a framework's own judge prompt


@dataclass(frozen=True, slots=True)
class Reply:
    """One simulated answer: the judgment (already label-faulted), the text fault, token counts, ids."""

    parsed: Parsed
    answer: dict[str, Any]
    fault: str | None
    prompt_tokens: int
    prefix_tokens: int
    prefix_seen: bool
    ident: str
    text: str | None = None  # a chat template's answer, sent as it is (not ``answer`` as JSON)


class Wire(Protocol):
    name: str

    def key(self, request: Request) -> str | None:
        """The API key the client sent, or None."""
        ...

    def parse(self, body: dict[str, Any]) -> Parsed | str:
        """The parsed request, or a message saying what is wrong with it (sent back as a 400)."""
        ...

    def error(
        self, status: int, kind: str, message: str, *, retry_after: float | None = None, ident: str = ""
    ) -> JSONResponse:
        """An error response in the provider's own format; ``kind`` is a generic name mapped per provider."""
        ...

    def reply(self, reply: Reply) -> JSONResponse:
        """A successful (possibly text-faulted) response object."""
        ...


def retry_headers(retry_after: float | None) -> dict[str, str]:
    """``retry-after`` (whole seconds, as providers send it) plus the precise ``retry-after-ms``."""
    if retry_after is None:
        return {}
    return {"retry-after": str(math.ceil(retry_after)), "retry-after-ms": str(round(retry_after * 1000))}
