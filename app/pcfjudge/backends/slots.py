"""A backend's call slots: its concurrency limit, and admission control in front of it.

``size`` calls (``PCFJ_BACKEND_CONCURRENCY``) run at once per backend and process; at most ``max_queued``
(``PCFJ_MAX_QUEUED_CALLS``) more may wait for a slot. ``reserve(n, remaining_s)`` admits ``n`` new calls or raises
``Refusal`` (503 ``overloaded`` with Retry-After) at once when

* the queue would overflow, or
* the calls could not finish before the request's deadline: with ``c`` calls already reserved, the new ones finish
  after about ``ceil((c + n) / size)`` rounds of the typical call latency (an exponentially weighted mean of the
  calls measured here), and that is more than the time the request has left.

An idle backend admits a request larger than its queue (nothing ahead could drain, so retrying could never cure
that refusal); the deadline check still applies.

Waiting for a slot happens inside the request's deadline (``async with slots`` is entered under the call's
timeout by the runner), and a call cancelled while it waits gives its place up.
"""

from __future__ import annotations

import asyncio
import math
import time

from pcfjudge.refusal import Refusal

EWMA_WEIGHT = 0.2  # weight of the newest call in the latency mean


class Slots:
    def __init__(self, size: int, max_queued: int) -> None:
        self.size, self.max_queued = size, max_queued
        self.reserved = 0  # admitted calls not finished (running + waiting)
        self.latency_s: float | None = None  # typical call latency, once one has been measured
        self._semaphore = asyncio.Semaphore(size)

    def reserve(self, n: int, remaining_s: float) -> None:
        """Admit ``n`` new calls (``release(n)`` when they end) or raise a 503 ``Refusal`` naming why."""
        if n <= 0:
            return
        # With nothing ahead, an overflow could never be cured by retrying: only the deadline can refuse then.
        if self.reserved > 0 and self.reserved + n > self.size + self.max_queued:
            waiting = max(0, self.reserved - self.size)
            raise Refusal(
                503,
                "overloaded",
                f"the judge backend is saturated ({self.reserved} calls admitted, {waiting} waiting; at most "
                f"{self.size} run and {self.max_queued} wait); retry later",
                retry_after=self._drain_s(),
            )
        expected = self.expected_s(n)
        if expected is not None and expected > remaining_s:
            raise Refusal(
                503,
                "overloaded",
                f"the queue ahead would take about {expected:.1f}s, more than this request's remaining "
                f"{remaining_s:.1f}s; retry later",
                retry_after=self._drain_s(),
            )
        self.reserved += n

    def release(self, n: int) -> None:
        self.reserved = max(0, self.reserved - n)

    def expected_s(self, n: int) -> float | None:
        """Seconds until ``n`` calls admitted now would finish, from the measured latency (None before any)."""
        if self.latency_s is None:
            return None
        return math.ceil((self.reserved + n) / self.size) * self.latency_s

    def _drain_s(self) -> float:
        return max(1.0, self.expected_s(0) or 1.0)

    def slot(self) -> _Slot:
        """Hold one of the ``size`` slots for a call (``async with``); a call that ends normally updates the latency
        mean. A plain class rather than ``@asynccontextmanager``: this runs for every backend call."""
        return _Slot(self)

    def _measured(self, seconds: float) -> None:
        previous = self.latency_s
        self.latency_s = seconds if previous is None else previous + EWMA_WEIGHT * (seconds - previous)


class _Slot:
    __slots__ = ("_slots", "_started")

    def __init__(self, slots: Slots) -> None:
        self._slots = slots
        self._started = 0.0

    async def __aenter__(self) -> None:
        await self._slots._semaphore.acquire()
        self._started = time.perf_counter()

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._slots._semaphore.release()
        if kind is None:
            self._slots._measured(time.perf_counter() - self._started)
