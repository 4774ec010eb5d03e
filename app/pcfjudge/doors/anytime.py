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

_WAIT = re.compile(r"(?:^|[,;\s])wait\s*=\s*\"?(\d+(?:\.\d+)?)\"?", re.IGNORECASE)


def prefer_wait_ms(prefer: str | None) -> float | None:
    """``Prefer: wait=10`` (several preferences may share the header: ``respond-async, wait=10``) in milliseconds."""
    if not prefer:
        return None
    found = _WAIT.search(prefer)
    return float(found.group(1)) * 1000 if found else None


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
