"""Everything a request needs, built once from settings and closed once: the HTTP app, the eval harness, the
benches and every other front door judge through its ``judge`` (one code path)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pcfjudge.backends.registry import Registry
from pcfjudge.cache.build import build_cache
from pcfjudge.cache.interface import Cache
from pcfjudge.cache.job_record import JobStore
from pcfjudge.cache.job_store import MemoryJobStore, open_job_store
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.cache.reliability_store import Refresher, ReliabilityStore, open_store
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.runner import Runner
from pcfjudge.judging.drift import MEASURES
from pcfjudge.judging.reliability import Book, Reliability
from pcfjudge.reward.rewards import Rewards
from pcfjudge.security.api_keys import KeyRing
from pcfjudge.security.guard import Guard
from pcfjudge.security.limiter import Limiter, MemoryLimiter, RedisLimiter
from pcfjudge.settings import Settings
from pcfjudge.telemetry import metrics as gauges
from pcfjudge.telemetry.metrics import Metrics

log = logging.getLogger(__name__)


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
    reliability: Book = field(default_factory=Book)  # calibration records (pcfjudge calibrate), kept fresh by:
    calibration: Refresher | None = None  # started with the app (``start``), reloading from the store
    jobs: JobStore = field(default_factory=MemoryJobStore)  # jobs (docs/api/jobs.md): where the quotas are

    @classmethod
    def build(cls, settings: Settings) -> Services:
        metrics = Metrics(known_models(settings))
        cache = build_cache(settings.cache, metrics)  # in-process LRU; memory in front of Redis with PCFJ_REDIS_URL
        shared = redis_layer(cache)
        registry = Registry(settings, shared=shared)  # fleets' rate budgets: in Redis with the cache, for every replica
        metrics.known_models.update(registry.fleet_models())  # each fleet labelled by its name (fleet:<model_name>)
        runner = Runner(
            cache,
            max_retries=settings.fanout.max_retries,
            retry_base_s=settings.fanout.retry_base_s,
            retry_max_s=settings.fanout.retry_max_s,
            observer=metrics,
        )
        # Quotas live where the cache does: in Redis shared by the replicas (memory while it is down), else in memory.
        limiter: Limiter = RedisLimiter(shared) if shared is not None else MemoryLimiter()
        guard = Guard(settings.access, settings.model_allowlist(), limiter)
        book = Book()
        judge = Judge(
            settings, registry, runner, settings.fanout.request_timeout_s, guard, reliability=book, observer=metrics
        )
        store: ReliabilityStore = open_store(settings)  # Redis with PCFJ_REDIS_URL, else the calibration file
        refresher = Refresher(
            store, lambda rows: load_reliability(book, rows), settings.calibration.calibration_refresh_s
        )
        return cls(
            settings=settings,
            registry=registry,
            cache=cache,
            runner=runner,
            metrics=metrics,
            judge=judge,
            keys=KeyRing.from_settings(settings.access),
            limiter=limiter,
            reliability=book,
            calibration=refresher,
            jobs=open_job_store(shared, settings.jobs.max_job_store_bytes),
        )

    @cached_property
    def rewards(self) -> Rewards:
        """RL reward groups (collected across requests; across replicas with Redis): built with the first one."""
        return Rewards.build(self.settings.cache, self.judge)

    async def start(self) -> None:
        """Connect to Redis (warming its pool; in the background until it answers), load the calibration records,
        then reload them every PCFJ_CALIBRATION_REFRESH_S (the app's lifespan)."""
        shared = redis_layer(self.cache)
        if shared is not None:
            await shared.start(self.settings.cache.redis_warm_connections)
        if self.calibration is not None:
            await self.calibration.start()

    def unready(self) -> str | None:
        """Why this replica should get no traffic yet (``/readyz`` answers 503), or None: ready. With Redis, until it
        first answered: a burst sent before would find no shared single flight. A later outage does not make the
        replica unready: it fails open (each replica calls on its own) rather than leave the balancer nobody."""
        shared = redis_layer(self.cache)
        if shared is not None and not shared.connected:
            return f"waiting for Redis (PCFJ_REDIS_URL) to answer: {shared.last_error or 'connecting'}"
        return None

    async def aclose(self) -> None:
        """Stop the calibration reloads; close the reward collectors, runner, backends and cache, in that order."""
        if self.calibration is not None:
            await self.calibration.aclose()
        if "rewards" in self.__dict__:  # built
            await self.rewards.aclose()
        await self.runner.aclose()
        await self.registry.aclose()
        await self.cache.aclose()


def redis_layer(cache: Cache) -> RedisCache | None:
    """The cache's Redis layer (memory in front of Redis, with PCFJ_REDIS_URL), or None."""
    shared = getattr(cache, "shared", None)
    if shared is None:
        return None
    return shared if isinstance(shared, RedisCache) else None


def known_models(settings: Settings) -> list[str]:
    """Model strings that get their own metrics label (from configuration; anything else is "other")."""
    return [
        settings.resolved_default_model(),
        "sim:default",
        "sim:oracle",
        f"openai:{settings.models.openai_default_model}",
        f"anthropic:{settings.models.anthropic_default_model}",
        *settings.metrics.metrics_models,
        *(juror for jurors in settings.jury.juries.values() for juror in jurors),
    ]


def load_reliability(book: Book, rows: list[dict[str, Any]]) -> None:
    """Put the stored records in ``book`` (a malformed one is skipped, and logged) and set the calibration gauges."""
    records = []
    for row in rows:
        try:
            records.append(Reliability.from_dict(row))
        except (TypeError, ValueError, KeyError) as exc:
            log.warning("skipping a malformed calibration record (%s: %s)", type(exc).__name__, exc)
    book.replace(records)
    gauges.judge_reliability(
        (r.model, r.prompt_version, r.accuracy, r.order_consistency, r.first_position_win_rate, _drift(r))
        for r in book.records.values()
    )


def _drift(record: Reliability) -> Mapping[str, tuple[bool, float | None]]:
    shifts = {s.measure: (s.drift, s.p_value) for s in record.drift}
    return {m: shifts.get(m, (False, None)) for m in MEASURES}
