"""A backend's call slots: its concurrency limit, and admission control in front of it.

``size`` calls (``PCFJ_BACKEND_CONCURRENCY``) run at once per backend and process; at most ``max_queued``
(``PCFJ_MAX_QUEUED_CALLS``) more may wait for a slot ahead of a new call (see Admission).

**Who gets a free slot** (docs/operations/fleets.md, "Interactive work first"): the first waiter of the highest class
waiting (``PRIORITIES``: interactive, stream, background), the API keys taking turns within a class (round robin
between their queues, each first come first served). A running call keeps its slot.

**Latency estimate.** ``estimate_s()`` is the typical call latency: an exponentially weighted mean of the calls
measured here, raised by two kinds of evidence that a call takes *at least* some time, so that it works from the
first request and learns from failures, not only from successes:

* calls still in flight: a running call has taken at least its age, so the estimate is never below the median age
  of the calls running now (in a burst they all started together: the oldest running call's age; a single stuck
  call among fast ones does not count);
* calls that ended without an answer (timed out at their deadline, or cancelled): their time is a lower bound of
  their latency and pulls the mean up (never down).

**Admission.** ``reserve(n, remaining_s, priority)`` admits ``n`` new calls of a class (one per call task the runner
starts; released exactly once, with the same class, when that task ends) or raises ``Saturated`` (a backend error:
``overloaded``, with the time to drain) at once when

* the queue would overflow, or
* the calls could not finish in the request's time left, with 10% to spare: with ``c`` calls ahead of them they
  finish after about ``ceil((c + n) / size)`` rounds of the estimate.

The calls *ahead* (``ahead``) are those admitted in its class and above, and those of lower classes holding a slot.
A backend with nothing ahead of a request always admits it when its calls fit in one round: nothing ahead could
drain, and only such a probe can tell that a provider learnt as slow or hung has recovered.

**Shedding.** A call waiting for a slot that can no longer finish before its deadline (given the calls ahead of it
in the order of service, and the estimate) is refused from the queue at once with ``Shed`` (503 ``overloaded``,
Retry-After) instead of waiting for its 504: checked every ``TICK_S`` while calls wait (sooner when a waiter could
become hopeless before then), and again when a slot is about to be handed over. Waiting for a slot happens inside the request's deadline,
and a call cancelled while it waits gives its place up.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Iterator
from itertools import zip_longest

from pcfjudge.backends.base import BackendError, BackendTimeout
from pcfjudge.types import PRIORITIES as PRIORITIES  # re-exported: the classes, highest first: direct requests,
from pcfjudge.types import Failure
from pcfjudge.types import Priority as Priority  # server-sent events, jobs/eval/calibration

EWMA_WEIGHT = 0.2  # weight of the newest measured call in the latency mean
CENSORED_WEIGHT = 0.5  # weight of a call that ended without an answer after longer than the mean
SPARE = 0.1  # admission and shedding keep this share of a request's time left to spare
TICK_S = 0.1  # how often waiting calls are checked against their deadlines (sooner when one is about to be hopeless)
MIN_TICK_S = 0.005
ANYONE = "anonymous"  # the key of a call made outside any request (as ``pcfjudge.context.ANONYMOUS``)


class Saturated(BackendError):
    """Admission control will not take a request's calls (the queue is full, or they could not finish in time);
    ``retry_after`` is the time the calls ahead need to drain. The runner declines the request with it."""

    kind = "overloaded"
    failure: Failure = "backend_overloaded"


class Shed(BackendError):
    """A call refused from the queue: it could no longer finish before its request's deadline."""

    kind = "overloaded"
    failure: Failure = "backend_overloaded"


class _Waiter:
    __slots__ = ("deadline", "future")

    def __init__(self, future: asyncio.Future[None], deadline: float) -> None:
        self.future, self.deadline = future, deadline


class _Line(dict[str, deque[_Waiter]]):
    """One class's waiters: a queue per API key, the keys taking turns in the dict's order."""

    def pop_next(self) -> _Waiter | None:
        """The first waiter of the key whose turn it is; that key then goes to the back of the turns."""
        for key in self:
            queue = self.pop(key)
            if len(queue) > 1:
                self[key] = queue
            return queue.popleft()
        return None

    def in_turn(self) -> Iterator[_Waiter]:
        """Every waiter, in the order ``pop_next`` would give them."""
        for turn in zip_longest(*self.values()):
            yield from (waiter for waiter in turn if waiter is not None)


