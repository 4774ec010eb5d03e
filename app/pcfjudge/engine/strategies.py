"""How a plan judges: one object per strategy, each running its own calls for one model or a jury, so ``Judge.run``
charges, runs and settles a plan without asking what it is.

=========  ============================================================  =========================================
strategy   what it runs                                                  a jury
=========  ============================================================  =========================================
Prompt     one listwise prompt over K orders (× executions)              each juror's runs, pooled (``jury_runs``)
Windows    rounds of windows fitted onto one scale (past one prompt)     each juror's rounds, pooled
Pairwise   APOCJudge's passes: both orders, the keyed pass where it may  each juror's passes, pooled
Chat       a caller's own judge prompt in each order of its candidates   every juror in every order
=========  ============================================================  =========================================

Which strategy a task gets is decided once, when it is planned (``Judge.plan``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol

from pcfjudge.backends.registry import Jury, ResolvedModel
from pcfjudge.engine.chat_runs import judge_chat
from pcfjudge.engine.chat_values import ChatResult, ChatTask
from pcfjudge.engine.jury_runs import judge_jurors, judge_jury_listwise, pool_pairwise, pool_windows
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask, RunPlan, judge_listwise
from pcfjudge.engine.pairwise_passes import PairwiseResult, PairwiseTask, judge_pairwise
from pcfjudge.engine.progress import Watch
from pcfjudge.engine.runner import CallRunner
from pcfjudge.engine.window_runs import judge_windows
from pcfjudge.judging import reliability
from pcfjudge.settings import Settings
from pcfjudge.types import DecodingParams


class Planned(Protocol):
    """What a strategy reads of its plan (``engine.plan.Plan``)."""

    @property
    def task(self) -> Any: ...
    @property
    def jurors(self) -> tuple[ResolvedModel, ...]: ...
    @property
    def jury(self) -> Jury | None: ...
    @property
    def runs(self) -> RunPlan | None: ...
    @property
    def model(self) -> str: ...


class Executor(Protocol):
    """What a strategy runs its calls with (``engine.judge.Judge``)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def runner(self) -> CallRunner: ...
    @property
    def reliability(self) -> reliability.Book: ...
    def params(self, model: ResolvedModel) -> DecodingParams: ...


@dataclass(frozen=True, slots=True)
class Prompt:
    name: ClassVar[str] = "prompt"

    async def run(self, ex: Executor, plan: Planned, watch: Watch) -> ListwiseResult:
        task: ListwiseTask = plan.task
        s = ex.settings
        if plan.jury is None:
            model = plan.jurors[0]
            return await judge_listwise(
                task, model, ex.runner, ex.params(model), watch=watch, quorum=s.fanout.quorum,
                price=s.prompting.prices.get(model.string), plan=plan.runs, min_runs=s.fanout.deadline_min_runs,
            )  # fmt: skip
        prices = [s.prompting.prices.get(m.string) for m in plan.jurors]
        known = [p for p in prices if p is not None]
        dearest = max(known, key=lambda p: p[0] + p[1]) if len(known) == len(prices) else None
        return await judge_jury_listwise(
            task, plan.jury, ex.runner, [ex.params(m) for m in plan.jurors], watch=watch, quorum=s.fanout.quorum,
            jury_quorum=s.jury.jury_quorum, price=dearest, book=ex.reliability, min_runs=s.fanout.deadline_min_runs,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Windows:
    window: int  # the most candidates one call shows
    name: ClassVar[str] = "windows"

    async def run(self, ex: Executor, plan: Planned, watch: Watch) -> ListwiseResult:
        task: ListwiseTask = plan.task
        s = ex.settings

        async def windows(m: ResolvedModel, t: ListwiseTask = task) -> ListwiseResult:
            return await judge_windows(
                t, m, ex.runner, ex.params(m), window=self.window, watch=watch, quorum=s.fanout.quorum,
                min_runs=s.fanout.deadline_min_runs,
            )  # fmt: skip

        if plan.jury is None:
            return await windows(plan.jurors[0])
        outcomes = await judge_jurors(plan.jury, lambda m: windows(m, replace(task, model=None)), watch)
        return pool_windows(task, plan.jury, outcomes, s.jury.jury_quorum, ex.reliability)


@dataclass(frozen=True, slots=True)
class Pairwise:
    name: ClassVar[str] = "pairwise"

    async def run(self, ex: Executor, plan: Planned, watch: Watch) -> PairwiseResult:
        task: PairwiseTask = plan.task
        if plan.jury is None:
            model = plan.jurors[0]
            return await judge_pairwise(task, model, ex.runner, ex.params(model), watch=watch)
        outcomes = await judge_jurors(
            plan.jury,
            lambda m: judge_pairwise(replace(task, model=m), m, ex.runner, ex.params(m), watch=watch),
            watch,
        )
        return pool_pairwise(plan.jury, outcomes, ex.settings.jury.jury_quorum, ex.reliability)


@dataclass(frozen=True, slots=True)
class Chat:
    name: ClassVar[str] = "chat"

    async def run(self, ex: Executor, plan: Planned, watch: Watch) -> ChatResult:
        task: ChatTask = plan.task
        params = [ex.params(m) for m in plan.jurors]
        return await judge_chat(task, plan.jurors, ex.runner, params, watch, plan.model)


Strategy = Prompt | Windows | Pairwise | Chat
