"""PCFJudge for one item: plan the runs, fetch them (cache → backend), map back to ids, aggregate (Alg. 1).

Sample indices: run r of execution e uses sample ``e * SAMPLE_STRIDE + r`` in repeated-canonical mode and
``e * SAMPLE_STRIDE`` for permuted runs, so a direct call, run 0 of PCFJudge and run 0 of repeated canonical are
the same cache entry, and executions never share entries (a run index is below ``MAX_K`` = ``SAMPLE_STRIDE``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any, Literal

from pcfjudge import at_rest
from pcfjudge.backends.base import ORACLE_ABSENT, JudgeCall
from pcfjudge.backends.registry import Jury, ResolvedModel
from pcfjudge.cache.interface import CacheValue
from pcfjudge.engine.anytime_runs import certified_despite, deadline_failed, finished, needed_ok, run_event
from pcfjudge.engine.failures import failure_summary, judging_failed
from pcfjudge.engine.progress import DEADLINE_KIND, Watch
from pcfjudge.engine.runner import CallOutcome, CallRunner, CallSpec, Runner, announce_hits
from pcfjudge.judging import adaptive
from pcfjudge.judging import consensus as cons
from pcfjudge.judging import permutations as perms
from pcfjudge.judging.cache_keys import cache_key, item_hash
from pcfjudge.judging.jury import JuryReport
from pcfjudge.judging.parse import ListwiseAnswer, load_json_object, validate_listwise
from pcfjudge.judging.prompts import DEFAULT_STYLE, PromptStyle, listwise_version, new_nonce, render_listwise
from pcfjudge.judging.run_records import RunJudgments, RunRecord
from pcfjudge.judging.waves import Adaptive, Budget, Waves
from pcfjudge.judging.window_rounds import WindowOptions, WindowReport
from pcfjudge.kept import Kept, KeptFor
from pcfjudge.types import LABELS, SAMPLE_STRIDE, CacheMode, DecodingParams, Usage

Mode = Literal["consensus", "direct", "repeated_canonical"]


@dataclass(frozen=True, slots=True, weakref_slot=True)  # warm judgments are kept while their task lives
class ListwiseTask:
    question: str
    ids: list[str]
    texts: list[str]
    k: int = 7
    mode: Mode = "consensus"
    weights: cons.Weights = cons.PRESETS["proposed"]
    executions: int = 1
    seed: int = 0
    permutations: list[perms.Permutation] | None = None
    oracle_best: str | None = None  # for sim:oracle: the id of the truly best candidate
    cache_mode: CacheMode = "use"
    model: ResolvedModel | Jury | str | None = None  # resolved by a front door (a model or a jury), or provider:model
    reference: str | None = None  # a gold answer: judged with the reference-aware prompt (listwise-ref-…)
    auto: Adaptive | None = None  # "k": "auto": k is k_max, runs stop as ``auto.stop`` allows (judging/adaptive.py)
    budget: Budget | None = None  # max_calls / max_cost_usd, spent in schedule order (judging/waves.py)
    style: PromptStyle = DEFAULT_STYLE  # prompt family and rationales (front doors take it from ``Judge.style``)
    windows: WindowOptions | None = None  # past one window: what matters (engine/window_runs.py; k counts rounds)


@dataclass(frozen=True, slots=True)
class PlannedRun:
    """One backend call a task makes: execution, run index, displayed order (indices), sample, cache key."""

    execution: int
    index: int
    order: perms.Permutation
    sample: int
    key: str


@dataclass(frozen=True, slots=True)
class RunPlan:
    """Every run of a task, executions in order; ``orders`` are one execution's displayed orders; ``keys`` the
    runs' cache keys."""

    item: str
    orders: list[perms.Permutation]
    k_requested: int
    runs: tuple[PlannedRun, ...]
    keys: tuple[str, ...] = ()


