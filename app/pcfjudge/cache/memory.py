"""In-process cache: a bounded LRU with a TTL per entry. The embedded default when no Redis is configured."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from pcfjudge import at_rest
from pcfjudge.cache.interface import CacheValue, LayerStats
from pcfjudge.telemetry.hooks import NOOP, Observer

__all__ = ["CacheValue", "MemoryCache"]


class MemoryCache:
    """Bounded LRU with TTL; values are JSON-like dicts (never failed runs)."""

    layer = "memory"

    def __init__(
        self,
        max_entries: int = 100_000,
        ttl_seconds: float = 7 * 86400,
        clock: Callable[[], float] = time.monotonic,
        observer: Observer = NOOP,
    ) -> None:
        self.max_entries = max_entries
        self.ttl = ttl_seconds
        self._clock = clock
        self._data: OrderedDict[str, tuple[float, CacheValue]] = OrderedDict()
        self.observer = observer
        self.stats = LayerStats()
        at_rest.expire(self)  # a process at rest drops the expired entries nothing has read since

    def __len__(self) -> int:
        return len(self._data)

    def expire(self, now: float) -> None:
        """Drop the expired entries at the least recently used end: every read, write and status (``/readyz``) does,
        so a burst's entries leave once their TTL has passed, not only when the entry cap pushes them out. Amortised:
        each entry is dropped once, and the walk stops at the first live one."""
        data = self._data
        while data:
            key = next(iter(data))
            if data[key][0] > now:
                return
            del data[key]

    def sweep(self) -> int:
        """``expire`` now; how many entries it dropped."""
        before = len(self._data)
        self.expire(self._clock())
        return before - len(self._data)

    async def get_many(self, keys: Sequence[str]) -> list[CacheValue | None]:
        now = self._clock()
        self.expire(now)
        out: list[CacheValue | None] = []
        for key in keys:
            hit = self._data.get(key)
            if hit is None or hit[0] <= now:
                if hit is not None:
                    del self._data[key]
                out.append(None)
                continue
            self._data.move_to_end(key)
            out.append(hit[1])
        hits = sum(v is not None for v in out)
        self.stats.record(self.observer, self.layer, hits=hits, misses=len(out) - hits)
        return out

    async def set(self, key: str, value: CacheValue, *, fresh: bool = False) -> None:
        now = self._clock()
        self.expire(now)
        self._data[key] = (now + self.ttl, value)
        self._data.move_to_end(key)
        while len(self._data) > self.max_entries:
            self._data.popitem(last=False)

    async def delete(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._data.pop(key, None)

    async def status(self) -> dict[str, Any]:
        self.expire(self._clock())
        return {"layer": self.layer, "status": "ok", "entries": len(self._data)}

    async def aclose(self) -> None:
        self._data.clear()
