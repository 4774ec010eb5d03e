"""How one judgment runs (docs/deadlines.md, docs/streaming.md): a ``Watch``, passed as a value from its front door
through ``Judge.run`` and the judges to every ``runner.run``. The same plan runs now, streamed or as a job: only its
watch differs.

* ``answer_by``: answer at ``answer_by.at`` (a ``loop.time()`` instant) with the runs finished by then. Runs still in
  flight either go on into the cache until the request's own timeout (``linger``, PCFJ_DEADLINE_INFLIGHT=finish) or
  are cancelled; either way they keep their backend slot until they end, so admission counts them.
* ``timeout_s``: how long the judgment's calls may take in all (None: the judge's request timeout; a job's time left,
  PCFJ_JOB_TIMEOUT_S); ``Judge.run`` turns it into ``until``, the instant every call must be done by.
* ``listener``: hears every event of the judgment (the events of ``stream: true``): a ``run`` each time a run (a
  window) finishes — from the cache or the backend — with where the judgment stands (``pass`` for pairwise), and the
  light events below.
* ``observers``: hear the light events only (traces, metrics), which cost nothing to make: ``cached`` (the runs a
  cache lookup answered), ``calling`` (the runs a cache lookup did not answer, about to be waited for), ``round`` (a round of windows finished), ``juror`` (a juror's judgment finished) and
  ``stopped`` (the judgment ended, and why). ``Judge.run`` adds its own.
* ``on_outcome``: called with each call's outcome as it finishes, cache hits first (a job's progress).
* ``meter``: the backend attempts of the whole request (``spend.Meter``; a reward request's, over all its groups);
  ``Judge.run`` opens the judgment's own meter within it.
* ``priority`` and ``key``: the class its calls wait for a backend slot in (``backends.slots``: interactive, stream,
  background), and the API key whose turn they take in it; set at the door (``http.deps.watch_of``, ``http.streaming``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pcfjudge.backends.slots import ANYONE, Priority
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
    """One event of a judgment (module docstring): JSON-ready ``data`` shaped by its kind."""

    kind: str  # "run" (listwise), "pass" (pairwise), "cached", "calling", "round", "juror" or "stopped"
    data: dict[str, Any]


Listener = Callable[[RunEvent], None]
LIGHT = frozenset({"cached", "calling", "round", "juror", "stopped"})
"""The events observers hear (``Watch.announce``); ``run`` and ``pass`` carry the consensus so far, made only for a
listener (``Watch.emit``)."""
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
    observers: tuple[Listener, ...] = ()
    priority: Priority = "interactive"  # the class its calls wait for a slot in
    key: str = ANYONE  # the calling API key's name: its turn within the class

    def until_at(self, until: float, *observers: Listener) -> Watch:
        """This watch, its calls done by ``until`` and ``observers`` also hearing its light events (one
        construction, not ``dataclasses.replace``: it is on every request's way)."""
        w, heard = self, (*self.observers, *observers) if self.observers else observers
        return Watch(w.answer_by, w.timeout_s, w.listener, w.on_outcome, w.meter, until, heard, w.priority, w.key)

    def metered(self, meter: Meter | None) -> Watch:
        """This watch, its attempts counted by ``meter``."""
        w = self
        return Watch(w.answer_by, w.timeout_s, w.listener, w.on_outcome, meter, w.until, w.observers, w.priority, w.key)

    def observed(self, observer: Listener) -> Watch:
        """This watch, ``observer`` also hearing its light events."""
        return self.until_at(self.until, observer)

    @property
    def heard(self) -> bool:
        """Whether anyone hears the light events (``announce`` is then worth its data)."""
        return self.listener is not None or bool(self.observers)

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        """A ``run`` or ``pass`` event, to the listener."""
        if self.listener is not None:
            self.listener(RunEvent(kind, data))

    def announce(self, kind: str, data: dict[str, Any]) -> None:
        """A light event (``LIGHT``), to the listener and every observer."""
        event = RunEvent(kind, data)
        if self.listener is not None:
            self.listener(event)
        for observer in self.observers:
            observer(event)

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
