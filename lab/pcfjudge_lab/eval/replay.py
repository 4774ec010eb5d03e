"""A ``CallRunner`` for the eval harness: answers logged calls from the run log, reports every call as it finishes.

The judge (``Judge.listwise`` / ``Judge.pairwise``) is used unchanged; the harness only gives it this runner, which
wraps the service's. Each call the judge makes is recognised by its cache key among the calls of the judge's own
plan (``Judge.plan_listwise`` / ``plan_pairwise``). A call whose answer is already in the log is served as a cache
hit (no backend call, so a resumed run never pays twice); every other call goes to the wrapped runner on its own,
so each one is logged the moment it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pcfjudge.surface import CacheMode, CallOutcome, CallRunner, CallSpec, ResolvedModel, Watch

from pcfjudge_lab.eval.runlog import PlannedCall, ReplayKey

Report = Callable[[PlannedCall, CallOutcome], None]


class ReplayRunner:
    """Serve logged answers, delegate the rest one call at a time to ``inner``, and report each outcome."""

    def __init__(
        self,
        inner: CallRunner,
        calls: Sequence[PlannedCall],
        replay: Mapping[ReplayKey, dict[str, Any]],
        report: Report,
    ) -> None:
        self.inner = inner
        self.calls = {call.cache_key: call for call in calls}
        if len(self.calls) != len(calls):
            raise ValueError("the plan has two calls with one cache key; the eval cannot tell their runs apart")
        self.replay = replay
        self.report = report

    def planned(self, spec: CallSpec) -> PlannedCall:
        """The planned call ``spec`` makes; a call outside the plan is a bug, never silently logged."""
        call = self.calls.get(spec.key)
        if call is None:
            raise RuntimeError(
                f"the judge made a {spec.call.kind} call (sample {spec.call.sample}, cache key {spec.key}) "
                "that is not in the plan the eval was given (Judge.plan_listwise / plan_pairwise)"
            )
        return call

    async def run(
        self,
        specs: Sequence[CallSpec],
        model: ResolvedModel,
        *,
        watch: Watch,
        cache_mode: CacheMode = "use",
    ) -> list[CallOutcome]:
        planned = [self.planned(spec) for spec in specs]

        async def one(spec: CallSpec, call: PlannedCall) -> CallOutcome:
            answer = self.replay.get(call.replay_key)
            if answer is not None:
                outcome = CallOutcome(answer=answer, cached=True)
            else:
                (outcome,) = await self.inner.run([spec], model, watch=watch, cache_mode=cache_mode)
            self.report(call, outcome)
            return outcome

        return list(await asyncio.gather(*(one(spec, call) for spec, call in zip(specs, planned, strict=True))))
