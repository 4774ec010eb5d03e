"""Memory in front of Redis: a memory hit costs no round trip; a Redis hit fills memory; writes go to both.

The memory layer keeps entries for ``front_ttl`` only (``PCFJ_CACHE_FRONT_TTL_S``), so an entry another replica
refreshed reaches this replica's memory within that time; Redis keeps them for the full cache TTL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pcfjudge.cache.flight import Claim
from pcfjudge.cache.interface import CacheValue
from pcfjudge.cache.memory import MemoryCache
from pcfjudge.cache.redis_cache import RedisCache


class LayeredCache:
    layer = "redis+memory"

    def __init__(self, front: MemoryCache, shared: RedisCache) -> None:
        self.front = front
        self.shared = shared

    def __len__(self) -> int:
        return len(self.front)

    async def get_many(self, keys: Sequence[str]) -> list[CacheValue | None]:
        out = await self.front.get_many(keys)
        missing = [i for i, value in enumerate(out) if value is None]
        if missing:
            found = await self.shared.get_many([keys[i] for i in missing])
            for i, value in zip(missing, found, strict=True):
                if value is not None:
                    out[i] = value
                    await self.front.set(keys[i], value)
        return out

    async def set(self, key: str, value: CacheValue, *, fresh: bool = False) -> None:
        await self.front.set(key, value)
        await self.shared.set(key, value, fresh=fresh)

    async def claim(self, key: str, deadline: float, *, fresh: bool = False) -> Claim:
        claim = await self.shared.claim(key, deadline, fresh=fresh)
        if claim.value is not None:
            await self.front.set(key, claim.value)
        return claim

    async def status(self) -> dict[str, Any]:
        shared = await self.shared.status()
        front = await self.front.status()  # drops the front's expired entries too
        return {**shared, "layer": self.layer, "entries": front["entries"]}

    async def aclose(self) -> None:
        await self.front.aclose()
        await self.shared.aclose()
