"""Anytime judging (docs/deadlines.md): the caller's deadline and who listens to a judgment as it forms.

Both are context variables set by a front door around one judgment, so they reach the runner and the judges
without changing any signature, and an in-process caller that sets neither gets today's behaviour.

* ``AnswerBy``: answer at ``at`` (a ``loop.time()`` instant) with the runs finished by then. Runs still in flight
  either go on into the cache until the request's own timeout (``linger``, PCFJ_DEADLINE_INFLIGHT=finish) or are
  cancelled (``cancel``); either way they keep their backend slot until they end, so admission counts them.
* ``working_for``: a job's judgment may take the job's time (PCFJ_JOB_TIMEOUT_S), not one request's.
* ``listener``: called with a ``RunEvent`` each time a run (a pass) finishes — from the cache or the backend — with
  the consensus of the runs finished so far (the stream of ``stream: true``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

DEADLINE_KIND = "deadline"
"""The error kind of a run the caller's deadline cut (it was planned, not failed)."""


@dataclass(frozen=True, slots=True)
class AnswerBy:
    at: float  # loop.time() instant
    linger: bool = True  # runs in flight at ``at`` finish into the cache (else they are cancelled)


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One finished run (pass) and where the judgment stands: JSON-ready ``data`` shaped by its judge."""

    kind: str  # "run" (listwise) or "pass" (pairwise)
    data: dict[str, Any]


_ANSWER_BY: ContextVar[AnswerBy | None] = ContextVar("pcfjudge_answer_by", default=None)
_WORK_S: ContextVar[float | None] = ContextVar("pcfjudge_work_s", default=None)
_LISTENER: ContextVar[Callable[[RunEvent], None] | None] = ContextVar("pcfjudge_listener", default=None)


def answer_by() -> AnswerBy | None:
    return _ANSWER_BY.get()


def listener() -> Callable[[RunEvent], None] | None:
    return _LISTENER.get()


@contextmanager
def anytime(deadline: AnswerBy | None = None, on_run: Callable[[RunEvent], None] | None = None) -> Iterator[None]:
    """Judgments in the block answer by ``deadline`` and report each finished run to ``on_run``."""
    tokens = (_ANSWER_BY.set(deadline), _LISTENER.set(on_run))
    try:
        yield
    finally:
        _ANSWER_BY.reset(tokens[0])
        _LISTENER.reset(tokens[1])


def emit(kind: str, data: dict[str, Any]) -> None:
    hook = _LISTENER.get()
    if hook is not None:
        hook(RunEvent(kind, data))


def work_timeout() -> float | None:
    """Seconds a judgment's calls may take in all, when a job says (else None: PCFJ_REQUEST_TIMEOUT_S)."""
    return _WORK_S.get()


@contextmanager
def working_for(seconds: float) -> Iterator[None]:
    """Judgments in the block may take ``seconds`` (a job's time left, PCFJ_JOB_TIMEOUT_S), not the request timeout."""
    token = _WORK_S.set(seconds)
    try:
        yield
    finally:
        _WORK_S.reset(token)
