"""A jury of judge models on one item (docs/juries.md); the pooling math is ``judging.jury``.

K is per juror: every juror judges the task's own K permutations (the same schedule and seed), so each juror's runs
are exactly the cache entries it would make judging alone (keyed by its model), shared with every other jury,
request and replica that asks that juror. A jury of J costs J·K calls.

Listwise: one judgment whose executions are the jurors (``Waves`` with the jury's weights as shares), so the runs go
out together, budgets count every juror's calls, and adaptive K stops when the *jury's* winner set is certified (the
bound of ``judging.adaptive`` holds for a weighted mean of jurors' means as for a mean over executions). Past one
window each juror ranks in its own rounds of windows and the fitted scores are pooled. Pairwise: each juror's
APOCJudge, then the weighted vote.

A juror delivers when its own quorum of runs succeeded (both orders failing, for pairwise); the jury answers while a
quorum of jurors delivered (``PCFJ_JURY_QUORUM``, a strict majority by default), ``degraded`` and naming each juror
that did not and why; below it the jurors' failure (502/503/504, the longest Retry-After): never a made-up vote.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from pcfjudge.backends.registry import Jury, ResolvedModel
from pcfjudge.engine.anytime_runs import needed_ok, run_event
from pcfjudge.engine.failures import JudgingFailed, failure_summary, judging_failed
from pcfjudge.engine.listwise_runs import (
    ListwiseResult,
    ListwiseTask,
    _result,
    call_specs,
    fill_record,
    plan_runs,
    required_ok,
)
from pcfjudge.engine.pairwise_passes import PairwiseResult
from pcfjudge.engine.progress import DEADLINE_KIND, Watch
from pcfjudge.engine.runner import CallOutcome, CallRunner, CallSpec
from pcfjudge.judging import adaptive, apoc
from pcfjudge.judging import consensus as cons
from pcfjudge.judging import jury as pool
from pcfjudge.judging.jury import JurorReport, JuryReport
from pcfjudge.judging.reliability import Book, correlation_matrix, effective_jurors
from pcfjudge.judging.run_records import RunRecord
from pcfjudge.judging.waves import Waves
from pcfjudge.judging.window_rounds import WindowReport
from pcfjudge.types import LABELS, DecodingParams, Failure, Usage

R = TypeVar("R", ListwiseResult, PairwiseResult)


def _delivered_or_fail(
    jury: Jury, reports: list[JurorReport], failures: list[JudgingFailed], share: float | None
) -> int:
    """The jury quorum; raises the jurors' failure when fewer delivered."""
    needed = pool.quorum(len(jury.jurors), share)
    delivered = sum(r.delivered for r in reports)
    if delivered < needed:
        kinds = Counter(f.kind for f in failures)
        kind: Failure = kinds.most_common(1)[0][0] if kinds else "backend_error"
        retry = max((f.retry_after for f in failures if f.retry_after is not None), default=None)
        why = "; ".join(f"{r.model}: {r.error}" for r in reports if not r.delivered)
        detail = f"only {delivered} of {len(jury.jurors)} jurors delivered (need {needed}); {why}"
        raise JudgingFailed(kind, detail, retry, [run for f in failures for run in f.runs])
    return needed


def _effective(jury: Jury, book: Book, weights: Sequence[float]) -> float | None:
    """Kish's effective jurors from the jurors' calibrated error correlation (None: some pair never measured)."""
    matrix = correlation_matrix([book.get(m.string, jury.calibration_version) for m in jury.jurors])
    return effective_jurors(weights, matrix) if matrix is not None else None


