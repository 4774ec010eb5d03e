"""What every cache offers the service, and the hit/miss/error counters each layer keeps (for metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pcfjudge.telemetry.hooks import Observer

CacheValue = dict[str, Any]

PARSED = "_parsed"
"""A key of in-process cache values only: the answer as the judge decoded it (``runner.CallSpec.decode``), so a hit
is not validated again. Never serialised: the Redis layer stores the other (JSON) fields."""


class Cache(Protocol):
    """A cache of successful backend calls: the in-process LRU, or memory in front of Redis."""

    layer: str

    async def get_many(self, keys: Sequence[str]) -> list[CacheValue | None]: ...

    async def set(self, key: str, value: CacheValue, *, fresh: bool = False) -> None:
        """Store ``value`` for ``key``; ``fresh``: a refresh, replacing a stored answer on purpose (otherwise the
        shared layer counts an answer it finds stored already as a call made twice)."""
        ...

    async def status(self) -> dict[str, Any]:
        """What ``/readyz`` shows: layer, ``ok`` or ``degraded``, and (with Redis) the breaker state."""
        ...

    async def aclose(self) -> None: ...


@dataclass(slots=True)
class LayerStats:
    """Key lookups of one layer: ``errors`` are lookups the layer could not answer (Redis down or skipped)."""

    hits: int = 0
    misses: int = 0
    errors: int = 0

    def record(self, observer: Observer, layer: str, *, hits: int = 0, misses: int = 0, errors: int = 0) -> None:
        self.hits, self.misses, self.errors = self.hits + hits, self.misses + misses, self.errors + errors
        for result, n in (("hit", hits), ("miss", misses), ("error", errors)):
            if n:
                observer.cache_lookup(layer, result, n)
