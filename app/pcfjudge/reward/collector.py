"""In-process group collection: requests whose samples share a group key wait for each other, then one judgment.

The first member of a key opens a group and starts its timer. The group closes when ``size`` members have arrived
(``full``) or the timer fires (``timeout``: judged with what arrived). Closing starts ONE judging task; every waiter
awaits it through ``asyncio.shield``, so a waiter whose caller has gone (its request task cancelled) leaves the
judgment running for the others, and its member is still judged with its group. A member arriving after its group
closed opens the next one. At shutdown (after the server's graceful drain) members still waiting, or whose group
is still being judged, get a 503 ``shutting_down`` with Retry-After, so their trainers retry elsewhere.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pcfjudge.errors import ShuttingDown
from pcfjudge.reward.scoring import GroupVerdict
from pcfjudge.telemetry import metrics


@dataclass(frozen=True, slots=True)
class NotedVerdict(GroupVerdict):
    """A verdict with a note for its members' rewards (e.g. the group could not be collected as asked)."""

    note: str = ""


def noted(verdict: GroupVerdict, note: str) -> GroupVerdict:
    return NotedVerdict(verdict.model, verdict.outcomes, verdict.usage, note)


def note_of(verdict: GroupVerdict) -> str | None:
    return verdict.note if isinstance(verdict, NotedVerdict) else None


JudgeFn = Callable[[list[str]], Awaitable[GroupVerdict]]
"""Judges the responses of a closed group (duplicates included) as one group."""

Closed = Literal["full", "timeout", "takeover", "fallback"]


@dataclass(slots=True)
class _Open:
    size: int
    judge: JudgeFn
    done: asyncio.Future[GroupVerdict]
    texts: list[str] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None


class LocalCollector:
    """Groups of one process; ``closed`` counts closed groups by why (for tests, metrics and the bench)."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed: Counter[Closed] = Counter()

    def count(self, why: Closed) -> None:
        self.closed[why] += 1
        metrics.REWARD_GROUPS.labels(why).inc()

    def waiting(self) -> int:
        """Members waiting in open groups."""
        return sum(len(g.texts) for g in self._open.values())

    async def collect(self, key: str, texts: Sequence[str], size: int, wait_s: float, judge: JudgeFn) -> GroupVerdict:
        """Add ``texts`` (one request's members of the group ``key``) and return the group's verdict."""
        group = self._open.get(key)
        if group is None:
            loop = asyncio.get_running_loop()
            group = _Open(size, judge, loop.create_future())
            self._open[key] = group
            group.timer = loop.call_later(max(wait_s, 0.0), self._close, key, group, "timeout")
        group.texts.extend(texts)
        if len(group.texts) >= group.size:
            self._close(key, group, "full")
        return await asyncio.shield(group.done)

    def _close(self, key: str, group: _Open, why: Closed) -> None:
        if self._open.get(key) is not group:
            return
        del self._open[key]
        if group.timer is not None:
            group.timer.cancel()
        self.count(why)
        texts = list(group.texts)
        self.spawn(lambda: settle(group.done, group.judge(texts)))

    def spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work()`` in a task this collector keeps (and cancels on ``aclose``); the coroutine is made inside
        the task, so a task cancelled before it starts leaves no coroutine unawaited."""

        async def run() -> None:
            await work()

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """Stop timers and judging tasks (shutdown): their waiters get a 503 to retry elsewhere."""
        for group in self._open.values():
            if group.timer is not None:
                group.timer.cancel()
            fail(group.done, shutting_down())
        self._open.clear()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def fail(done: asyncio.Future[GroupVerdict], exc: BaseException) -> None:
    """Fail ``done`` for its waiters; marked retrieved, since every waiter may have gone already."""
    if not done.done():
        done.set_exception(exc)
        done.exception()


def shutting_down() -> ShuttingDown:
    return ShuttingDown("the service is shutting down; retry (another replica)", retry_after=1)


async def settle(done: asyncio.Future[GroupVerdict], verdict: Awaitable[GroupVerdict]) -> None:
    """Resolve ``done`` with the verdict, or with the exception judging raised (cancellation included)."""
    try:
        result = await verdict
    except asyncio.CancelledError:  # only shutdown cancels a judging task: requests wait through a shield
        fail(done, shutting_down())
        raise
    except Exception as exc:  # a bug in judging: every waiter sees it (a 500), none hangs
        fail(done, exc)
        return
    if not done.done():
        done.set_result(result)
