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
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from pcfjudge import at_rest, context
from pcfjudge.backends.params import decoding_params
from pcfjudge.backends.registry import Jury, ModelError, Registry, ResolvedModel
from pcfjudge.engine.chat_values import ChatResult, ChatTask
from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask, RunPlan, plan_runs
from pcfjudge.engine.pairwise_passes import (
    PairwiseResult,
    PairwiseTask,
    PassName,
    PlannedPass,
    plan_passes,
)
from pcfjudge.engine.plan import Plan
from pcfjudge.engine.plan import T as Task
from pcfjudge.engine.progress import PLAIN, RunEvent, Watch
from pcfjudge.engine.runner import CallRunner
from pcfjudge.engine.spend import Meter
from pcfjudge.engine.strategies import Chat, Pairwise, Prompt, Windows
from pcfjudge.engine.window_runs import window_spec, windowed_budget
from pcfjudge.errors import Invalid
from pcfjudge.judging import reliability
from pcfjudge.judging.prompts import PromptStyle, listwise_version
from pcfjudge.judging.window_rounds import budget_calls, least_calls
from pcfjudge.security.guard import Guard, estimate_input_tokens
from pcfjudge.settings import PromptSettings, Settings
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

    def usage_of(self, model: str) -> Usage: ...


R = TypeVar("R", bound=_Spent)
Judged = TypeVar("Judged", ListwiseResult, PairwiseResult, ChatResult)