class Slots:
    def __init__(self, size: int, max_queued: int) -> None:
        self.size, self.max_queued = size, max_queued
        self.reserved = 0  # admitted call tasks not finished (running, waiting, or about to wait)
        self.reserved_by: dict[Priority, int] = dict.fromkeys(PRIORITIES, 0)  # the same, per class
        self.latency_s: float | None = None  # the weighted mean; see ``estimate_s``
        self.measured = 0  # calls that ended with an answer
        self.shed = 0  # calls refused from the queue
        self._free = size
        self._running: dict[_Slot, float] = {}  # start times (loop clock), oldest first
        self._holding: dict[Priority, int] = dict.fromkeys(PRIORITIES, 0)  # calls in a slot, per class
        self._lines: dict[Priority, _Line] = {p: _Line() for p in PRIORITIES}
        self._queued = 0  # waiters in the lines (a cancelled one until it is passed over)
        self._ticker: asyncio.TimerHandle | None = None

    # ── admission ────────────────────────────────────────────────────────────────────────────────────────────

    def reserve(self, n: int, remaining_s: float, priority: Priority = "interactive") -> None:
        """Admit ``n`` new calls of class ``priority`` (``release(n, priority)`` when they end) or raise
        ``Saturated`` naming why."""
        if n <= 0:
            return
        ahead = self.ahead(priority)
        # With nothing ahead, an overflow could never be cured by retrying: only the deadline can refuse then.
        if ahead > 0 and ahead + n > self.size + self.max_queued:
            waiting = max(0, ahead - self.size)
            raise Saturated(
                f"the judge backend is saturated ({ahead} calls ahead, {waiting} waiting; at most "
                f"{self.size} run and {self.max_queued} wait); retry later",
                retry_after=self.drain_s(priority),
            )
        probe = ahead == 0 and n <= self.size
        expected = self.expected_s(n, priority)
        if not probe and expected is not None and expected > remaining_s * (1 - SPARE):
            raise Saturated(
                f"the calls ahead would take about {expected:.1f}s, more than this request's remaining "
                f"{remaining_s:.1f}s allows; retry later",
                retry_after=self.drain_s(priority),
            )
        self.reserved += n
        self.reserved_by[priority] += n

    def release(self, n: int, priority: Priority = "interactive") -> None:
        """``n`` admitted calls of class ``priority`` ended (each exactly once)."""
        self.reserved -= n
        self.reserved_by[priority] -= n
        if self.reserved < 0 or self.reserved_by[priority] < 0:  # a bug in the caller's accounting
            raise RuntimeError(f"call slots released more than they reserved ({self.reserved_by})")

    def ahead(self, priority: Priority) -> int:
        """The calls ahead of a new call of class ``priority``: admitted in its class and above, holding a slot below."""
        rank = PRIORITIES.index(priority)
        return sum(self.reserved_by[p] if i <= rank else self._holding[p] for i, p in enumerate(PRIORITIES))

    def estimate_s(self, now: float | None = None) -> float | None:
        """The typical call latency (see the module docstring); None before any evidence."""
        lower = 0.0
        if self._running:
            now = asyncio.get_running_loop().time() if now is None else now
            starts = list(self._running.values())  # oldest first
            lower = now - starts[(len(starts) - 1) // 2]
        if self.latency_s is None:
            return lower if self._running else None
        return max(self.latency_s, lower)

    def expected_s(self, n: int, priority: Priority = "background") -> float | None:
        """Seconds until ``n`` calls of class ``priority`` (default: behind every call) admitted now would finish."""
        estimate = self.estimate_s()
        if estimate is None:
            return None
        return math.ceil((self.ahead(priority) + n) / self.size) * estimate

    def drain_s(self, priority: Priority = "background") -> float:
        """About when a retry of class ``priority`` may be admitted: the calls ahead of it drained (at least 1 s)."""
        return max(1.0, self.expected_s(0, priority) or 1.0)

    # ── slots ────────────────────────────────────────────────────────────────────────────────────────────────

    def slot(self, deadline: float = math.inf, priority: Priority = "interactive", key: str = ANYONE) -> _Slot:
        """Hold one of the ``size`` slots for a call (``async with``), waiting in line (``priority``'s, ``key``'s turn)
        if none is free; raises ``Shed`` when the call could no longer finish by ``deadline`` (a loop-clock instant).
        A plain class rather than ``@asynccontextmanager``: this runs for every backend call."""
        return _Slot(self, deadline, priority, key)

    async def _acquire(self, deadline: float, priority: Priority, key: str) -> None:
        if self._free > 0 and not self._queued:
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lines[priority].setdefault(key, deque()).append(_Waiter(future, deadline))
        self._queued += 1
        self._arm()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                self._hand_over()  # granted just as it was cancelled: pass the slot on
            raise

    def _hand_over(self) -> None:
        """A slot is free: give it to the next waiter (highest class first, keys in turn) that can still make its
        deadline, shedding the ones passed over that cannot."""
        now = asyncio.get_running_loop().time()
        estimate = self.estimate_s(now)
        for priority in PRIORITIES:
            line = self._lines[priority]
            while (waiter := line.pop_next()) is not None:
                self._queued -= 1
                if waiter.future.done():  # cancelled while it waited
                    continue
                if estimate is not None and now + estimate > waiter.deadline - SPARE * estimate:
                    self._shed(waiter, now, priority)
                    continue
                waiter.future.set_result(None)
                return
        self._free += 1

    def _shed(self, waiter: _Waiter, now: float, priority: Priority) -> None:
        self.shed += 1
        left = max(0.0, waiter.deadline - now)
        waiter.future.set_exception(
            Shed(
                f"the judge backend's queue could not reach this call before the request's deadline ({left:.1f}s "
                "left); retry later",
                retry_after=self.drain_s(priority),
                retryable=False,
            )
        )

    def _arm(self, delay: float = TICK_S) -> None:
        if self._ticker is None and self._queued:
            self._ticker = asyncio.get_running_loop().call_later(delay, self._tick)

    def _tick(self) -> None:
        """Shed every waiting call that could no longer finish by its deadline, given the calls ahead of it."""
        self._ticker = None
        now = asyncio.get_running_loop().time()
        estimate = self.estimate_s(now)
        soonest = TICK_S
        if estimate is not None and estimate > 0:
            # When each slot frees up (running calls take ``estimate`` in all; free slots now), then every
            # waiter in line takes the next slot to free up, a round of ``estimate`` after the one before.
            frees = sorted(max(0.0, estimate - (now - started)) for started in self._running.values())
            frees += [0.0] * (self.size - len(frees))
            position = 0
            for priority, line in self._lines.items():  # in the order they would be served
                kept: set[_Waiter] = set()
                for waiter in line.in_turn():
                    if waiter.future.done():
                        continue
                    rounds, slot = divmod(position, self.size)
                    finish = now + frees[slot] + rounds * estimate + estimate
                    slack = waiter.deadline - SPARE * estimate - finish
                    if slack < 0:
                        self._shed(waiter, now, priority)
                        continue
                    # While no call answers, the estimate can grow as fast as the clock (the running calls' age), and
                    # this waiter's finish at most (rounds + 2 + SPARE) times as fast: look again no later than the
                    # moment it could become hopeless, so a refusal is not a tick late.
                    soonest = min(soonest, max(MIN_TICK_S, slack / (rounds + 2 + SPARE)))
                    kept.add(waiter)
                    position += 1
                queues = ((key, deque(w for w in queue if w in kept)) for key, queue in line.items())
                self._lines[priority] = _Line((key, queue) for key, queue in queues if queue)
            self._queued = sum(len(q) for line in self._lines.values() for q in line.values())
        self._arm(soonest)

    def _started(self, slot: _Slot, now: float) -> None:
        self._running[slot] = now
        self._holding[slot.priority] += 1

    def _ended(self, slot: _Slot, now: float, outcome: str) -> None:
        """A call left its slot: ``answered`` (measured), ``unanswered`` (timed out or cancelled: a lower bound of
        its latency) or ``failed`` (a provider error: says nothing of how long an answer takes)."""
        started = self._running.pop(slot)
        self._holding[slot.priority] -= 1
        seconds = now - started
        previous = self.latency_s
        if outcome == "answered":
            first = self.measured == 0  # the first answer replaces what only lower bounds suggested
            self.measured += 1
            self.latency_s = seconds if previous is None or first else previous + EWMA_WEIGHT * (seconds - previous)
        elif outcome == "unanswered" and (previous is None or seconds > previous):  # only ever raises it
            self.latency_s = seconds if previous is None else previous + CENSORED_WEIGHT * (seconds - previous)
        self._hand_over()


class _Slot:
    __slots__ = ("_deadline", "_key", "_slots", "priority")

    def __init__(self, slots: Slots, deadline: float, priority: Priority, key: str) -> None:
        self._slots, self._deadline, self.priority, self._key = slots, deadline, priority, key

    async def __aenter__(self) -> None:
        await self._slots._acquire(self._deadline, self.priority, self._key)
        self._slots._started(self, asyncio.get_running_loop().time())

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            outcome = "answered"
        elif issubclass(kind, TimeoutError | asyncio.CancelledError | BackendTimeout):
            outcome = "unanswered"
        else:
            outcome = "failed"
        self._slots._ended(self, asyncio.get_running_loop().time(), outcome)
