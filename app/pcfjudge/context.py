"""What one HTTP request did, for its log line: set by the request middleware, filled in by the judge.

A context variable, so it follows the request into every task it starts without being passed around; outside a
request (eval, benches, the CLI) there is none and nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

ANONYMOUS = "anonymous"


@dataclass(slots=True)
class RequestContext:
    request_id: str
    key: str = ANONYMOUS  # the API key's *name* (never the key); "anonymous" with authentication off
    backend_calls: int = 0
    cache_hits: int = 0


_CURRENT: ContextVar[RequestContext | None] = ContextVar("pcfjudge_request", default=None)


def current() -> RequestContext | None:
    return _CURRENT.get()


def key_name() -> str:
    """The calling key's name, or "anonymous"."""
    ctx = _CURRENT.get()
    return ctx.key if ctx is not None else ANONYMOUS


@contextmanager
def serving(ctx: RequestContext) -> Iterator[RequestContext]:
    """``ctx`` is the current request's while the block runs (and in every task started inside it)."""
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)


def record(backend_calls: int, cache_hits: int) -> None:
    ctx = _CURRENT.get()
    if ctx is not None:
        ctx.backend_calls += backend_calls
        ctx.cache_hits += cache_hits
