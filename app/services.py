"""Everything a request needs, built once from settings and closed once: the HTTP app, the eval harness and
batch callers all judge through one ``Services`` (one code path)."""

from __future__ import annotations

from dataclasses import dataclass

from app.backends.base import DecodingParams
from app.backends.params import decoding_params
from app.backends.registry import Registry
from app.cache.base import Cache
from app.cache.build import build_cache
from app.judging.runner import Runner
from app.settings import Settings


@dataclass
class Services:
    settings: Settings
    registry: Registry
    cache: Cache
    runner: Runner

    @classmethod
    def build(cls, settings: Settings) -> Services:
        cache = build_cache(settings)  # in-process LRU; memory in front of Redis with PCFJ_REDIS_URL
        registry = Registry(settings)
        runner = Runner(
            cache,
            max_retries=settings.max_retries,
            retry_base_s=settings.retry_base_s,
            retry_max_s=settings.retry_max_s,
        )
        return cls(settings=settings, registry=registry, cache=cache, runner=runner)

    def decoding_params(self, provider: str) -> DecodingParams:
        """Decoding parameters for a provider's calls (the simulated judge ignores them but they key its cache)."""
        return decoding_params(self.settings, provider)

    async def aclose(self) -> None:
        await self.runner.aclose()
        await self.registry.aclose()
        await self.cache.aclose()
