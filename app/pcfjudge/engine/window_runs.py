"""PCFJudge over more candidates than one window: rounds of windows (``judging.window_rounds``), each window an
ordinary listwise run, all fitted onto one scale (``judging.window_fit``).

Each window is judged as the one-run listwise task over its candidates in their displayed order (``window_task``),
so its cache key is (window content in that order, the identity permutation, model, …): a retry, another replica or
a later request that plans the same window reuses it, and so does a plain ``/judge/listwise`` call with those
candidates in that order and ``k`` = 1. A step's windows go to the runner together (one round trip per step: the
uniform rounds, or a top's first round, then one per stage and boundary step), and cancelling the request cancels
them all. The budget is stated in the task before the plan is checked (``windowed_budget``: the request's
``max_calls``, else the rounds' calls up to ``PCFJ_MAX_WINDOW_CALLS``).

The result is an ordinary ``ListwiseResult``: the consensus is the fitted score (Eq. 5 of each run, one scale across
calls, the judge's position bias taken out, put on 0–100 by ``window_fit.on_scale``), the other statistics (mean
score, Borda share, top vote, uncertainty, flags) are each candidate's means over the windows it was judged in, and ``windows`` reports the design, the standard errors and why it stopped. It fails
(``JudgingFailed``, 502/503/504) when fewer than a strict majority of the calls succeed or when some candidate could
not be put on the common scale: never a made-up score.

A round of a large judgment is a few milliseconds of CPU per hundred windows (planning them, reading their answers):
every ``STEP`` windows wait for a turn of the event loop (``engine.turns``), so other requests (and ``/healthz``)
are served in between (docs/performance.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from threadpoolctl import threadpool_limits

from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.engine import turns
from pcfjudge.engine.anytime_runs import needed_ok, run_fields
from pcfjudge.engine.failures import JudgingFailed, failure_summary, judging_failed
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask, call_specs, fill_record, plan_runs
from pcfjudge.engine.progress import DEADLINE_KIND, Watch
from pcfjudge.engine.runner import CallOutcome, CallRunner, CallSpec
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.prompts import listwise_version
from pcfjudge.judging.run_records import RunRecord
from pcfjudge.judging.waves import Budget
from pcfjudge.judging.window_fit import WindowFit, on_scale
from pcfjudge.judging.window_rounds import (
    WindowRanking,
    WindowReport,
    WindowSpec,
    budget_calls,
    least_calls,
    ranking_of,
    run_values,
)
from pcfjudge.judging.windows import Window
from pcfjudge.types import LABELS, DecodingParams, Usage

T = TypeVar("T")
STEP = 4  # windows planned or read in one step of CPU (about a millisecond; ``turns``)
BLAS_THREADS = 1
"""numpy's BLAS threads in a process that fits many candidates (``limit_blas``)."""
_STATS = 6  # score, borda, top_vote, uncertainty, major_error, hallucinated_specificity (``run_values``[1:])


def limit_blas() -> None:
    """numpy's BLAS on ``BLAS_THREADS`` for the whole process (kept, not a context): ``pcfjudge serve`` and ``pcfjudge
    batch`` call it. The fits of many candidates (``judging.window_fit``) take dot products of vectors of 10,000
    values, which OpenBLAS splits across threads that then spin waiting for the next: a 10,000-document top-10 rerank
    cost 10.6 s of CPU with them and 7.0 s on one thread, and the spinning threads take the cores the event loop
    needs (docs/performance.md#cohere-sizes)."""
    threadpool_limits(limits=BLAS_THREADS, user_api="blas")


def window_spec(task: ListwiseTask, window: int) -> WindowSpec:
    """The task's windowed design: its rounds (``task.k``), boundary and call budget."""
    options = task.windows
    max_calls = task.budget.max_calls if task.budget is not None else None
    return WindowSpec(window, task.k, options.top_n if options else 0, max_calls, task.seed)


def windowed_budget(task: ListwiseTask, window: int, most: int) -> ListwiseTask:
    """``task`` with its call budget stated: the request's ``max_calls``, else its rounds' calls up to ``most``
    (``PCFJ_MAX_WINDOW_CALLS``), never below the least the design needs (a budget that low is refused later)."""
    if task.budget is not None and task.budget.max_calls is not None:
        return task
    spec, n = window_spec(task, window), len(task.ids)
    rounds = budget_calls(n, window, spec.rounds)
    calls = min(rounds, max(most, least_calls(n, window, spec.top_n)))
    if calls == rounds:
        return task
    return replace(task, budget=Budget(calls, task.budget.max_cost_usd if task.budget is not None else None))


THREAD_FROM = 1000
"""Candidates from which the stepper plans and fits, the result is built, and a door shapes its answer, in a worker
thread: a fit of 10,000 candidates takes tens of milliseconds of numpy, their result's rows and their response's a
hundred or two each, which the event loop would otherwise wait for (the thread gives it a turn every 5 ms)."""


