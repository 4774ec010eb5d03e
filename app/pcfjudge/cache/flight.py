"""Single flight across replicas: the interface the runner uses before a backend call (Redis implements it).

``claim(key, deadline)`` either hands the caller a lease (it makes the call, stores the answer, then releases), or
another replica's answer for the key, or neither: the shared cache is unavailable (``alone``), so the caller proceeds
on its own (identical calls within the process still share one task: the runner's in-process single flight).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pcfjudge.cache.interface import CacheValue


class Lease(Protocol):
    async def release(self) -> None:
        """Give the key back (after storing the answer, if any): waiters take the answer, or one takes over."""
        ...


@dataclass(slots=True)
class Claim:
    value: CacheValue | None = None  # another replica's answer: use it, make no call
    lease: Lease | None = None  # this caller makes the call
    alone: bool = False  # the shared flight was unavailable (Redis failed, or its breaker is open): no lock either

    async def release(self) -> None:
        if self.lease is not None:
            await self.lease.release()


@runtime_checkable
class SharedFlight(Protocol):
    async def claim(self, key: str, deadline: float, *, fresh: bool = False) -> Claim:
        """Lock ``key`` or wait (until ``deadline``, a ``loop.time()`` instant) for the holder's answer.

        ``fresh`` (cache mode "refresh"): never take a stored answer and never wait; lock the key only if it is free.
        """
        ...
