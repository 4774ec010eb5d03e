"""The one judging path: ``Judge`` owns the runner, decoding parameters, deadline and quorum of every judgment.

HTTP routes, the eval harness, the benches and every other front door judge through a ``Judge`` (usually
``services.judge``); none of them assembles those pieces itself. A caller that needs another runner (eval's
replaying runner) or deadline takes a copy with ``judge.using(...)``.

Its ``guard`` (see ``pcfjudge.security.guard``) checks every judgment before it spends: the model allowlist, the
per-request call and token caps, and the calling key's call quota. The operator's own tools (eval) judge
``unguarded()``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol, TypeVar

from pcfjudge import context
from pcfjudge.backends.params import decoding_params
from pcfjudge.backends.registry import Jury, ModelError, Registry, ResolvedModel
from pcfjudge.engine import progress, spend
from pcfjudge.engine.judgment_spans import traced
from pcfjudge.engine.jury_runs import judge_jurors, judge_jury_listwise, pool_pairwise, pool_windows
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask, RunPlan, judge_listwise, plan_runs
from pcfjudge.engine.pairwise_passes import (
    PairwiseResult,
    PairwiseTask,
    PassName,
    PlannedPass,
    judge_pairwise,
    plan_passes,
)
from pcfjudge.engine.runner import CallRunner
from pcfjudge.engine.window_runs import judge_windows, window_spec
from pcfjudge.errors import Refusal
from pcfjudge.judging import reliability
from pcfjudge.judging.prompts import PromptStyle, listwise_version
from pcfjudge.judging.window_rounds import budget_calls, least_calls
from pcfjudge.security.guard import Guard
from pcfjudge.settings import Settings
from pcfjudge.types import DecodingParams, Usage


class _Spent(Protocol):
    backend_calls: int
    cache_hits: int
    usage: Usage
    cost_usd: float | None


R = TypeVar("R", bound=_Spent)
Door = Literal["listwise", "pairwise", "rerank", "reward"]
RATIONALES_BY_DOOR: dict[Door, bool] = {"listwise": True, "pairwise": True, "rerank": False, "reward": False}


def prompt_style(settings: Settings, rationales: bool | None, door: Door) -> PromptStyle:
    """See ``Judge.style``; the eval harness asks it too, so its runs use the prompts the service would."""
    if rationales is None:
        rationales = settings.rationales
    if rationales is None:
        rationales = RATIONALES_BY_DOOR[door]
    return PromptStyle(settings.prompts, rationales or settings.prompts == "v1")


"""Whether a front door asks for rationales when neither the request nor PCFJ_RATIONALES says."""


@dataclass(frozen=True, slots=True)
class Judge:
    """Judges tasks with the configured backends; ``timeout_s`` bounds all of one task's calls together."""

    settings: Settings
    registry: Registry
    runner: CallRunner
    timeout_s: float
    guard: Guard | None = None
    reliability: reliability.Book = field(default_factory=reliability.Book)  # calibration records (jury weights)

    def using(self, *, runner: CallRunner | None = None, timeout_s: float | None = None) -> Judge:
        """The same judge with another runner (e.g. one that wraps ``self.runner``) or deadline."""
        return replace(self, runner=runner or self.runner, timeout_s=timeout_s or self.timeout_s)

    def _deadline(self) -> float:
        """When all of a judgment's calls must be done: ``timeout_s`` from now, or a job's time left."""
        return asyncio.get_running_loop().time() + (progress.work_timeout() or self.timeout_s)

    def unguarded(self) -> Judge:
        """The same judge without allowlist, caps or quotas (for the operator's own tools, e.g. eval)."""
        return replace(self, guard=None)

    def resolve(self, spec: str | Sequence[str] | None) -> ResolvedModel | Jury:
        """A request's ``model``: one provider:model, a PCFJ_JURIES name, or a list of models (a jury; a string
        of comma-separated models reads as that list). ``ModelError`` says how to fix a bad one."""
        if isinstance(spec, str) and spec in self.settings.juries:
            return self._jury(spec, self.settings.juries[spec])
        if isinstance(spec, str) and "," in spec:
            spec = [m.strip() for m in spec.split(",")]
        if spec is None or isinstance(spec, str):
            return self.registry.resolve(spec)
        if not spec:
            raise ModelError("a jury needs at least one model; send a model string or a list of provider:model")
        return self._jury(",".join(spec), list(spec))

    def _jury(self, name: str, models: list[str]) -> Jury:
        repeated = sorted({m for m in models if models.count(m) > 1})
        if repeated:
            raise ModelError(f"a jury's models must be distinct; repeated: {', '.join(repeated)}")
        if len(models) > self.settings.max_jurors:
            raise ModelError(
                f"a jury has at most {self.settings.max_jurors} jurors (PCFJ_MAX_JURORS); got {len(models)}"
            )
        jurors = tuple(self.registry.resolve(m) for m in models)
        version = listwise_version(None, self.style(None, "listwise"))
        if self.settings.jury_weights == "calibrated":
            weights, calibrated = reliability.jury_weights([self.reliability.get(m.string, version) for m in jurors])
        else:
            weights, calibrated = [1.0 / len(jurors)] * len(jurors), False
        return Jury(name, jurors, tuple(weights), calibrated, version)

    def _target(self, model: ResolvedModel | Jury | str | None) -> ResolvedModel | Jury:
        """A task's model as resolved by its front door, or resolved here (a string may name a jury)."""
        return model if isinstance(model, ResolvedModel | Jury) else self.resolve(model)

    def model(self, model: ResolvedModel | Jury | str | None) -> ResolvedModel:
        """The backend for a provider:model string (None: the default); ``ModelError`` says how to fix a bad one.

        A front door resolves its request's model once (to refuse a bad one with a 422 naming the field) and puts
        the ``ResolvedModel`` in the task, which is taken as it is; a string is resolved here (in-process callers,
        and reward groups, whose model crosses replicas as text). A jury has no one model: ``ModelError``."""
        if isinstance(model, Jury):
            raise ModelError(f"{model.name} is a jury: plan or resolve each of its jurors")
        return model if isinstance(model, ResolvedModel) else self.registry.resolve(model)

    def style(self, rationales: bool | None, door: Door) -> PromptStyle:
        """The prompt style of a request at ``door``: the request's ``rationales``, else PCFJ_RATIONALES, else the
        door's default; the family is PCFJ_PROMPTS (v1 always asks for rationales)."""
        return prompt_style(self.settings, rationales, door)

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

    @traced("listwise")
    async def listwise(self, task: ListwiseTask) -> ListwiseResult:
        """PCFJudge; raises ``JudgingFailed`` (502/503/504) below quorum, ``ModelError`` for a bad model and
        ``Refusal`` when the guard or admission control declines."""
        target = self._target(task.model)
        if isinstance(target, Jury):
            return await self._jury_listwise(replace(task, model=target), target)
        model = target
        params = self.params(model)
        if len(task.ids) > self.settings.max_candidates:
            return await self._windows(task, model, params)
        plan = plan_runs(task, model.string, params)
        calls = len(plan.runs)
        if task.budget is not None:
            calls = task.budget.cap(calls)
        deadline = self._deadline()
        quorum, price = self.settings.quorum, self.settings.prices.get(model.string)
        return await self._spend(
            model.string,
            price,
            calls,
            [task.question, *task.texts],
            "k",
            lambda: judge_listwise(
                task,
                model,
                self.runner,
                params,
                deadline=deadline,
                quorum=quorum,
                price=price,
                plan=plan,
                min_runs=self.settings.deadline_min_runs,
            ),
        )

    async def _windows(self, task: ListwiseTask, model: ResolvedModel, params: DecodingParams) -> ListwiseResult:
        """More candidates than one window (PCFJ_MAX_CANDIDATES): rounds of windows fitted onto one scale; the
        guard checks the budget of every round the judgment may take before the first call."""
        window, n = self.settings.max_candidates, len(task.ids)
        spec = window_spec(task, window)
        calls, least = budget_calls(n, window, spec.rounds, spec.max_calls), least_calls(n, window)
        if calls < least:  # front doors refuse this first; an in-process caller or a grown reward group may not
            detail = f"k: {n} candidates in windows of {window} need two rounds, {least} calls; this may make {calls}"
            raise Refusal(422, "validation_error", f"{detail} (k counts rounds past one window: at least 2)", field="k")
        deadline = self._deadline()
        quorum = self.settings.quorum
        return await self._spend(
            model.string,
            self.settings.prices.get(model.string),
            calls,
            [task.question, *task.texts],
            "candidates",
            lambda: judge_windows(
                task,
                model,
                self.runner,
                params,
                window=window,
                deadline=deadline,
                quorum=quorum,
                min_runs=self.settings.deadline_min_runs,
            ),
            window=window,
        )

    async def _jury_listwise(self, task: ListwiseTask, jury: Jury) -> ListwiseResult:
        """PCFJudge by every juror (engine/jury_runs.py): the guard checks each juror's model and every juror's
        calls together, before the first call."""
        params = [self.params(m) for m in jury.jurors]
        deadline = self._deadline()
        s = self.settings
        prices = [s.prices.get(m.string) for m in jury.jurors]
        texts = [task.question, *task.texts]
        if len(task.ids) > s.max_candidates:
            window = s.max_candidates
            spec = window_spec(task, window)
            calls = len(jury.jurors) * budget_calls(len(task.ids), window, spec.rounds, spec.max_calls)

            async def windowed() -> ListwiseResult:
                solo = replace(task, model=None)
                outcomes = await judge_jurors(
                    jury,
                    lambda m: judge_windows(
                        solo,
                        m,
                        self.runner,
                        self.params(m),
                        window=window,
                        deadline=deadline,
                        quorum=s.quorum,
                        min_runs=s.deadline_min_runs,
                    ),
                )
                return pool_windows(task, jury, outcomes, s.jury_quorum, self.reliability)

            return await self._spend_jury(jury, prices, calls, texts, "candidates", windowed, window=window)
        per_juror = len(plan_runs(task, jury.jurors[0].string, params[0]).runs)
        calls = task.budget.cap(per_juror * len(jury.jurors)) if task.budget else per_juror * len(jury.jurors)
        known = [p for p in prices if p is not None]
        dearest = max(known, key=lambda p: p[0] + p[1]) if len(known) == len(prices) else None
        return await self._spend_jury(
            jury,
            prices,
            calls,
            texts,
            "k",
            lambda: judge_jury_listwise(
                task,
                jury,
                self.runner,
                params,
                deadline=deadline,
                quorum=s.quorum,
                jury_quorum=s.jury_quorum,
                price=dearest,
                book=self.reliability,
                min_runs=s.deadline_min_runs,
            ),
        )

    async def _jury_pairwise(self, task: PairwiseTask, jury: Jury) -> PairwiseResult:
        deadline = self._deadline()
        calls = sum(len(plan_passes(task, m.string, self.params(m))) for m in jury.jurors)
        texts = [task.question, task.response_a, task.response_b]
        prices = [self.settings.prices.get(m.string) for m in jury.jurors]

        async def judged() -> PairwiseResult:
            outcomes = await judge_jurors(
                jury,
                lambda m: judge_pairwise(replace(task, model=m), m, self.runner, self.params(m), deadline=deadline),
            )
            return pool_pairwise(jury, outcomes, self.settings.jury_quorum, self.reliability)

        return await self._spend_jury(jury, prices, calls, texts, "response_a", judged)

    async def _spend_jury(
        self,
        jury: Jury,
        prices: list[tuple[float, float] | None],
        calls: int,
        texts: Sequence[str],
        field: str,
        judge: Callable[[], Awaitable[R]],
        window: int | None = None,
    ) -> R:
        """``_spend`` for a jury: every juror allowed, every juror's calls checked and charged together; the cost is
        each juror's usage at its own price (None when any juror is unpriced)."""
        if self.guard is not None:
            for juror in jury.jurors:
                self.guard.check_model(juror.string)
        result = await self._spend(jury.jurors[0].string, None, calls, texts, field, judge, window=window)
        costs = [_juror_usage(result, m.string).cost_usd(p) for m, p in zip(jury.jurors, prices, strict=True)]
        report = getattr(result, "jury", None)
        for juror, cost in zip(report.jurors if report is not None else (), costs, strict=False):
            juror.cost_usd = cost
        result.cost_usd = round(sum(c for c in costs if c is not None), 6) if None not in costs else None
        return result

    @traced("pairwise")
    async def pairwise(self, task: PairwiseTask) -> PairwiseResult:
        """APOCJudge; raises ``JudgingFailed`` when both orders fail, ``ModelError`` for a bad model and
        ``Refusal`` when the guard or admission control declines."""
        target = self._target(task.model)
        if isinstance(target, Jury):
            return await self._jury_pairwise(replace(task, model=target), target)
        model = target
        params = self.params(model)
        calls = len(plan_passes(task, model.string, params))
        deadline = self._deadline()
        return await self._spend(
            model.string,
            self.settings.prices.get(model.string),
            calls,
            [task.question, task.response_a, task.response_b],
            "response_a",
            lambda: judge_pairwise(task, model, self.runner, params, deadline=deadline),
        )

    async def _spend(
        self,
        model: str,
        price: tuple[float, float] | None,
        calls: int,
        texts: Sequence[str],
        field: str,
        judge: Callable[[], Awaitable[R]],
        window: int | None = None,
    ) -> R:
        """Check and charge the guard, judge, refund what the judgment did not spend, record it for the log; the
        result's ``cost_usd`` is its usage at the model's price (computed here once, for the response and the
        cost metric alike). ``window``: a windowed judgment, each call shows at most that many of ``texts[1:]``."""
        if self.guard is None:
            result = await judge()
        else:
            self.guard.check_model(model)
            self.guard.check_plan(calls, texts, field=field, window=window)
            charge = await self.guard.charge(calls)
            # Every attempt this judgment makes (retries included; not calls it shares with other requests) counts
            # against PCFJ_MAX_CALLS_PER_REQUEST and the request's own allowance, and is what the quota is charged.
            meter = spend.Meter(self.settings.max_calls_per_request, "PCFJ_MAX_CALLS_PER_REQUEST", spend.current())
            try:
                with spend.metering(meter):
                    result = await judge()
            finally:
                await charge.settle(meter.made)
        result.cost_usd = result.usage.cost_usd(price)
        context.record(result.backend_calls, result.cache_hits)
        return result


def _juror_usage(result: object, model: str) -> Usage:
    """The tokens of the runs (passes) ``model`` made in a jury's judgment."""
    if isinstance(result, ListwiseResult):
        return sum((r.usage for r in result.runs if r.model == model), Usage())
    if isinstance(result, PairwiseResult):
        return sum((p.usage for p in result.passes if p.model == model), Usage())
    return Usage()
