"""A backend's call slots: its concurrency limit, and admission control in front of it.

``size`` calls (``PCFJ_BACKEND_CONCURRENCY``) run at once per backend and process; at most ``max_queued``
(``PCFJ_MAX_QUEUED_CALLS``) more may wait for a slot, first come first served.

**Latency estimate.** ``estimate_s()`` is the typical call latency: an exponentially weighted mean of the calls
measured here, raised by two kinds of evidence that a call takes *at least* some time, so that it works from the
first request and learns from failures, not only from successes:

* calls still in flight: a running call has taken at least its age, so the estimate is never below the median age
  of the calls running now (in a burst they all started together: the oldest running call's age; a single stuck
  call among fast ones does not count);
* calls that ended without an answer (timed out at their deadline, or cancelled): their time is a lower bound of
  their latency and pulls the mean up (never down).

**Admission.** ``reserve(n, remaining_s)`` admits ``n`` new calls (one per call task the runner starts; released
exactly once when that task ends) or raises ``Saturated`` (a backend error: ``overloaded``, with the time to drain) at once when

* the queue would overflow, or
* the calls could not finish in the request's time left, with 10% to spare: with ``c`` calls already admitted they
  finish after about ``ceil((c + n) / size)`` rounds of the estimate.

An idle backend (nothing admitted) always admits a request whose calls fit in one round: nothing ahead could drain,
and only such a probe can tell that a provider learnt as slow or hung has recovered.

**Shedding.** A call waiting for a slot that can no longer finish before its deadline (given the calls ahead of it
and the estimate) is refused from the queue at once with ``Shed`` (503 ``overloaded``, Retry-After) instead of
waiting for its 504: checked every ``TICK_S`` while calls wait (sooner when a waiter could become hopeless before
then), and again when a slot is about to be handed over. Waiting for a slot happens inside the request's deadline,
and a call cancelled while it waits gives its place up.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque

from pcfjudge.backends.base import BackendError, BackendTimeout

EWMA_WEIGHT = 0.2  # weight of the newest measured call in the latency mean
CENSORED_WEIGHT = 0.5  # weight of a call that ended without an answer after longer than the mean
SPARE = 0.1  # admission and shedding keep this share of a request's time left to spare
TICK_S = 0.1  # how often waiting calls are checked against their deadlines (sooner when one is about to be hopeless)
MIN_TICK_S = 0.005


class Saturated(BackendError):
    """Admission control will not take a request's calls (the queue is full, or they could not finish in time);
    ``retry_after`` is the time the calls ahead need to drain. The runner declines the request with it."""

    kind = "overloaded"
    status = 503


class Shed(BackendError):
    """A call refused from the queue: it could no longer finish before its request's deadline."""

    kind = "overloaded"
    status = 503


class _Waiter:
    __slots__ = ("deadline", "future")

    def __init__(self, future: asyncio.Future[None], deadline: float) -> None:
        self.future, self.deadline = future, deadline


