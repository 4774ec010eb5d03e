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
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, overload

from pcfjudge import context
from pcfjudge.backends.params import decoding_params
from pcfjudge.backends.registry import Jury, ModelError, Registry, ResolvedModel
from pcfjudge.engine.chat_values import ChatResult, ChatTask
from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask, RunPlan, judge_listwise, plan_runs
from pcfjudge.engine.pairwise_passes import (
    PairwiseResult,
    PairwiseTask,
    PassName,
    PlannedPass,
    judge_pairwise,
    plan_passes,
)
from pcfjudge.engine.plan import Plan
from pcfjudge.engine.plan import T as Task
from pcfjudge.engine.progress import PLAIN, RunEvent, Watch
from pcfjudge.engine.runner import CallRunner
from pcfjudge.engine.spend import Meter
from pcfjudge.errors import Refusal
from pcfjudge.judging import reliability
from pcfjudge.judging.prompts import PromptStyle, listwise_version
from pcfjudge.judging.window_rounds import budget_calls, least_calls
from pcfjudge.security.guard import Guard, estimate_input_tokens
from pcfjudge.settings import Settings
from pcfjudge.telemetry import tracing
from pcfjudge.telemetry.hooks import NOOP, Observer
from pcfjudge.types import DecodingParams, Usage, usd

if TYPE_CHECKING:
    from pcfjudge.engine.judgment_spans import JudgmentSpan


class _Spent(Protocol):
    backend_calls: int
    cache_hits: int
    usage: Usage
    cost_usd: float | None


