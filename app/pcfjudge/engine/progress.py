"""How one judgment runs (docs/deadlines.md, docs/streaming.md): a ``Watch``, passed as a value from its front door
through ``Judge.run`` and the judges to every ``runner.run``. The same plan runs now, streamed or as a job: only its
watch differs.

* ``answer_by``: answer at ``answer_by.at`` (a ``loop.time()`` instant) with the runs finished by then. Runs still in
  flight either go on into the cache until the request's own timeout (``linger``, PCFJ_DEADLINE_INFLIGHT=finish) or
  are cancelled; either way they keep their backend slot until they end, so admission counts them.
* ``timeout_s``: how long the judgment's calls may take in all (None: the judge's request timeout; a job's time left,
  PCFJ_JOB_TIMEOUT_S); ``Judge.run`` turns it into ``until``, the instant every call must be done by.
* ``listener``: called with a ``RunEvent`` each time a run (a pass, a window) finishes — from the cache or the
  backend — with where the judgment stands (the events of ``stream: true``).
* ``on_outcome``: called with each call's outcome as it finishes, cache hits first (a job's progress).
* ``meter``: the backend attempts of the whole request (``spend.Meter``; a reward request's, over all its groups);
  ``Judge.run`` opens the judgment's own meter within it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pcfjudge.engine.calls import CallOutcome, CallSpec
from pcfjudge.engine.spend import Meter

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


Listener = Callable[[RunEvent], None]
OutcomeHook = Callable[[CallSpec, CallOutcome], None]


@dataclass(frozen=True, slots=True)
class Watch:
    """How one judgment runs: see the module docstring. ``Watch()`` is a plain in-process judgment."""

    answer_by: AnswerBy | None = None
    timeout_s: float | None = None
    listener: Listener | None = None
    on_outcome: OutcomeHook | None = None
    meter: Meter | None = None
    until: float = math.inf  # set by ``Judge.run``: when every call must be done (``loop.time()``)

    def until_at(self, until: float) -> Watch:
        """This watch, its calls done by ``until`` (``dataclasses.replace``, spelled out: it is on every request's way)."""
        return Watch(self.answer_by, self.timeout_s, self.listener, self.on_outcome, self.meter, until)

    def metered(self, meter: Meter | None) -> Watch:
        """This watch, its attempts counted by ``meter``."""
        return Watch(self.answer_by, self.timeout_s, self.listener, self.on_outcome, meter, self.until)

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        if self.listener is not None:
            self.listener(RunEvent(kind, data))

    def hooked(self, hook: OutcomeHook) -> Watch:
        """This watch, with ``hook`` also called for each call's outcome."""
        if self.on_outcome is None:
            return replace(self, on_outcome=hook)
        first = self.on_outcome

        def both(spec: CallSpec, outcome: CallOutcome) -> None:
            first(spec, outcome)
            hook(spec, outcome)

        return replace(self, on_outcome=both)


PLAIN = Watch()
"""A judgment run in process, with the judge's own timeout, no deadline, listener or meter above its own."""
