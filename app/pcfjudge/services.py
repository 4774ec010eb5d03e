"""Everything a request needs, built once from settings and closed once: the HTTP app, the eval harness, the
benches and every other front door judge through its ``judge`` (one code path)."""

from __future__ import annotations

from dataclasses import dataclass

from pcfjudge.backends.registry import Registry
from pcfjudge.cache.build import build_cache
from pcfjudge.cache.interface import Cache
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.runner import Runner
from pcfjudge.reward.rewards import Rewards
from pcfjudge.security.api_keys import KeyRing
from pcfjudge.security.guard import Guard
from pcfjudge.security.limiter import Limiter, MemoryLimiter, RedisLimiter
from pcfjudge.settings import Settings
from pcfjudge.telemetry.metrics import Metrics


@dataclass
class Services:
    settings: Settings
    registry: Registry
    cache: Cache
    runner: Runner
    metrics: Metrics
    judge: Judge
    keys: KeyRing
    limiter: Limiter
    rewards: Rewards  # RL reward groups (collected across requests; across replicas with Redis)

    @classmethod
    def build(cls, settings: Settings) -> Services:
        metrics = Metrics(known_models(settings))
        cache = build_cache(settings, metrics)  # in-process LRU; memory in front of Redis with PCFJ_REDIS_URL
        registry = Registry(settings)
        runner = Runner(
            cache,
            max_retries=settings.max_retries,
            retry_base_s=settings.retry_base_s,
            retry_max_s=settings.retry_max_s,
            observer=metrics,
        )
        # Quotas live where the cache does: in Redis shared by the replicas (memory while it is down), else in memory.
        shared = getattr(cache, "shared", None)
        limiter: Limiter = RedisLimiter(shared) if isinstance(shared, RedisCache) else MemoryLimiter()
        guard = Guard(settings, limiter)
        judge = Judge(settings, registry, runner, settings.request_timeout_s, guard)
        return cls(
            settings=settings,
            registry=registry,
            cache=cache,
            runner=runner,
            metrics=metrics,
            judge=judge,
            keys=KeyRing.from_settings(settings),
            limiter=limiter,
            rewards=Rewards.build(settings, judge),
        )

    async def aclose(self) -> None:
        """Close the reward collectors, runner, backends and cache, in that order."""
        await self.rewards.aclose()
        await self.runner.aclose()
        await self.registry.aclose()
        await self.cache.aclose()


def known_models(settings: Settings) -> list[str]:
    """Model strings that get their own metrics label (from configuration; anything else is "other")."""
    return [
        settings.resolved_default_model(),
        "sim:default",
        "sim:oracle",
        f"openai:{settings.openai_default_model}",
        f"anthropic:{settings.anthropic_default_model}",
        *settings.metrics_models,
    ]