@dataclass(slots=True)
class ListwiseResult:
    model: str
    mode: Mode
    k: int
    k_requested: int
    k_capped: bool
    weights: cons.Weights
    consensus: cons.Consensus
    runs: list[RunRecord]
    direct_winners: list[str] | None
    agreement: float
    order_sensitive: bool
    usage: Usage
    backend_calls: int
    cache_hits: int
    prompt_version: str = "listwise-v2"
    quorum: int = 0
    stopped: adaptive.Stopped | None = None  # why runs stopped early (adaptive K or a budget); None: all K made
    cost_usd: float | None = None  # usage at the model's price (PCFJ_PRICES), set by ``Judge``; None: unpriced
    windows: WindowReport | None = None  # past one window: the design, uncertainty and stop (engine/window_runs.py)
    runs_planned: int = 0  # runs the judgment planned (the caller's deadline may cut some: ``stopped`` "deadline")
    certified: bool | None = None  # cut by the deadline: would the runs cut have changed the winners? (adaptive K)
    jury: JuryReport | None = None  # a jury's judgment: every juror's result and the agreement (engine/jury_runs.py)
    degraded: bool = field(init=False)

    def __post_init__(self) -> None:
        self.degraded = any(r.error for r in self.runs)

    def stopped_event(self) -> dict[str, Any]:
        """Its ``stopped`` event (docs/streaming.md): ``reason`` — ``planned`` (every planned run made), an early
        stop's (``certified``, ``confident``, ``k_max``, ``budget``, ``deadline``) or, past one window, why its rounds
        ended (``rounds``, ``certified``, ``budget``, ``deadline``, ``failed``) — and the runs made."""
        data: dict[str, Any] = {"judgment": "listwise", "reason": self.stopped or "planned", "runs": len(self.runs)}
        if self.runs_planned:
            data["runs_planned"] = self.runs_planned
        if self.windows is not None:
            data["reason"] = self.stopped or self.windows.stopped
            data["windows_judged"] = self.windows.windows_judged
        return data

    def usage_of(self, model: str) -> Usage:
        """The tokens of the runs ``model`` made (a jury's juror)."""
        return sum((r.usage for r in self.runs if r.model == model), Usage())


def schedule(task: ListwiseTask) -> tuple[list[perms.Permutation], int]:
    """The displayed orders of one execution and the K requested."""
    explicit = tuple(task.permutations) if task.permutations is not None else None
    return _schedule(len(task.ids), task.k, task.mode, task.seed, explicit)


def _schedule(
    n: int, k: int, mode: Mode, seed: int, explicit: tuple[perms.Permutation, ...] | None
) -> tuple[list[perms.Permutation], int]:
    if mode == "direct":
        return [tuple(range(n))], 1
    if mode == "repeated_canonical":
        return [tuple(range(n))] * k, k
    if explicit is not None:
        return list(explicit), len(explicit)
    return perms.schedule(n, k, seed), k


def plan_runs(task: ListwiseTask, model: str, params: DecodingParams) -> RunPlan:
    """The runs ``task`` makes with ``model`` (a resolved provider:model string) and decoding ``params``.

    Plans are kept (an LRU of ``PLANS``) by everything that shapes them: a request repeated while its runs are
    cached (the warm path) neither hashes its item nor builds its keys again (measured: ~8% of a warm request)."""
    return _plan(
        task.question,
        tuple(task.texts),
        (task.k, task.mode, task.executions, task.seed),
        tuple(task.permutations) if task.permutations is not None else None,
        _oracle_index(task),
        task.reference,
        task.style,
        model,
        params,
    )


PLANS = 1024
"""Plans kept by ``plan_runs`` (a few kilobytes each)."""


@at_rest.forget
@lru_cache(maxsize=PLANS)
def _plan(
    question: str,
    texts: tuple[str, ...],
    shape: tuple[int, Mode, int, int],
    explicit: tuple[perms.Permutation, ...] | None,
    oracle: int | None,
    reference: str | None,
    style: PromptStyle,
    model: str,
    params: DecodingParams,
) -> RunPlan:
    k, mode, executions, seed = shape
    orders, k_requested = _schedule(len(texts), k, mode, seed, explicit)
    extra: dict[str, object] = {"oracle": oracle} if oracle is not None else {}
    if reference is not None:
        extra["reference"] = reference
    item = item_hash(question, texts, extra or None)
    version = listwise_version(reference, style)
    runs = []
    for execution in range(executions):
        for index, order in enumerate(orders):
            sample = execution * SAMPLE_STRIDE + (index if mode == "repeated_canonical" else 0)
            key = cache_key(item, "listwise", order, model, sample, version, params)
            runs.append(PlannedRun(execution, index, order, sample, key))
    return RunPlan(item, orders, k_requested, tuple(runs), tuple(r.key for r in runs))