async def judge_jury_listwise(
    task: ListwiseTask,
    jury: Jury,
    runner: CallRunner,
    params: Sequence[DecodingParams],
    *,
    watch: Watch,
    quorum: float | None,
    jury_quorum: float | None,
    price: tuple[float, float] | None,
    book: Book,
    min_runs: int = 2,
) -> ListwiseResult:
    """PCFJudge by every juror at once, pooled (see the module docstring); ``price``: the dearest juror's, which a
    cost budget charges every call at."""
    solo = replace(task, executions=1)
    plans = [plan_runs(solo, m.string, p) for m, p in zip(jury.jurors, params, strict=True)]
    specs = [call_specs(solo, plan, m, p) for plan, m, p in zip(plans, jury.jurors, params, strict=True)]
    planned = [
        [RunRecord(j, r.index, [task.ids[i] for i in r.order], r.sample) for r in plan.runs]
        for j, plan in enumerate(plans)
    ]
    call = specs[0][0].call if price is not None else None
    waves = Waves(
        task.ids,
        len(jury.jurors),
        len(plans[0].orders),
        task.weights,
        auto=task.auto,
        budget=task.budget,
        price=price,
        prompt_chars=len(call.system) + len(call.user) if call is not None else 0,
        max_output_tokens=params[0].max_output_tokens,
        shares=jury.weights,
    )
    for j, juror in enumerate(jury.jurors):
        for record in planned[j]:
            record.model = juror.string
    made, cut = await _lockstep(task, jury, runner, waves, specs, planned, watch)
    reports, failures, consensuses = [], [], []
    for j, juror in enumerate(jury.jurors):
        keys = sorted(i for jj, i in made if jj == j)
        records, outcomes = [planned[j][i] for i in keys], [made[(j, i)] for i in keys]
        needed = needed_ok(len(records), quorum, [True] * cut[j], len(plans[j].runs), min_runs)
        report, consensus, failure = _juror(task, juror, jury.weights[j], records, outcomes, needed, cut[j])
        reports.append(report)
        if watch.heard:
            watch.announce(
                "juror", juror_event(report.model, report.delivered, report.backend_calls, report.cache_hits)
            )
        if consensus is not None:
            consensuses.append((j, consensus))
        if failure is not None:
            failures.append(failure)
    needed = _delivered_or_fail(jury, reports, failures, jury_quorum)
    records = [planned[j][i] for j, i in sorted(made)]
    outs = [made[key] for key in sorted(made)]
    # Each juror's runs are its own execution to _result; the consensus is then the jury's pooled one.
    result = _result(replace(task, executions=len(jury.jurors)), jury.string, plans[0], records, outs, 0, waves.stopped)
    result.quorum = required_ok(len(records) // max(1, len(jury.jurors)), quorum)
    result.consensus = pool.pool_listwise(
        task.ids, [c for _, c in consensuses], [jury.weights[j] for j, _ in consensuses]
    )
    for record in records:  # the response shows one execution: a juror's runs carry its model
        record.execution = 0
    result.jury = _listwise_report(jury, reports, result.consensus, consensuses, needed, book)
    result.runs_planned = sum(len(p.runs) for p in plans)
    if any(cut):
        ok_runs = [[r.result for r in records if r.model == m.string and r.result is not None] for m in jury.jurors]
        state = adaptive.progress(task.ids, ok_runs, cut, task.weights, jury.weights)
        result.certified = adaptive.certified(state)
    result.degraded = result.degraded or result.jury.degraded
    return result


async def _lockstep(
    task: ListwiseTask,
    jury: Jury,
    runner: CallRunner,
    waves: Waves,
    specs: list[list[CallSpec]],
    planned: list[list[RunRecord]],
    watch: Watch,
) -> tuple[dict[tuple[int, int], CallOutcome], list[int]]:
    """The jurors' runs wave by wave, every juror's share of a wave at once; the outcomes made (by juror, run) and
    the runs per juror the caller's deadline cut (after which no wave follows)."""
    labels = LABELS[: len(task.ids)]
    made: dict[tuple[int, int], CallOutcome] = {}
    cut = [0] * len(jury.jurors)
    watch = _live(task, jury, specs, planned, watch)
    while wave := waves.next():
        by_juror: dict[int, list[int]] = {}
        for j, i in wave:
            by_juror.setdefault(j, []).append(i)
        replies = await asyncio.gather(
            *(
                runner.run([specs[j][i] for i in idx], jury.jurors[j], watch=watch, cache_mode=task.cache_mode)
                for j, idx in by_juror.items()
            )
        )
        for (j, idx), outcomes in zip(by_juror.items(), replies, strict=True):
            for i, outcome in zip(idx, outcomes, strict=True):
                if outcome.error == DEADLINE_KIND:  # the caller's deadline cut it: not made
                    cut[j] += 1
                    continue
                fill_record(planned[j][i], outcome, labels, task.ids)
                waves.record((j, i), planned[j][i].result, call=not outcome.cached, usage=outcome.usage)
                made[(j, i)] = outcome
        if any(cut):
            waves.stopped = "deadline"
            break
    return made, cut


def _live(
    task: ListwiseTask, jury: Jury, specs: list[list[CallSpec]], planned: list[list[RunRecord]], watch: Watch
) -> Watch:
    """With a listener (``stream: true``): a run event per juror run, with the jury's pooled consensus so far."""
    if watch.listener is None:
        return watch
    where = {id(spec): (j, i) for j, row in enumerate(specs) for i, spec in enumerate(row)}
    labels, total, done = LABELS[: len(task.ids)], sum(len(row) for row in planned), []

    def hook(spec: CallSpec, outcome: CallOutcome) -> None:
        j, i = where[id(spec)]
        if outcome.error == DEADLINE_KIND:
            return
        record = planned[j][i]
        fill_record(record, outcome, labels, task.ids)
        done.append(record)
        watch.emit("run", run_event(task.ids, task.weights, record, done, total, jury.weights))

    return watch.hooked(hook)


def _juror(
    task: ListwiseTask,
    juror: ResolvedModel,
    weight: float,
    records: list[RunRecord],
    outcomes: list[CallOutcome],
    needed: int,
    cut: int,
) -> tuple[JurorReport, cons.Consensus | None, JudgingFailed | None]:
    """One juror's report, its own consensus when it delivered, and its failure when it did not."""
    ok = [r.result for r in records if r.result is not None]
    report = JurorReport(juror.string, weight, False, runs=len(records), runs_ok=len(ok))
    report.backend_calls = sum(not o.cached for o in outcomes)
    report.cache_hits = sum(o.cached for o in outcomes)
    report.first_position_wins = sum(
        1 for r in records if r.result is not None and r.order[0] in cons.top_set(r.result)
    )
    if records and len(ok) >= needed:
        report.delivered = True
        return report, cons.aggregate(task.ids, [ok], task.weights), None
    failed = [o for o in outcomes if o.answer is None]
    report.error = f"only {len(ok)} of {len(records)} runs succeeded (need {needed})"
    if cut:
        report.error += f"; {cut} cut by the deadline"
    if not failed:
        return report, None, None
    report.error += f": {failure_summary(failed)}"
    return report, None, judging_failed(failed, report.error, records)


def _listwise_report(
    jury: Jury,
    reports: list[JurorReport],
    pooled: cons.Consensus,
    consensuses: list[tuple[int, cons.Consensus]],
    needed: int,
    book: Book,
) -> JuryReport:
    jury_scores = {cid: c.consensus for cid, c in pooled.candidates.items()}
    winners = set(pooled.winners)
    scores = []
    for j, consensus in consensuses:
        own = {cid: c.consensus for cid, c in consensus.candidates.items()}
        scores.append(own)
        report = reports[j]
        report.scores = {cid: round(v, 4) for cid, v in own.items()}
        report.winners = list(consensus.winners)
        report.agreement = pool.spearman(own, jury_scores)
        report.agrees = bool(winners.intersection(consensus.winners))
    return JuryReport(
        jury.string,
        reports,
        "calibrated" if jury.calibrated else "equal",
        needed,
        kendalls_w=pool.kendalls_w(scores),
        effective_jurors=_effective(jury, book, list(jury.weights)),
    )


async def judge_jurors(
    jury: Jury, judge_one: Callable[[ResolvedModel], Awaitable[R]], watch: Watch
) -> list[R | JudgingFailed]:
    """Every juror's own judgment at once, each announced (a ``juror`` event) as it finishes; a juror's
    ``JudgingFailed`` is its outcome, anything else propagates."""

    async def one(model: ResolvedModel) -> R | JudgingFailed:
        try:
            out = await judge_one(model)
        except JudgingFailed as exc:
            if watch.heard:
                watch.announce("juror", juror_event(model.string, False) | {"error": exc.kind})
            return exc
        if watch.heard:
            watch.announce("juror", juror_event(model.string, True, out.backend_calls, out.cache_hits))
        return out

    return list(await asyncio.gather(*(one(m) for m in jury.jurors)))


def juror_event(model: str, delivered: bool, backend_calls: int = 0, cache_hits: int = 0) -> dict[str, object]:
    """The data of a ``juror`` event (docs/streaming.md): a juror's own judgment finished."""
    return {"model": model, "delivered": delivered, "backend_calls": backend_calls, "cache_hits": cache_hits}


def _outcomes(
    jury: Jury, outcomes: Sequence[R | JudgingFailed]
) -> tuple[list[JurorReport], list[JudgingFailed], list[tuple[int, R]]]:
    """Each juror's report (its calls, or why it did not deliver), the failures, and the results by juror index."""
    reports, failures, results = [], [], []
    for j, (juror, out) in enumerate(zip(jury.jurors, outcomes, strict=True)):
        report = JurorReport(juror.string, jury.weights[j], not isinstance(out, JudgingFailed))
        if isinstance(out, JudgingFailed):
            report.error, report.failure = out.detail, out.kind
            failures.append(out)
        else:
            report.backend_calls, report.cache_hits = out.backend_calls, out.cache_hits
            results.append((j, out))
        reports.append(report)
    return reports, failures, results


def pool_windows(
    task: ListwiseTask,
    jury: Jury,
    outcomes: list[ListwiseResult | JudgingFailed],
    jury_quorum: float | None,
    book: Book,
) -> ListwiseResult:
    """Past one window: each juror's fitted ranking pooled like any juror consensus (standard errors combine as
    √Σ ω_j² se_j², the jurors' fits being independent; appearances add up)."""
    reports, failures, results = _outcomes(jury, outcomes)
    for j, out in results:
        reports[j].runs, reports[j].runs_ok = len(out.runs), sum(r.result is not None for r in out.runs)
    needed = _delivered_or_fail(jury, reports, failures, jury_quorum)
    first = results[0][1]
    weights = [jury.weights[j] for j, _ in results]
    total = sum(weights)
    pooled = pool.pool_listwise(task.ids, [r.consensus for _, r in results], weights)
    windows = [r.windows for _, r in results if r.windows is not None]
    fitted: WindowReport | None = None
    if windows:
        se = {
            cid: round(
                math.sqrt(
                    sum(
                        (w / total) ** 2 * rep.standard_errors.get(cid, 0.0) ** 2
                        for w, rep in zip(weights, windows, strict=True)
                    )
                ),
                4,
            )
            for cid in task.ids
        }
        fitted = replace(
            windows[0],
            calls_budgeted=sum(w.calls_budgeted for w in windows),
            windows_judged=sum(w.windows_judged for w in windows),
            settled=None if windows[0].settled is None else all(w.settled for w in windows),
            standard_errors=se,
            appearances={cid: sum(w.appearances.get(cid, 0) for w in windows) for cid in task.ids},
        )
    runs: list[RunRecord] = []
    for j, result in results:
        for record in result.runs:
            record.model = jury.jurors[j].string
        runs.extend(result.runs)
    out = replace(
        first,
        model=jury.string,
        consensus=pooled,
        runs=runs,
        usage=sum((r.usage for _, r in results), Usage()),
        backend_calls=sum(r.backend_calls for _, r in results),
        cache_hits=sum(r.cache_hits for _, r in results),
        windows=fitted,
    )
    out.jury = _listwise_report(jury, reports, pooled, [(j, r.consensus) for j, r in results], needed, book)
    out.degraded = any(r.error for r in runs) or out.jury.degraded
    return out


def pool_pairwise(
    jury: Jury, outcomes: list[PairwiseResult | JudgingFailed], jury_quorum: float | None, book: Book
) -> PairwiseResult:
    """Each juror's APOCJudge decision, then the jury's weighted vote (``judging.jury.pool_verdicts``)."""
    reports, failures, results = _outcomes(jury, outcomes)
    for j, out in results:
        report = reports[j]
        report.winners, report.decision = [out.decision.winner], out.decision.basis
        report.runs, report.runs_ok = len(out.passes), sum(p.verdict is not None for p in out.passes)
    needed = _delivered_or_fail(jury, reports, failures, jury_quorum)
    weights = [jury.weights[j] for j, _ in results]
    winner = pool.pool_verdicts([r.decision.winner for _, r in results], weights)
    directs = [r.decision.direct for _, r in results]
    consistent = [r.decision.order_consistent for _, r in results]
    passes = []
    for j, result in results:
        report = reports[j]
        report.agrees = result.decision.winner == winner
        for p in result.passes:
            p.model = jury.jurors[j].string
        passes.extend(result.passes)
    first = results[0][1]
    voted = [(d, w) for d, w in zip(directs, weights, strict=True) if d is not None]
    direct = pool.pool_verdicts(*zip(*voted, strict=True)) if voted else None
    decision = apoc.Decision(
        winner,
        direct,
        all(consistent) if all(c is not None for c in consistent) else None,
        any(r.decision.override for _, r in results),
        "jury",
    )
    plans = [r.keyed_plan for _, r in results]
    skipped = next((p.skipped for p in plans if p.needed and p.skipped), None)
    out = replace(
        first,
        model=jury.string,
        decision=decision,
        keyed_plan=apoc.KeyedPlan(any(p.run for p in plans), any(p.needed for p in plans), skipped),
        passes=passes,
        backend_calls=sum(r.backend_calls for _, r in results),
        cache_hits=sum(r.cache_hits for _, r in results),
        usage=sum((r.usage for _, r in results), Usage()),
    )
    out.jury = JuryReport(
        jury.string,
        reports,
        "calibrated" if jury.calibrated else "equal",
        needed,
        fleiss_kappa=_kappa(results),
        effective_jurors=_effective(jury, book, list(jury.weights)),
    )
    out.pooled_preference_a = pool.weighted_mean([r.preference_a for _, r in results], weights)
    return out


def _kappa(results: list[tuple[int, PairwiseResult]]) -> float | None:
    """Fleiss' κ over the orders every delivering juror judged (subjects: direct and swapped; raters: jurors)."""
    subjects = []
    for name in ("direct", "swapped"):
        verdicts = [next((p.verdict for p in r.passes if p.name == name), None) for _, r in results]
        if all(v is not None for v in verdicts):
            subjects.append([str(v) for v in verdicts])
    return pool.fleiss_kappa(subjects)