async def off_loop(n: int, work: Callable[[], T]) -> T:
    """``work`` over ``n`` candidates (planning, fitting, shaping an answer) in a worker thread when ``n`` is large,
    else here."""
    return await asyncio.to_thread(work) if n >= THREAD_FROM else work()


def window_task(task: ListwiseTask, window: Window) -> ListwiseTask:
    """One window as an ordinary one-run listwise task (candidates in displayed order, the schedule's identity)."""
    ids = [task.ids[c] for c in window]
    return replace(
        task,
        ids=ids,
        texts=[task.texts[c] for c in window],
        k=1,
        mode="consensus",
        executions=1,
        seed=0,
        permutations=None,
        auto=None,
        budget=None,
        windows=None,
    )


async def judge_windows(
    task: ListwiseTask,
    model: ResolvedModel,
    runner: CallRunner,
    params: DecodingParams,
    *,
    window: int,
    watch: Watch,
    quorum: float | None = None,
    min_runs: int = 2,
) -> ListwiseResult:
    """Judge ``task``'s candidates in windows (use ``Judge.listwise``, which sends every task over one window here)."""
    n = len(task.ids)
    ranking = WindowRanking(n, window_spec(task, window))
    records: list[RunRecord] = []
    outcomes: list[CallOutcome] = []
    sums = [[0.0] * _STATS for _ in range(n)]
    where = {cid: c for c, cid in enumerate(task.ids)}
    while windows := await off_loop(n, ranking.next_windows):
        tasks, specs = await _round_calls(task, windows, model, params)
        first = len(records)  # a window's run index: ``first`` + its place in the round
        filled: dict[int, RunRecord] = {}  # the runs a stream has already reported, by their place
        round_watch = _streamed(watch, tasks, specs, first, ranking, filled)
        made = await runner.run(specs, model, watch=round_watch, cache_mode=task.cache_mode)
        for i, (w, sub, outcome) in enumerate(zip(windows, tasks, made, strict=True)):
            if i % STEP == STEP - 1:
                await turns.take()
            if outcome.error == DEADLINE_KIND:
                ranking.cut()
                continue
            record = filled.get(i) or _record(ranking.steps, first + i, sub, outcome)
            records.append(record)
            outcomes.append(outcome)
            _add(ranking, w, record, task.weights, where, sums)
        if watch.heard:
            round_ = {"model": model.string, "step": ranking.steps, "windows": len(windows)}
            watch.announce("round", round_ | {"windows_judged": len(records), "calls_budgeted": ranking.budget})
    fit = await off_loop(n, ranking.fit)
    await turns.take()  # the fit, then the result and its response: two steps, not one
    calls = (records, outcomes, sums)
    return await off_loop(n, lambda: _result(task, model, ranking, fit, calls, quorum, min_runs))


def _result(
    task: ListwiseTask,
    model: ResolvedModel,
    ranking: WindowRanking,
    fit: WindowFit,
    calls: tuple[list[RunRecord], list[CallOutcome], list[list[float]]],
    quorum: float | None,
    min_runs: int,
) -> ListwiseResult:
    """The judgment from the final fit and the ``calls`` (their runs, outcomes and each candidate's sums of the
    other stats), or ``JudgingFailed``. For 10,000 candidates it takes 100–200 ms (their rows), so a large one is
    built in a worker thread (``off_loop``), as the fit is."""
    n, window = len(task.ids), ranking.spec.window
    records, outcomes, sums = calls
    ok = len(records) - ranking.failed
    cut = ranking.stopped == "deadline"
    needed = needed_ok(len(records), quorum, [cut] if cut else [], ranking.calls, min_runs)
    unscaled = [task.ids[c] for c in range(n) if fit.appearances[c] == 0]
    if ok < needed or unscaled or fit.components > 1:
        raise _failed(records, outcomes, ok, needed, unscaled, fit.components, cut)
    scaled = on_scale(fit)  # the 0–100 scale every door reports (docs/method.md, "One scale")
    candidates = {
        cid: cons.CandidateConsensus(scaled.scores[c], *(s / fit.appearances[c] for s in sums[c]))
        for c, cid in enumerate(task.ids)
    }
    winners = cons.within_tolerance_of_max({cid: scaled.scores[c] for c, cid in enumerate(task.ids)})
    consensus = cons.Consensus(candidates, winners, [task.ids[c] for c in ranking_of(fit.scores)])
    shown_winner = [r.result for r in records if r.result is not None and set(winners) & set(r.order)]
    agreeing = [run for run in shown_winner if set(winners) & set(cons.top_set(run))]
    report = WindowReport(
        window=window,
        windows_per_round=ranking.per_round,
        rounds=ranking.spec.rounds,
        calls_budgeted=ranking.budget,
        windows_judged=len(records),
        steps=ranking.steps,
        stopped=ranking.stopped or "rounds",
        components=fit.components,
        residual_sd=fit.residual_sd,
        standard_errors={cid: scaled.standard_errors[c] for c, cid in enumerate(task.ids)},
        appearances={cid: fit.appearances[c] for c, cid in enumerate(task.ids)},
        top_n=ranking.spec.top_n,
        settled=ranking.settled(ranking.spec.top_n) if ranking.spec.top_n else None,
        position_effects=tuple(fit.position_effects),
        scale=(scaled.shift, scaled.factor),
    )
    return ListwiseResult(
        model=model.string,
        mode="consensus",
        k=max(fit.appearances),
        k_requested=task.k,
        k_capped=False,
        weights=task.weights,
        consensus=consensus,
        runs=records,
        direct_winners=None,
        agreement=len(agreeing) / len(shown_winner) if shown_winner else 0.0,
        order_sensitive=len(agreeing) < len(shown_winner),
        usage=sum((r.usage for r in records), Usage()),
        backend_calls=sum(1 for o in outcomes if not o.cached),
        cache_hits=sum(1 for o in outcomes if o.cached),
        prompt_version=listwise_version(task.reference, task.style),
        quorum=needed,
        windows=report,
        stopped="deadline" if cut else None,
        runs_planned=ranking.calls,
    )


