"""``PCFJ_CACHE_PER_KEY``: each API key's cache entries (and calls in flight) kept apart, for multi-tenant operators.

The shared cache is what saves calls, and it tells a key what another key's identical item was judged (a cache hit
where it made no call). With this wrapper, a key named ``alice`` reads and writes ``pcfj:t:alice:<key>`` only; the
runner keeps calls in flight apart the same way (``scoped``). Requests without a key (authentication off, or the
operator's own tools) share the plain namespace. The key's hash tag is kept, so Redis Cluster slots do not change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pcfjudge import context
from pcfjudge.cache.flight import Claim, SharedFlight
from pcfjudge.cache.interface import Cache, CacheValue


class PerKeyCache:
    def __init__(self, inner: Cache) -> None:
        self.inner = inner
        self.layer = inner.layer
        self._flight: SharedFlight | None = inner if isinstance(inner, SharedFlight) else None

    @staticmethod
    def scoped(key: str) -> str:
        """``key`` in the calling API key's namespace (unchanged without a key)."""
        name = context.key_name()
        return key if name == context.ANONYMOUS else f"pcfj:t:{name}:{key}"

    async def get_many(self, keys: Sequence[str]) -> list[CacheValue | None]:
        return await self.inner.get_many([self.scoped(k) for k in keys])

    async def set(self, key: str, value: CacheValue, *, fresh: bool = False) -> None:
        await self.inner.set(self.scoped(key), value, fresh=fresh)

    async def claim(self, key: str, deadline: float, *, fresh: bool = False) -> Claim:
        if self._flight is None:
            return Claim()  # no shared cache: the caller proceeds on its own
        return await self._flight.claim(self.scoped(key), deadline, fresh=fresh)

    async def status(self) -> dict[str, Any]:
        return {**await self.inner.status(), "per_key": True}

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:  # ``shared``, ``front``, … of the wrapped cache
        return getattr(self.inner, name)