def required_ok(total: int, quorum: float | None) -> int:
    """Successful runs needed: a strict majority by default, else ceil(quorum · total)."""
    return total // 2 + 1 if quorum is None else max(1, math.ceil(quorum * total - 1e-9))


async def judge_listwise(
    task: ListwiseTask,
    model: ResolvedModel,
    runner: CallRunner,
    params: DecodingParams,
    *,
    watch: Watch,
    quorum: float | None = None,
    price: tuple[float, float] | None = None,
    plan: RunPlan | None = None,
    min_runs: int = 2,
) -> ListwiseResult:
    """Judge one item (use ``Judge.listwise``, which supplies the rest); raises ``failures.JudgingFailed`` below quorum
    and ``waves.BudgetError`` when ``task.budget`` cannot pay for a run (``price``: USD per million tokens in, out).
    ``plan``: ``plan_runs`` of the same task, model and params, when the caller has it already."""
    plan = plan or plan_runs(task, model.string, params)
    fetched = None
    if isinstance(runner, Runner) and warm_applies(task, watch):  # every run in one wave: ask the cache first
        fetched = await runner.cached(plan.keys)
        kept = _WARM.get(task, (plan, *fetched)) if None not in fetched else None
        if kept is not None:  # a warm judgment (``warm_applies``): the one made from these very entries before
            announce_hits(watch, model, kept.cache_hits)
            return replace(kept)
    planned = [RunRecord(r.execution, r.index, [task.ids[i] for i in r.order], r.sample) for r in plan.runs]
    specs = call_specs(task, plan, model, params)
    # Only a priced call needs the prompt's size (a cost estimate before the first call); rendering one is not free.
    call = specs[0].call if price is not None else None
    waves = Waves(
        task.ids,
        task.executions,
        len(plan.orders),
        task.weights,
        auto=task.auto,
        budget=task.budget,
        price=price,
        prompt_chars=len(call.system) + len(call.user) if call is not None else 0,
        max_output_tokens=params.max_output_tokens,
    )
    records, outcomes = await _run_waves(task, waves, len(plan.orders), specs, planned, runner, model, watch, fetched)
    records, outcomes, cut = finished(records, outcomes)
    needed = needed_ok(len(records), quorum, cut, len(plan.runs), min_runs)
    if cut:
        waves.stopped = "deadline"
    ok = sum(1 for r in records if r.result is not None)
    if ok < needed:
        failed = [o for o in outcomes if o.answer is None]
        if cut:
            raise deadline_failed(ok, len(plan.runs), needed, failed, records)
        detail = (
            f"only {ok} of {len(records)} judge runs succeeded (need {needed}); failures: {failure_summary(failed)}"
        )
        raise judging_failed(failed, detail, records)
    result = _result(task, model.string, plan, records, outcomes, needed, waves.stopped)
    result.runs_planned = len(plan.runs)
    if cut:
        result.certified = certified_despite(task.ids, task.executions, task.weights, records, cut)
    if fetched is not None and None not in fetched and result.cache_hits == len(fetched):
        _WARM.put(task, (plan, *fetched), replace(result))
    return result


def warm_applies(task: ListwiseTask, watch: Watch) -> bool:
    """Whether a judgment of ``task`` is kept warm: one wave of every run (fixed K, no budget), the cache used, and
    nothing reported run by run. Such a judgment asks the cache for every run first (``Runner.cached``). When the
    task is one judged before (the same object: the front doors plan a request repeated byte for byte once) and the
    cache answers every run with the entries it answered then (the same objects: the in-process cache hands out its
    entries), the judgment is the one made then (a copy: the same runs, consensus and counts, nothing spent).
    Otherwise it is made from the entries fetched (the cache asked once either way) and kept when the cache answered
    every run. A warm K=7 request's engine part fell from about a quarter of it to a few per cent
    (docs/performance.md)."""
    no_hooks = watch.listener is None and watch.on_outcome is None
    return task.auto is None and task.budget is None and task.cache_mode == "use" and no_hooks


