"""Which calls a batch must make: the judge itself says, through a runner that makes none.

``Probe`` is a ``CallRunner``: it answers a call from the collected batch results or the cache (a hit, exactly as
the service's runner serves one) and records every other call instead of making it, answering it with a failure.
Driving the ordinary judging path (``Judge.listwise`` / ``Judge.pairwise``, or an eval collector) with a judge
that uses it therefore plans every call a live run would make — the same ``Judge.plan_listwise`` /
``plan_pairwise`` cache keys and the same rendered prompts — with no second way of judging. Calls that depend on
answers (APOCJudge's keyed pass, runs an adaptive K asks for after its first wave) appear once the answers they
depend on are collected, so a batch run goes in rounds until the probe records nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.batch.store import Results
from pcfjudge.cache.interface import CacheValue
from pcfjudge.engine.calls import CallOutcome, CallSpec, from_cache
from pcfjudge.engine.progress import Watch
from pcfjudge.engine.runner import CallCache
from pcfjudge.types import CacheMode


@dataclass(frozen=True, slots=True)
class Missing:
    """A call no batch result or cache entry answers: its spec (key, prompt, validation) and model."""

    spec: CallSpec
    model: ResolvedModel


class Probe:
    """Answer from batch results, then the cache; record every other call in ``missing`` (by cache key)."""

    def __init__(self, results: Results, cache: CallCache, *, error: str = "batch_pending", detail: str = "") -> None:
        self.results = results
        self.cache = cache
        self.error = error
        self.detail = detail or "not collected from a batch yet"
        self.missing: dict[str, Missing] = {}

    async def run(
        self, specs: Sequence[CallSpec], model: ResolvedModel, *, watch: Watch, cache_mode: CacheMode = "use"
    ) -> list[CallOutcome]:
        values: list[CacheValue | None] = [self.results.values.get(spec.key) for spec in specs]
        asked = [i for i, value in enumerate(values) if value is None]
        if asked and cache_mode == "use":
            for i, hit in zip(asked, await self.cache.get_many([specs[i].key for i in asked]), strict=True):
                values[i] = hit
        outcomes = []
        for spec, value in zip(specs, values, strict=True):
            outcome = from_cache(spec, value) if value is not None else None
            if outcome is None:
                self.missing.setdefault(spec.key, Missing(spec, model))
                outcome = CallOutcome(error=self.error, detail=self.detail, failure="backend_overloaded")
            outcomes.append(outcome)
        return outcomes