class Slots:
    def __init__(self, size: int, max_queued: int) -> None:
        self.size, self.max_queued = size, max_queued
        self.reserved = 0  # admitted call tasks not finished (running, waiting, or about to wait)
        self.latency_s: float | None = None  # the weighted mean; see ``estimate_s``
        self.measured = 0  # calls that ended with an answer
        self.shed = 0  # calls refused from the queue
        self._free = size
        self._running: dict[_Slot, float] = {}  # start times (loop clock), oldest first
        self._queue: deque[_Waiter] = deque()
        self._ticker: asyncio.TimerHandle | None = None

    # ── admission ────────────────────────────────────────────────────────────────────────────────────────────

    def reserve(self, n: int, remaining_s: float) -> None:
        """Admit ``n`` new calls (``release(n)`` when they end) or raise ``Saturated`` naming why."""
        if n <= 0:
            return
        # With nothing ahead, an overflow could never be cured by retrying: only the deadline can refuse then.
        if self.reserved > 0 and self.reserved + n > self.size + self.max_queued:
            waiting = max(0, self.reserved - self.size)
            raise Saturated(
                f"the judge backend is saturated ({self.reserved} calls admitted, {waiting} waiting; at most "
                f"{self.size} run and {self.max_queued} wait); retry later",
                retry_after=self.drain_s(),
            )
        probe = self.reserved == 0 and n <= self.size
        expected = self.expected_s(n)
        if not probe and expected is not None and expected > remaining_s * (1 - SPARE):
            raise Saturated(
                f"the calls ahead would take about {expected:.1f}s, more than this request's remaining "
                f"{remaining_s:.1f}s allows; retry later",
                retry_after=self.drain_s(),
            )
        self.reserved += n

    def release(self, n: int) -> None:
        """``n`` admitted calls ended (each exactly once)."""
        self.reserved -= n
        if self.reserved < 0:  # a bug in the caller's accounting; never let it admit more than it should
            raise RuntimeError(f"call slots released more than they reserved ({self.reserved})")

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

    def expected_s(self, n: int) -> float | None:
        """Seconds until ``n`` calls admitted now would finish (None before any evidence of the latency)."""
        estimate = self.estimate_s()
        if estimate is None:
            return None
        return math.ceil((self.reserved + n) / self.size) * estimate

    def drain_s(self) -> float:
        """About when a retry may be admitted: the calls admitted now drained (at least 1 s)."""
        return max(1.0, self.expected_s(0) or 1.0)

    # ── slots ────────────────────────────────────────────────────────────────────────────────────────────────

    def slot(self, deadline: float = math.inf) -> _Slot:
        """Hold one of the ``size`` slots for a call (``async with``), waiting in line for it if none is free; raises
        ``Shed`` when the call could no longer finish by ``deadline`` (a loop-clock instant). A plain class rather
        than ``@asynccontextmanager``: this runs for every backend call."""
        return _Slot(self, deadline)

    async def _acquire(self, deadline: float) -> None:
        if self._free > 0 and not self._queue:
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Waiter(future, deadline))
        self._arm()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                self._hand_over()  # granted just as it was cancelled: pass the slot on
            raise

    def _hand_over(self) -> None:
        """A slot is free: give it to the first waiter that can still make its deadline, shedding the rest."""
        now = asyncio.get_running_loop().time()
        estimate = self.estimate_s(now)
        while self._queue:
            waiter = self._queue.popleft()
            if waiter.future.done():  # cancelled while it waited
                continue
            if estimate is not None and now + estimate > waiter.deadline - SPARE * estimate:
                self._shed(waiter, now)
                continue
            waiter.future.set_result(None)
            return
        self._free += 1

    def _shed(self, waiter: _Waiter, now: float) -> None:
        self.shed += 1
        left = max(0.0, waiter.deadline - now)
        waiter.future.set_exception(
            Shed(
                f"the judge backend's queue could not reach this call before the request's deadline ({left:.1f}s "
                "left); retry later",
                retry_after=self.drain_s(),
                retryable=False,
            )
        )

    def _arm(self, delay: float = TICK_S) -> None:
        if self._ticker is None and self._queue:
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
            kept: deque[_Waiter] = deque()
            position = 0
            for waiter in self._queue:
                if waiter.future.done():
                    continue
                rounds, slot = divmod(position, self.size)
                finish = now + frees[slot] + rounds * estimate + estimate
                slack = waiter.deadline - SPARE * estimate - finish
                if slack < 0:
                    self._shed(waiter, now)
                    continue
                # While no call answers, the estimate can grow as fast as the clock (the running calls' age), and
                # this waiter's finish at most (rounds + 2 + SPARE) times as fast: look again no later than the
                # moment it could become hopeless, so a refusal is not a tick late.
                soonest = min(soonest, max(MIN_TICK_S, slack / (rounds + 2 + SPARE)))
                kept.append(waiter)
                position += 1
            self._queue = kept
        self._arm(soonest)

    def _started(self, slot: _Slot, now: float) -> None:
        self._running[slot] = now

    def _ended(self, slot: _Slot, now: float, outcome: str) -> None:
        """A call left its slot: ``answered`` (measured), ``unanswered`` (timed out or cancelled: a lower bound of
        its latency) or ``failed`` (a provider error: says nothing of how long an answer takes)."""
        started = self._running.pop(slot)
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
    __slots__ = ("_deadline", "_slots")

    def __init__(self, slots: Slots, deadline: float) -> None:
        self._slots, self._deadline = slots, deadline

    async def __aenter__(self) -> None:
        await self._slots._acquire(self._deadline)
        self._slots._started(self, asyncio.get_running_loop().time())

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            outcome = "answered"
        elif issubclass(kind, TimeoutError | asyncio.CancelledError | BackendTimeout):
            outcome = "unanswered"
        else:
            outcome = "failed"
        self._slots._ended(self, asyncio.get_running_loop().time(), outcome)