R = TypeVar("R", bound=_Spent)
Judged = TypeVar("Judged", ListwiseResult, PairwiseResult, ChatResult)
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
    observer: Observer = NOOP  # hears every judgment's light events (the metrics: ``telemetry.metrics``)

    def using(self, *, runner: CallRunner | None = None, timeout_s: float | None = None) -> Judge:
        """The same judge with another runner (e.g. one that wraps ``self.runner``) or deadline."""
        return replace(self, runner=runner or self.runner, timeout_s=timeout_s or self.timeout_s)

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
        if any(not m.strip() for m in models):  # "sim:default," must not make the default model a juror
            raise ModelError(f"a jury's models must not be empty (got {models!r}); name each juror as provider:model")
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

    def plan(self, task: Task) -> Plan[Task]:
        """What judging ``task`` will do and may spend (``engine.plan``); the one place its calls are counted and
        priced. ``ModelError`` for a bad model; ``Refusal`` when rounds of windows cannot be paid for."""
        plan = self._plan(task)
        if not self.settings.prices:
            return plan
        return replace(plan, price_usd=self.price(plan.jurors, plan.calls, plan.texts, plan.window))

    def price(
        self, jurors: Sequence[ResolvedModel], calls: int, texts: Sequence[str], window: int | None = None
    ) -> float | None:
        """The most ``calls`` over ``texts`` may cost: each juror's share of them, their estimated input tokens and
        their output caps, at the juror's price (PCFJ_PRICES; None when a juror has none)."""
        calls //= len(jurors)
        tokens = estimate_input_tokens(texts, calls, window)
        total = 0.0
        for juror in jurors:
            price = self.settings.prices.get(juror.string)
            if price is None:
                return None
            total += usd(tokens, calls * self.params(juror).max_output_tokens, price)
        return round(total, 6)

    def _plan(self, task: Task) -> Plan[Task]:
        target = self._target(task.model)
        jury = target if isinstance(target, Jury) else None
        jurors = target.jurors if isinstance(target, Jury) else (target,)
        if isinstance(task, ChatTask):
            task = task if target is task.model else replace(task, model=target)
            return Plan(task, "chat", jurors, jury, len(task.orders) * len(jurors), task.texts, "messages")
        if isinstance(task, PairwiseTask):
            calls = sum(len(plan_passes(task, m.string, self.params(m))) for m in jurors)
            pair = (task.question, task.response_a, task.response_b)
            task = task if target is task.model else replace(task, model=target)
            return Plan(task, "pairwise", jurors, jury, calls, pair, "response_a")
        if target is not task.model:  # a front door's task carries its resolved model: no copy
            task = replace(task, model=target)
        texts = (task.question, *task.texts)
        window, n = self.settings.max_candidates, len(task.ids)
        if n > window:
            from pcfjudge.engine.window_runs import window_spec  # rounds of windows: loaded by the first such plan

            spec = window_spec(task, window)
            calls, least = budget_calls(n, window, spec.rounds, spec.max_calls), least_calls(n, window)
            if calls < least:  # front doors refuse this first; an in-process caller or a grown reward group may not
                detail = (
                    f"k: {n} candidates in windows of {window} need two rounds, {least} calls; this may make {calls}"
                )
                raise Refusal("validation_error", f"{detail} (k counts rounds past one window: at least 2)", field="k")
            return Plan(task, "windows", jurors, jury, calls * len(jurors), texts, "candidates", window=window)
        runs = plan_runs(task, jurors[0].string, self.params(jurors[0]))
        calls = len(runs.runs) * len(jurors)
        calls = task.budget.cap(calls) if task.budget is not None else calls
        return Plan(task, "prompt", jurors, jury, calls, texts, "k", runs=runs if jury is None else None)

    def check(self, plan: Plan[Any]) -> None:
        """Refuse (``Refusal``, before any call) a plan this judge's guard does not allow: every juror's model on the
        allowlist, its calls and estimated input tokens within the per-request caps."""
        if self.guard is None:
            return
        self.allow(plan.jurors)
        self.guard.check_plan(plan.calls, plan.texts, field=plan.field, window=plan.window, price_usd=plan.price_usd)

    def allow(self, models: Sequence[ResolvedModel]) -> None:
        """Refuse (``Refusal``, 422 naming PCFJ_ALLOWED_MODELS) a model this judge's guard does not allow."""
        if self.guard is not None:
            for model in models:
                self.guard.check_model(model.string)

    def checked(self, task: Task) -> Plan[Task]:
        """``plan(task)``, checked: what a front door builds at intake, whether it answers now, streams or queues a job."""
        plan = self.plan(task)
        self.check(plan)
        return plan

    async def listwise(self, task: ListwiseTask, watch: Watch = PLAIN) -> ListwiseResult:
        """PCFJudge: ``run(checked(task), watch)``."""
        return await self.run(self.checked(task), watch)

    async def pairwise(self, task: PairwiseTask, watch: Watch = PLAIN) -> PairwiseResult:
        """APOCJudge: ``run(checked(task), watch)``."""
        return await self.run(self.checked(task), watch)

    @overload
    async def run(self, plan: Plan[ListwiseTask], watch: Watch = ...) -> ListwiseResult: ...
    @overload
    async def run(self, plan: Plan[PairwiseTask], watch: Watch = ...) -> PairwiseResult: ...
    @overload
    async def run(self, plan: Plan[ChatTask], watch: Watch = ...) -> ChatResult: ...
    async def run(
        self, plan: Plan[ListwiseTask] | Plan[PairwiseTask] | Plan[ChatTask], watch: Watch = PLAIN
    ) -> ListwiseResult | PairwiseResult | ChatResult:
        """The executor, for a plan from ``checked`` (a front door's, at intake; ``listwise`` and ``pairwise`` for
        an in-process caller): charge the calling key's quota for its calls, judge it as ``watch`` says (its
        deadline, its listener, the request's meter), settle the quota to the attempts made; raises
        ``JudgingFailed`` (502/503/504) below quorum and ``Refusal`` when the quota or admission control declines."""
        task = plan.task
        until = asyncio.get_running_loop().time() + (watch.timeout_s or self.timeout_s)
        span = _judgment_span(task) if tracing.on() else None  # its span (None in a trace not sampled)
        watch = watch.until_at(until, self._heard) if span is None else watch.until_at(until, self._heard, span.heard)
        judged: Awaitable[ListwiseResult | PairwiseResult | ChatResult]
        if isinstance(task, ChatTask):
            chat = task
            judged = self._ended(watch, self._spend(plan, watch, lambda v: self._chat(chat, plan, v)))
        elif isinstance(task, PairwiseTask):
            judged = self._ended(watch, self._spend(plan, watch, lambda v: self._pairwise(task, plan, v)))
        else:
            judged = self._ended(watch, self._spend(plan, watch, lambda v: self._listwise(task, plan, v)))
        return await (judged if span is None else span.around(judged))

    def _heard(self, event: RunEvent) -> None:
        """The metrics hear a judgment's light events (``progress.LIGHT``)."""
        self.observer.judgment_event(event.kind, event.data)

    async def _ended(self, watch: Watch, judgment: Awaitable[Judged]) -> Judged:
        """``judgment``, then its ``stopped`` event: why it ended (``stopped_event``), or ``failed`` with its status."""
        try:
            result = await judgment
        except JudgingFailed as exc:
            watch.announce("stopped", {"reason": "failed", "status": exc.status})  # the failure says the rest
            raise
        watch.announce("stopped", stopped_event(result))
        return result

    async def _listwise(self, task: ListwiseTask, plan: Plan[Any], watch: Watch) -> ListwiseResult:
        s = self.settings
        if plan.strategy == "windows":
            from pcfjudge.engine.window_runs import judge_windows

            assert plan.window is not None
            window = plan.window

            def windows(m: ResolvedModel, t: ListwiseTask = task) -> Awaitable[ListwiseResult]:
                return judge_windows(
                    t, m, self.runner, self.params(m), window=window, watch=watch, quorum=s.quorum,
                    min_runs=s.deadline_min_runs,
                )  # fmt: skip

            if plan.jury is None:
                return await windows(plan.jurors[0])
            from pcfjudge.engine.jury_runs import judge_jurors, pool_windows  # a jury's judgment only

            outcomes = await judge_jurors(plan.jury, lambda m: windows(m, replace(task, model=None)), watch)
            return pool_windows(task, plan.jury, outcomes, s.jury_quorum, self.reliability)
        if plan.jury is None:
            model = plan.jurors[0]
            return await judge_listwise(
                task, model, self.runner, self.params(model), watch=watch, quorum=s.quorum,
                price=s.prices.get(model.string), plan=plan.runs, min_runs=s.deadline_min_runs,
            )  # fmt: skip
        from pcfjudge.engine.jury_runs import judge_jury_listwise

        prices = [s.prices.get(m.string) for m in plan.jurors]
        known = [p for p in prices if p is not None]
        dearest = max(known, key=lambda p: p[0] + p[1]) if len(known) == len(prices) else None
        return await judge_jury_listwise(
            task, plan.jury, self.runner, [self.params(m) for m in plan.jurors], watch=watch, quorum=s.quorum,
            jury_quorum=s.jury_quorum, price=dearest, book=self.reliability, min_runs=s.deadline_min_runs,
        )  # fmt: skip

    async def _pairwise(self, task: PairwiseTask, plan: Plan[Any], watch: Watch) -> PairwiseResult:
        if plan.jury is None:
            model = plan.jurors[0]
            return await judge_pairwise(task, model, self.runner, self.params(model), watch=watch)
        from pcfjudge.engine.jury_runs import judge_jurors, pool_pairwise

        outcomes = await judge_jurors(
            plan.jury,
            lambda m: judge_pairwise(replace(task, model=m), m, self.runner, self.params(m), watch=watch),
            watch,
        )
        return pool_pairwise(plan.jury, outcomes, self.settings.jury_quorum, self.reliability)

    async def _chat(self, task: ChatTask, plan: Plan[Any], watch: Watch) -> ChatResult:
        params = [self.params(m) for m in plan.jurors]
        from pcfjudge.engine.chat_runs import judge_chat  # the templates: loaded by the first chat judgment

        return await judge_chat(task, plan.jurors, self.runner, params, watch)

    async def _spend(self, plan: Plan[Any], watch: Watch, judgment: Callable[[Watch], Awaitable[R]]) -> R:
        """Charge the guard for the plan's calls, judge, refund what the judgment did not spend; the result's
        ``cost_usd`` is its usage at the model's price (a jury's: each juror's usage at its own price, None when any
        juror is unpriced), computed here once for the response and the cost metric alike."""
        if self.guard is None:
            result = await judgment(watch)
        else:
            charge = await self.guard.charge(plan.calls)
            # Every attempt this judgment makes (retries included; not calls it shares with other requests) counts
            # against PCFJ_MAX_CALLS_PER_REQUEST and the request's own allowance, and is what the quota is charged.
            meter = Meter(self.settings.max_calls_per_request, "PCFJ_MAX_CALLS_PER_REQUEST", watch.meter)
            try:
                result = await judgment(watch.metered(meter))
            finally:
                await charge.settle(meter.made)
        prices = self.settings.prices
        if plan.jury is None:
            result.cost_usd = result.usage.cost_usd(prices.get(plan.jurors[0].string))
        else:
            costs = [_juror_usage(result, m.string).cost_usd(prices.get(m.string)) for m in plan.jurors]
            report = getattr(result, "jury", None)
            for juror, cost in zip(report.jurors if report is not None else (), costs, strict=False):
                juror.cost_usd = cost
            result.cost_usd = round(sum(c for c in costs if c is not None), 6) if None not in costs else None
        context.record(result.backend_calls, result.cache_hits)
        return result