async def _round_calls(
    task: ListwiseTask, windows: list[Window], model: ResolvedModel, params: DecodingParams
) -> tuple[list[ListwiseTask], list[CallSpec]]:
    """A round's windows as one-run tasks and their calls, ``STEP`` windows a turn of the loop."""
    tasks, specs = [], []
    for i, w in enumerate(windows, 1):
        tasks.append(sub := window_task(task, w))
        specs.append(call_specs(sub, plan_runs(sub, model.string, params), model, params)[0])
        if i % STEP == 0:
            await turns.take()
    return tasks, specs


def _add(
    ranking: WindowRanking,
    window: Window,
    record: RunRecord,
    weights: cons.Weights,
    where: dict[str, int],
    sums: list[list[float]],
) -> None:
    """A judged window into the ranking (its Eq. 5 scores) and each candidate's running sums of the other stats."""
    if record.result is None:
        ranking.record(window, None)
        return
    values = run_values(record.result, weights)
    ranking.record(window, {where[cid]: v[0] for cid, v in values.items()})
    for cid, v in values.items():
        acc = sums[where[cid]]
        for j in range(_STATS):
            acc[j] += v[j + 1]


def _record(step: int, index: int, sub: ListwiseTask, outcome: CallOutcome) -> RunRecord:
    record = RunRecord(step - 1, index, sub.ids, 0)
    fill_record(record, outcome, LABELS[: len(sub.ids)], sub.ids)
    return record


def _streamed(
    watch: Watch,
    tasks: list[ListwiseTask],
    specs: list[CallSpec],
    first: int,
    ranking: WindowRanking,
    filled: dict[int, RunRecord],
) -> Watch:
    """With a listener (``stream: true``): the round's watch, which reports each window as its call ends (cache hits
    first), and keeps its run in ``filled``. The consensus comes with the fit, at the end."""
    if watch.listener is None:
        return watch
    place = {id(spec): i for i, spec in enumerate(specs)}

    def hook(spec: CallSpec, outcome: CallOutcome) -> None:
        if outcome.error == DEADLINE_KIND:
            return
        i = place[id(spec)]
        filled[i] = record = _record(ranking.steps, first + i, tasks[i], outcome)
        watch.emit("run", window_event(record, first + len(filled), ranking.budget, ranking.steps))

    return watch.hooked(hook)


def window_event(record: RunRecord, done: int, budget: int, step: int) -> dict[str, object]:
    """A window's run event (docs/streaming.md): the run's own fields; the consensus so far is null, since the
    candidates share one scale only once the rounds are fitted, in the result."""
    progress_ = {"runs_done": done, "runs_planned": budget, "step": step}
    return run_fields(record) | progress_ | {"winners": None, "ranking": None, "consensus": None}


def _failed(
    records: list[RunRecord],
    outcomes: list[CallOutcome],
    ok: int,
    needed: int,
    unscaled: list[str],
    components: int,
    cut: bool = False,
) -> JudgingFailed:
    failed = [o for o in outcomes if o.answer is None]
    if cut:  # the caller's deadline: say how far it got
        detail = (
            f"deadline: {ok} window runs succeeded by the deadline (need {needed}), {len(unscaled)} candidates unjudged"
        )
        return JudgingFailed("backend_timeout", f"{detail}; the windows in flight finish into the cache", None, records)
    if ok < needed:
        detail = f"only {ok} of {len(records)} window runs succeeded (need {needed})"
    elif unscaled:
        detail = f"{len(unscaled)} candidates were in no successful window (e.g. {unscaled[0]!r})"
    else:
        detail = f"the successful windows split the candidates into {components} groups with no common scale"
    if not failed:
        return JudgingFailed("backend_error", detail, None, records)
    return judging_failed(failed, f"{detail}; failures: {failure_summary(failed)}", records)
