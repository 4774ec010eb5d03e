"""Memory that returns after a burst: what judgments left behind is let go once the process rests.

A burst of large requests leaves memory behind in two ways. Memo caches fill with what the requests brought (prompt
heads, run plans, consensus, parsed bodies, the simulated judge's draws: each bounded, none of use once its requests
are gone), and the in-process cache holds entries until something reads past their TTL. ``rest_when_idle`` runs for a
served app's life: once no judgment has run for ``PCFJ_REST_AFTER_S`` it empties the memos registered with ``forget``,
drops the expired entries of the caches registered with ``expire``, collects garbage and asks the C allocator to give
its free memory back to the system (``malloc_trim``, on glibc). A memo only saves work: emptying one never changes an
answer, only the cost of the next request's first steps.

What stays is the interpreter's small-object allocator keeping arenas that a few live objects pin; the image runs
with ``PYTHONMALLOC=malloc`` and jemalloc, which return them (docs/operations/safety.md#memory-after-a-burst measures
both, and the cost).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

M = TypeVar("M")


class Expiring(Protocol):
    def sweep(self) -> int:
        """Drop the expired entries; how many."""
        ...


_memos: list[weakref.ref[Any]] = []
_expiring: list[weakref.ref[Expiring]] = []
_busy = 0  # judgments running
_activity = 0  # judgments started or ended, ever


def forget(memo: M) -> M:
    """Register a memo emptied at rest: a ``functools.lru_cache`` function or a collection with ``clear``; returns
    it. Held weakly: a memo that is freed (an app's, in a process that makes many) leaves the list."""
    _memos.append(weakref.ref(memo))
    return memo


def expire(cache: Expiring) -> None:
    """Register a cache whose expired entries are dropped at rest (held weakly)."""
    _expiring.append(weakref.ref(cache))


@contextmanager
def busy() -> Iterator[None]:
    """Around one judgment: the process does not rest while it runs."""
    global _busy, _activity
    _busy += 1
    _activity += 1
    try:
        yield
    finally:
        _busy -= 1
        _activity += 1


def _live(refs: list[weakref.ref[Any]]) -> list[Any]:
    alive = [(ref, ref()) for ref in refs]
    refs[:] = [ref for ref, obj in alive if obj is not None]
    return [obj for _, obj in alive if obj is not None]


def _empty(memo: Any) -> int:
    if hasattr(memo, "cache_clear"):
        size: int = memo.cache_info().currsize
        memo.cache_clear()
        return size
    size = len(memo)
    memo.clear()
    return size


def rest() -> int:
    """Empty the memos, drop expired cache entries and, when that freed anything, collect and trim; how many entries
    were let go."""
    memos: list[Any] = _live(_memos)
    caches: list[Expiring] = _live(_expiring)
    dropped = sum(_empty(memo) for memo in memos) + sum(cache.sweep() for cache in caches)
    if dropped:
        gc.collect()
        _trim()
    return dropped


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS): nothing to ask
        return None
    return trim


_MALLOC_TRIM = _malloc_trim()


def _trim() -> None:
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


async def rest_when_idle(after_s: float) -> None:
    """Rest (``rest``) whenever no judgment has started or ended for ``after_s`` and none is running; each check
    that finds nothing to let go costs a few list walks. Runs until cancelled."""
    seen = -1
    while True:
        await asyncio.sleep(after_s)
        if _busy == 0 and _activity == seen:
            rest()
        seen = _activity
