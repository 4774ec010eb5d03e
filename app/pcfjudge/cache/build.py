"""Pick the cache from settings: the in-process LRU by default, memory in front of Redis with ``PCFJ_REDIS_URL``;
kept apart per API key with ``PCFJ_CACHE_PER_KEY`` (``cache.per_key``)."""

from __future__ import annotations

from pcfjudge.cache.breaker import CircuitBreaker
from pcfjudge.cache.interface import Cache
from pcfjudge.cache.layered import LayeredCache
from pcfjudge.cache.memory import MemoryCache
from pcfjudge.cache.per_key import PerKeyCache
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.cache.redis_client import connect
from pcfjudge.settings import CacheSettings
from pcfjudge.telemetry.hooks import NOOP, Observer


def build_cache(settings: CacheSettings, observer: Observer = NOOP) -> Cache:
    cache = _build(settings, observer)
    if settings.cache_per_key:
        return PerKeyCache(cache)
    return cache


def _build(settings: CacheSettings, observer: Observer) -> Cache:
    if not settings.redis_url:
        return MemoryCache(settings.cache_max_entries, settings.cache_ttl_s, observer=observer)

    client = connect(
        settings.redis_url,
        timeout_s=settings.redis_timeout_s,
        connect_timeout_s=settings.redis_connect_timeout_s,
        max_connections=settings.redis_max_connections,
        pool_timeout_s=settings.redis_pool_timeout_s,
    )
    shared = RedisCache(
        client,
        ttl_s=settings.cache_ttl_s,
        op_timeout_s=settings.redis_timeout_s + settings.redis_connect_timeout_s,
        retries=settings.redis_retries,
        lock_ttl_s=settings.redis_lock_ttl_s,
        breaker=CircuitBreaker(
            settings.redis_breaker_failure_rate,
            settings.redis_breaker_window_s,
            settings.redis_breaker_min_ops,
            settings.redis_breaker_cooldown_s,
        ),
        observer=observer,
    )
    front_ttl = min(settings.cache_front_ttl_s, settings.cache_ttl_s)
    return LayeredCache(MemoryCache(settings.cache_max_entries, front_ttl, observer=observer), shared)
