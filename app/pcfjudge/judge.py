"""The one judging path: ``Judge`` owns the runner, decoding parameters, deadline and quorum of every judgment.

HTTP routes, the eval harness, the benches and every other front door judge through a ``Judge`` (usually
``services.judge``); none of them assembles those pieces itself. A caller that needs another runner (eval's
replaying runner) or deadline takes a copy with ``judge.using(...)``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from pcfjudge.backends.params import decoding_params
from pcfjudge.backends.registry import Registry, ResolvedModel
from pcfjudge.judging.listwise import ListwiseResult, ListwiseTask, RunPlan, judge_listwise, plan_runs
from pcfjudge.judging.pairwise import PairwiseResult, PairwiseTask, PassName, PlannedPass, judge_pairwise, plan_passes
from pcfjudge.judging.runner import CallRunner
from pcfjudge.settings import Settings
from pcfjudge.types import DecodingParams, Usage


@dataclass(frozen=True, slots=True)
class Judge:
    """Judges tasks with the configured backends; ``timeout_s`` bounds all of one task's calls together."""

    settings: Settings
    registry: Registry
    runner: CallRunner
    timeout_s: float

    def using(self, *, runner: CallRunner | None = None, timeout_s: float | None = None) -> Judge:
        """The same judge with another runner (e.g. one that wraps ``self.runner``) or deadline."""
        return replace(self, runner=runner or self.runner, timeout_s=timeout_s or self.timeout_s)

    def model(self, model: str | None) -> ResolvedModel:
        """The backend for a provider:model string (None: the default); ``ModelError`` says how to fix a bad one."""
        return self.registry.resolve(model)

    def params(self, model: ResolvedModel) -> DecodingParams:
        """Decoding parameters for the model's calls (the simulated judge ignores them but they key its cache)."""
        return decoding_params(self.settings, model.provider)

    def plan_listwise(self, task: ListwiseTask) -> RunPlan:
        """The runs ``listwise(task)`` makes, with their cache keys, without making them."""
        model = self.model(task.model)
        return plan_runs(task, model.string, self.params(model))

    def plan_pairwise(self, task: PairwiseTask) -> dict[PassName, PlannedPass]:
        """The passes ``pairwise(task)`` can make, with their cache keys, without making them."""
        model = self.model(task.model)
        return plan_passes(task, model.string, self.params(model))

    async def listwise(self, task: ListwiseTask) -> ListwiseResult:
        """PCFJudge; raises ``JudgingFailed`` (502/503/504) below quorum and ``ModelError`` for a bad model."""
        model = self.model(task.model)
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        return await judge_listwise(
            task, model, self.runner, self.params(model), deadline=deadline, quorum=self.settings.quorum
        )

    async def pairwise(self, task: PairwiseTask) -> PairwiseResult:
        """APOCJudge; raises ``JudgingFailed`` when both orders fail and ``ModelError`` for a bad model."""
        model = self.model(task.model)
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        return await judge_pairwise(task, model, self.runner, self.params(model), deadline=deadline)

    def cost_usd(self, model: str, usage: Usage) -> float | None:
        """What ``usage`` cost at the configured price of ``model`` (PCFJ_PRICES); None when unpriced."""
        return usage.cost_usd(self.settings.prices.get(model))