_WARM: KeptFor[ListwiseTask, ListwiseResult] = KeptFor(1024)
at_rest.forget(_WARM.kept)
"""Warm judgments (``warm_applies``), each kept while its task lives, with the plan and entries it was made from."""


async def _run_waves(
    task: ListwiseTask,
    waves: Waves,
    per_execution: int,
    specs: list[CallSpec],
    planned: list[RunRecord],
    runner: CallRunner,
    model: ResolvedModel,
    watch: Watch,
    fetched: list[CacheValue | None] | None = None,
) -> tuple[list[RunRecord], list[CallOutcome]]:
    """Make the runs ``waves`` hands out, one ``runner.run`` per wave; the runs made (plan order) and outcomes.
    ``fetched``: the cache's entries for every run, asked for already (a wave of every run: ``listwise_runs.warm_applies``)."""
    labels = LABELS[: len(task.ids)]
    made: dict[int, CallOutcome] = {}
    watch = live(task, planned, specs, len(planned), watch)
    while wave := waves.next():
        at = [execution * per_execution + index for execution, index in wave]
        ask = [specs[j] for j in at]
        if fetched is not None and len(at) == len(specs) and isinstance(runner, Runner):  # entries asked for already
            outcomes = await runner.run(ask, model, watch=watch, cache_mode="use", fetched=[fetched[j] for j in at])
        else:
            outcomes = await runner.run(ask, model, watch=watch, cache_mode=task.cache_mode)
        for position, j, outcome in zip(wave, at, outcomes, strict=True):
            fill_record(planned[j], outcome, labels, task.ids)
            waves.record(position, planned[j].result, call=not outcome.cached, usage=outcome.usage)
            made[j] = outcome
        if any(o.error == DEADLINE_KIND for o in outcomes):
            break  # the caller's deadline: no further wave
    return [planned[j] for j in sorted(made)], [made[j] for j in sorted(made)]


def live(task: ListwiseTask, planned: list[RunRecord], specs: list[CallSpec], total: int, watch: Watch) -> Watch:
    """With a listener (``stream: true``): the watch that reports each run as it finishes, with the consensus of
    those so far."""
    if watch.listener is None:
        return watch
    where = {id(spec): j for j, spec in enumerate(specs)}
    labels = LABELS[: len(task.ids)]
    done: list[RunRecord] = []

    def hook(spec: CallSpec, outcome: CallOutcome) -> None:
        record = planned[where[id(spec)]]
        if outcome.error == DEADLINE_KIND:
            return
        fill_record(record, outcome, labels, task.ids)
        done.append(record)
        watch.emit("run", run_event(task.ids, task.weights, record, done, total))

    return watch.hooked(hook)


def _oracle_index(task: ListwiseTask) -> int | None:
    """The truly best candidate's index for sim:oracle; ``ORACLE_ABSENT`` when a window of a larger request does
    not show it (front doors check that a request's oracle_best is one of its ids)."""
    if task.oracle_best is None:
        return None
    return task.ids.index(task.oracle_best) if task.oracle_best in task.ids else ORACLE_ABSENT


def call_specs(task: ListwiseTask, plan: RunPlan, model: ResolvedModel, params: DecodingParams) -> list[CallSpec]:
    """The calls of the plan, each prompt rendered for its displayed order (one framing nonce per request) when the
    runner first needs it: a run answered from the cache renders no prompt."""
    nonce = _Nonce()
    oracle = _oracle_index(task)
    decode = partial(validate_listwise, labels=tuple(LABELS[: len(task.ids)]))
    version = listwise_version(task.reference, task.style)
    return [
        CallSpec(
            run.key, partial(_call, task, run, nonce, oracle, model.name, params), load_json_object, version, decode
        )
        for run in plan.runs
    ]


