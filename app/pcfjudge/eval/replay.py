"""A ``Runner`` for the eval harness: answers logged calls from the run log, reports every call as it finishes.

The judging code (``judge_listwise``, the pairwise judge) is used unchanged; only its runner is wrapped. A call
whose answer is already in the log is served as a cache hit (no backend call, so a resumed run never pays
twice); every other call goes to the service's runner on its own, so each one is logged the moment it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.eval.runlog import ReplayKey, RunKey
from pcfjudge.judging.runner import CallOutcome, CallRunner, CallSpec
from pcfjudge.types import CacheMode


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """What the harness knows about one backend call: its log key and its replay key."""

    key: RunKey
    replay_key: ReplayKey
    order: tuple[str, ...]
    sample: int


Identify = Callable[[int, CallSpec], PlannedCall]
Report = Callable[[PlannedCall, CallOutcome], None]


class ReplayRunner(Runner):
    """Serve logged answers, delegate the rest one call at a time, and report each outcome when it is known."""

    def __init__(
        self, inner: Runner, identify: Identify, replay: Mapping[ReplayKey, dict[str, Any]], report: Report
    ) -> None:
        super().__init__(inner.cache, max_retries=inner.max_retries, observer=inner.observer)
        self.inner = inner
        self.identify = identify
        self.replay = replay
        self.report = report

    async def run(
        self,
        specs: Sequence[CallSpec],
        model: ResolvedModel,
        *,
        deadline: float,
        cache_mode: CacheMode = "use",
    ) -> list[CallOutcome]:
        planned = [self.identify(i, spec) for i, spec in enumerate(specs)]

        async def one(spec: CallSpec, call: PlannedCall) -> CallOutcome:
            answer = self.replay.get(call.replay_key)
            if answer is not None:
                outcome = CallOutcome(answer=answer, cached=True)
            else:
                (outcome,) = await self.inner.run([spec], model, deadline=deadline, cache_mode=cache_mode)
            self.report(call, outcome)
            return outcome

        return list(await asyncio.gather(*(one(spec, call) for spec, call in zip(specs, planned, strict=True))))
