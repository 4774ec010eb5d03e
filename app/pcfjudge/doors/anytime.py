"""A request's deadline (docs/deadlines.md): the body's ``deadline_ms`` or RFC 7240's ``Prefer: wait=<seconds>``.

Both count from when the service has read the request; with both, the earlier wins. The judgment then answers by
it with the runs finished (``stopped: "deadline"``), or 504 saying how far it got; the runs in flight finish into the
cache (PCFJ_DEADLINE_INFLIGHT=finish, the default) or are cancelled. A deadline shorter than PCFJ_MIN_DEADLINE_MS is
refused (422): nothing could run in it.
"""

from __future__ import annotations

import asyncio
import re

from pcfjudge.engine.progress import AnswerBy
from pcfjudge.errors import client_error
from pcfjudge.settings import FanOut

_SECONDS = re.compile(r"\d{1,9}(?:\.\d{1,6})?")
"""A ``wait`` value as RFC 7240 gives it (delta-seconds; a decimal fraction allowed): no exponent, sign, NaN or
infinity, at most 9 digits (about 31 years). Anything else is not a wait preference, and is ignored."""


def prefer_wait_ms(prefer: str | None) -> float | None:
    """``Prefer: wait=10`` (several preferences may share the header: ``respond-async, wait=10``) in milliseconds.

    Only a preference named ``wait`` counts (``x;wait=5``: a parameter of another preference, ignored), and only
    the first (RFC 7240), with a value ``_SECONDS`` matches (``wait=1e10`` or ``wait=-1``: ignored, never 1 s)."""
    for item in (prefer or "").split(","):
        token = item.split(";", 1)[0]
        name, equals, value = token.partition("=")
        if name.strip().lower() != "wait" or not equals:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        return float(value) * 1000 if _SECONDS.fullmatch(value) else None  # RFC 7240: the first one counts
    return None


def answer_deadline(settings: FanOut, deadline_ms: int | None, prefer: str | None) -> AnswerBy | None:
    """The request's deadline as a ``loop.time()`` instant (None: none given), refusing one too short to run."""
    given = [ms for ms in (deadline_ms, prefer_wait_ms(prefer)) if ms is not None]
    if not given:
        return None
    ms = min(given)
    if ms < settings.min_deadline_ms:
        field = "deadline_ms" if deadline_ms is not None and ms == deadline_ms else "Prefer"
        raise client_error(field, f"{ms:g} ms is too short to judge anything; at least {settings.min_deadline_ms} ms")
    linger = settings.deadline_inflight == "finish"
    return AnswerBy(asyncio.get_running_loop().time() + ms / 1000, linger)