class _Nonce:
    """One request's framing nonce, drawn when its first prompt is rendered (a request answered from the cache draws
    none: a random draw per request was measurable on the warm path)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: str | None = None

    def __call__(self) -> str:
        if self.value is None:
            self.value = new_nonce()
        return self.value


def _call(
    task: ListwiseTask, run: PlannedRun, nonce: _Nonce, oracle: int | None, model: str, params: DecodingParams
) -> JudgeCall:
    """The backend call of one run: the prompt rendered for its displayed order."""
    displayed = tuple(task.texts[i] for i in run.order)
    prompt = render_listwise(task.question, displayed, nonce(), task.reference, task.style)
    return JudgeCall(
        kind="listwise",
        model=model,
        system=prompt.system,
        prefix=prompt.prefix,
        body=prompt.body,
        schema_name=prompt.schema_name,
        schema=prompt.schema,
        question=task.question,
        displayed=displayed,
        sample=run.sample,
        params=params,
        oracle_position=run.order.index(oracle) if oracle not in (None, ORACLE_ABSENT) else oracle,
        reference=task.reference,
    )


def _result(
    task: ListwiseTask,
    model: str,
    plan: RunPlan,
    records: list[RunRecord],
    outcomes: list[CallOutcome],
    quorum: int,
    stopped: adaptive.Stopped | None = None,
) -> ListwiseResult:
    # One pass over the runs (a warm request's runs are all cache hits: no usage to add).
    by_exec: list[list[RunJudgments]] = [[] for _ in range(task.executions)]
    made = [0] * task.executions
    tops: list[tuple[str, ...]] = []
    usage = Usage()
    for r in records:
        made[r.execution] += 1
        u = r.usage
        if u.input_tokens or u.output_tokens or u.cached_tokens:
            usage = usage + u
        if r.result is not None:
            by_exec[r.execution].append(r.result)
            tops.append(r.result.top if r.result.top is not None else cons.tops_of(r.result.judgments))
    consensus = _CONSENSUS.aggregate(task.ids, by_exec, task.weights)
    winners = set(consensus.winners)
    first = records[0].result
    hits = sum(1 for o in outcomes if o.cached)
    return ListwiseResult(
        model=model,
        mode=task.mode,
        k=max(made),
        k_requested=plan.k_requested,
        k_capped=task.mode == "consensus" and task.permutations is None and len(plan.orders) < task.k,
        weights=task.weights,
        consensus=consensus,
        runs=records,
        direct_winners=cons.top_set(first) if first is not None else None,
        agreement=sum(1 for t in tops if winners.intersection(t)) / len(tops),
        order_sensitive=len({frozenset(t) for t in tops}) > 1,
        usage=usage,
        backend_calls=len(outcomes) - hits,
        cache_hits=hits,
        prompt_version=listwise_version(task.reference, task.style),
        quorum=quorum,
        stopped=stopped,
    )


class _Consensuses:
    """``consensus.aggregate`` kept for the last ``size`` sets of runs, by identity.

    A cached answer is mapped to a ``RunJudgments`` once per request shape (``ListwiseAnswer.in_input_order``), so a
    warm request repeats the very same run objects, and its consensus (Eq. 1–5) is the one computed before. Entries
    hold their runs, so an id in a key always names the object it was computed from (ids are reused only once an
    object is freed); run objects are immutable.
    """

    def __init__(self, size: int = 1024) -> None:
        self.kept: Kept[tuple[object, ...], tuple[list[list[RunJudgments]], cons.Consensus]] = Kept(size)

    def aggregate(self, ids: list[str], executions: list[list[RunJudgments]], weights: cons.Weights) -> cons.Consensus:
        key = (tuple(ids), weights, *(tuple(map(id, runs)) for runs in executions))
        found = self.kept.get(key)
        if found is not None:
            return found[1]
        consensus = cons.aggregate(ids, executions, weights)
        self.kept.put(key, (executions, consensus))
        return consensus


_CONSENSUS = _Consensuses()
at_rest.forget(_CONSENSUS.kept)


def fill_record(record: RunRecord, outcome: CallOutcome, labels: str, ids: list[str]) -> None:
    record.cached, record.latency_ms, record.usage = outcome.cached, outcome.latency_ms, outcome.usage
    if outcome.answer is None:
        record.error = outcome.error_text
        return
    parsed = outcome.parsed
    if not isinstance(parsed, ListwiseAnswer):  # a runner that does not decode (e.g. eval's replayed answers)
        parsed = validate_listwise(outcome.answer, tuple(labels))
    # Present judgments in the input order of candidate ids (``record.order``: the ids by displayed position).
    record.result = parsed.in_input_order(record.order, ids)