def stopped_event(result: ListwiseResult | PairwiseResult | ChatResult) -> dict[str, Any]:
    """The data of a judgment's ``stopped`` event (docs/streaming.md): ``reason`` — ``planned`` (every planned run
    made), an early stop's (``certified``, ``confident``, ``k_max``, ``budget``, ``deadline``) or, past one window,
    why its rounds ended (``rounds``, ``certified``, ``budget``, ``deadline``, ``failed``) — and the runs made (a
    chat judgment's: its orders, every juror's)."""
    if isinstance(result, PairwiseResult):
        return {"judgment": "pairwise", "reason": result.stopped or "planned", "runs": len(result.passes)}
    if isinstance(result, ChatResult):
        return {"judgment": "chat", "reason": result.stopped or "planned", "runs": len(result.runs)}
    data: dict[str, Any] = {"judgment": "listwise", "reason": result.stopped or "planned", "runs": len(result.runs)}
    if result.runs_planned:
        data["runs_planned"] = result.runs_planned
    if result.windows is not None:
        data["reason"] = result.stopped or result.windows.stopped
        data["windows_judged"] = result.windows.windows_judged
    return data


def _judgment_span(task: ListwiseTask | PairwiseTask | ChatTask) -> JudgmentSpan | None:
    """The judgment's span (``engine.judgment_spans``, loaded with tracing on), None in a trace not sampled."""
    import pcfjudge.engine.judgment_spans as spans  # (this form: no importlib frame)

    return spans.begin(task)


def _juror_usage(result: object, model: str) -> Usage:
    """The tokens of the runs (passes) ``model`` made in a jury's judgment."""
    if isinstance(result, ListwiseResult):
        return sum((r.usage for r in result.runs if r.model == model), Usage())
    if isinstance(result, PairwiseResult):
        return sum((p.usage for p in result.passes if p.model == model), Usage())
    if isinstance(result, ChatResult):
        return sum((r.usage for r in result.runs if r.model == model), Usage())
    return Usage()