def prompt_style(prompting: PromptSettings, rationales: bool | None, by_default: bool = True) -> PromptStyle:
    """See ``Judge.style``; the eval harness asks it too, so its runs use the prompts the service would."""
    if rationales is None:
        rationales = prompting.rationales
    if rationales is None:
        rationales = by_default
    return PromptStyle(prompting.prompts, rationales or prompting.prompts == "v1")


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
        if isinstance(spec, str) and spec in self.settings.jury.juries:
            return self._jury(spec, self.settings.jury.juries[spec])
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
        if len(models) > self.settings.jury.max_jurors:
            raise ModelError(
                f"a jury has at most {self.settings.jury.max_jurors} jurors (PCFJ_MAX_JURORS); got {len(models)}"
            )
        jurors = tuple(self.registry.resolve(m) for m in models)
        version = listwise_version(None, self.style(None))
        if self.settings.jury.jury_weights == "calibrated":
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

    def style(self, rationales: bool | None, by_default: bool = True) -> PromptStyle:
        """The prompt style of a request: its ``rationales``, else PCFJ_RATIONALES, else its door's default
        (``by_default``: the judging doors ask for rationales, rerank and reward, read as numbers, do not); the family
        is PCFJ_PROMPTS (v1 always asks for rationales)."""
        return prompt_style(self.settings.prompting, rationales, by_default)

    def params(self, model: ResolvedModel) -> DecodingParams:
        """Decoding parameters for the model's calls (the simulated judge ignores them but they key its cache)."""
        return decoding_params(self.settings.providers, model.provider)

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
        if not self.settings.prompting.prices:
            return plan
        return replace(plan, price_usd=self.price(plan.jurors, plan.calls, plan.texts, plan.window, plan.output_tokens))

    def price(
        self,
        jurors: Sequence[ResolvedModel],
        calls: int,
        texts: Sequence[str],
        window: int | None = None,
        output_tokens: int | None = None,
    ) -> float | None:
        """The most ``calls`` over ``texts`` may cost: each juror's share of them, their estimated input tokens and
        their output caps (PCFJ_MAX_OUTPUT_TOKENS, or ``output_tokens`` when the task allows fewer: a chat request's
        max_tokens), at the juror's price (PCFJ_PRICES; None when a juror has none)."""
        calls //= len(jurors)
        tokens = estimate_input_tokens(texts, calls, window)
        total = 0.0
        for juror in jurors:
            price = self.settings.prompting.prices.get(juror.string)
            if price is None:
                return None
            cap = self.params(juror).max_output_tokens
            total += usd(tokens, calls * min(cap, output_tokens or cap), price)
        return round(total, 6)

    def _plan(self, task: Task) -> Plan[Task]:
        target = self._target(task.model)
        jury, jurors = target.jury, target.jurors
        if isinstance(task, ChatTask):
            task = task if target is task.model else replace(task, model=target)
            calls = len(task.orders) * len(jurors)
            return Plan(
                task, Chat(), jurors, jury, calls, task.texts, "messages", output_tokens=task.options.max_tokens
            )
        if isinstance(task, PairwiseTask):
            calls = sum(len(plan_passes(task, m.string, self.params(m))) for m in jurors)
            pair = (task.question, task.response_a, task.response_b)
            task = task if target is task.model else replace(task, model=target)
            return Plan(task, Pairwise(), jurors, jury, calls, pair, "response_a")
        if target is not task.model:  # a front door's task carries its resolved model: no copy
            task = replace(task, model=target)
        texts = (task.question, *task.texts)
        window, n = self.settings.limits.max_candidates, len(task.ids)
        if n > window:
            task = windowed_budget(task, window, self.settings.access.max_window_calls)
            spec = window_spec(task, window)
            calls, least = budget_calls(n, window, spec.rounds, spec.max_calls), least_calls(n, window, spec.top_n)
            if calls < least:  # front doors refuse this first; an in-process caller or a grown reward group may not
                detail = f"k: {n} candidates in windows of {window} need at least {least} calls; this may make {calls}"
                raise Invalid(f"{detail} (k counts rounds past one window)", field="k")
            return Plan(task, Windows(window), jurors, jury, calls * len(jurors), texts, "candidates", window=window)
        runs = plan_runs(task, jurors[0].string, self.params(jurors[0]))
        calls = len(runs.runs) * len(jurors)
        calls = task.budget.cap(calls) if task.budget is not None else calls
        return Plan(task, Prompt(), jurors, jury, calls, texts, "k", runs=runs if jury is None else None)

    def check(self, plan: Plan[Any]) -> None:
        """Refuse (``Refusal``, before any call) a plan this judge's guard does not allow: every juror's model on the
        allowlist, its calls and estimated input tokens within the per-request caps."""
        self.check_spend(
            plan.jurors, plan.calls, plan.texts, field=plan.field, window=plan.window, price=plan.price_usd
        )

    def check_spend(
        self,
        jurors: Sequence[ResolvedModel],
        calls: int,
        texts: Sequence[str],
        *,
        field: str,
        window: int | None = None,
        price: float | None = None,
    ) -> None:
        """What ``check`` refuses, for ``calls`` (every juror's together) over ``texts`` that are not one plan yet (a
        reward group, whose members may still come from other requests): the allowlist, the call, token and cost
        caps (``price``: theirs at PCFJ_PRICES, computed here when not given)."""
        if self.guard is None:
            return
        self.allow(jurors)
        if price is None and self.settings.prompting.prices:
            price = self.price(jurors, calls, texts, window)
        self.guard.check_plan(calls, texts, field=field, window=window, price_usd=price)

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
        strategy = plan.strategy
        judged: Awaitable[Any] = self._ended(watch, self._spend(plan, watch, lambda v: strategy.run(self, plan, v)))
        return await (judged if span is None else span.around(judged))

    def _heard(self, event: RunEvent) -> None:
        """The metrics hear a judgment's light events (``progress.LIGHT``)."""
        self.observer.judgment_event(event.kind, event.data)

    async def _ended(self, watch: Watch, judgment: Awaitable[Judged]) -> Judged:
        """``judgment``, then its ``stopped`` event: why it ended (its result's ``stopped_event``), or ``failed`` with
        its kind."""
        try:
            with at_rest.busy():  # the process does not rest while a judgment runs
                result = await judgment
        except JudgingFailed as exc:
            watch.announce("stopped", {"reason": "failed", "error": exc.kind})  # the failure says the rest
            raise
        watch.announce("stopped", result.stopped_event())
        return result

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
            meter = Meter(self.settings.access.max_calls_per_request, "PCFJ_MAX_CALLS_PER_REQUEST", watch.meter)
            try:
                result = await judgment(watch.metered(meter))
            finally:
                await charge.settle(meter.made)
        prices = self.settings.prompting.prices
        if plan.jury is None:
            result.cost_usd = result.usage.cost_usd(prices.get(plan.jurors[0].string))
        else:
            costs = [result.usage_of(m.string).cost_usd(prices.get(m.string)) for m in plan.jurors]
            report = getattr(result, "jury", None)
            for juror, cost in zip(report.jurors if report is not None else (), costs, strict=False):
                juror.cost_usd = cost
            result.cost_usd = round(sum(c for c in costs if c is not None), 6) if None not in costs else None
        context.record(result.backend_calls, result.cache_hits)
        return result


def _judgment_span(task: ListwiseTask | PairwiseTask | ChatTask) -> JudgmentSpan | None:
    """The judgment's span (``engine.judgment_spans``, loaded with tracing on), None in a trace not sampled."""
    import pcfjudge.engine.judgment_spans as spans  # tracing on only (this form: no importlib frame)

    return spans.begin(task)
