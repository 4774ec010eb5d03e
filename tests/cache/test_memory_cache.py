"""The in-process cache (``cache.memory.MemoryCache``, alone and as the front of Redis): entries leave when their TTL
has passed, not only when the entry cap pushes them out (issue 49 row 8: 15,006 front entries still held five minutes
after their 300 s TTL)."""

from __future__ import annotations

from pcfjudge.cache.memory import MemoryCache


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_bursts_entries_leave_once_expired_at_the_next_status_read_or_write() -> None:
    clock = Clock()
    cache = MemoryCache(max_entries=100_000, ttl_seconds=300, clock=clock)
    for i in range(15_000):
        await cache.set(f"burst-{i}", {"i": i})
    clock.now = 200.0
    await cache.set("late", {"i": -1})
    assert (await cache.status())["entries"] == 15_001  # nothing expired yet
    clock.now = 301.0
    assert (await cache.status())["entries"] == 1  # what /readyz reads: the burst has left, the late entry stays
    assert await cache.get_many(["late", "burst-0"]) == [{"i": -1}, None]
    clock.now = 600.0
    await cache.set("next", {"i": 0})
    assert len(cache) == 1  # a write drops the expired too


async def test_a_recently_read_entry_stays_until_its_own_expiry() -> None:
    clock = Clock()
    cache = MemoryCache(ttl_seconds=10, clock=clock)
    await cache.set("a", {"v": 1})
    clock.now = 5.0
    await cache.set("b", {"v": 2})
    assert await cache.get_many(["a"]) == [{"v": 1}]  # read: moved to the recent end
    clock.now = 11.0
    assert await cache.get_many(["a", "b"]) == [None, {"v": 2}]  # a expired (set at 0), b lives until 15
