"""Collect RewardBench 2 judge runs into the run log, in process (``judge_listwise``) or from a deployed service.

Per item two requests give every table with no further calls: (a) PCFJudge with K = max K and E executions (its
prefixes are the smaller K, and run 0 of execution 0 is the direct judge), (b) repeated canonical with K = max K,
one execution (its run 0 is the same call, hence the same cache entry, as the direct judge).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.eval.harness import post_json
from pcfjudge.eval.loaders import FactualityItem
from pcfjudge.eval.progress import Estimate, Progress
from pcfjudge.eval.replay import PlannedCall, ReplayRunner
from pcfjudge.eval.runlog import RunLog, judgments_to_json, usage_json
from pcfjudge.judging import listwise as lw
from pcfjudge.judging.parse import parse_listwise
from pcfjudge.judging.prompts import new_nonce, render_listwise
from pcfjudge.judging.runner import CallOutcome, CallSpec
from pcfjudge.services import Services
from pcfjudge.types import LABELS, DecodingParams

ORACLE_MODEL = "sim:oracle"


@dataclass(frozen=True)
class Rb2Plan:
    model: str
    max_k: int
    executions: int
    schedule_seed: int = 0

    def requests(self) -> list[tuple[lw.Mode, int]]:
        return [("consensus", self.executions), ("repeated_canonical", 1)]


def candidate_ids(item: FactualityItem) -> list[str]:
    return [str(i) for i in range(len(item.candidates))]


def correct_id(item: FactualityItem) -> str:
    return str(item.correct_index)


def make_task(item: FactualityItem, plan: Rb2Plan, mode: lw.Mode, executions: int) -> lw.ListwiseTask:
    return lw.ListwiseTask(
        question=item.prompt,
        ids=candidate_ids(item),
        texts=list(item.candidates),
        k=plan.max_k,
        mode=mode,
        executions=executions,
        seed=plan.schedule_seed,
        oracle_best=correct_id(item) if plan.model == ORACLE_MODEL else None,
    )


def planned_calls(item_id: str, task: lw.ListwiseTask) -> list[PlannedCall]:
    """The runs ``judge_listwise`` makes for ``task``, in its order (run 0 canonical; sample rule of listwise)."""
    orders, _ = lw.plan(task)
    calls = []
    for execution in range(task.executions):
        for index, order in enumerate(orders):
            sample = execution * lw.SAMPLE_STRIDE + (index if task.mode == "repeated_canonical" else 0)
            ids = tuple(task.ids[i] for i in order)
            calls.append(
                PlannedCall((item_id, task.mode, execution, index), (item_id, "listwise", sample, ids), ids, sample)
            )
    return calls


def _line(item: FactualityItem, model: str, call: PlannedCall, **fields: Any) -> dict[str, Any]:
    item_id, protocol, execution, index = call.key
    line: dict[str, Any] = {
        "item": item_id,
        "protocol": protocol,
        "kind": "listwise",
        "execution": execution,
        "index": index,
        "order": list(call.order),
        "sample": call.sample,
        "correct": correct_id(item),
        "model": model,
        "judgments": None,
        "rank_source": None,
        "answer": None,
        "error": None,
        "cached": False,
        "latency_ms": 0.0,
        "usage": {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0},
    }
    line.update(fields)
    return line


def outcome_line(item: FactualityItem, model: str, call: PlannedCall, outcome: CallOutcome) -> dict[str, Any]:
    """The log line of one in-process run (judgments parsed exactly as ``judge_listwise`` parses them)."""
    common = {"cached": outcome.cached, "latency_ms": outcome.latency_ms, "usage": usage_json(outcome.usage)}
    if outcome.answer is None:
        error = outcome.error_text
        return _line(item, model, call, error=error, **common)
    run = parse_listwise(outcome.answer, list(LABELS[: len(call.order)]), list(call.order))
    return _line(
        item,
        model,
        call,
        judgments=judgments_to_json(run),
        rank_source=run.rank_source,
        answer=outcome.answer,
        **common,
    )


def pending_calls(items: Sequence[FactualityItem], plan: Rb2Plan, log: RunLog) -> list[tuple[FactualityItem, int]]:
    """Calls still to make (per item, how many), counting a call shared by two protocols once."""
    out = []
    for item in items:
        seen: set[tuple[Any, ...]] = set()
        for mode, executions in plan.requests():
            for call in planned_calls(item.item_id, make_task(item, plan, mode, executions)):
                if call.key not in log.done and call.replay_key not in log.replay:
                    seen.add(call.replay_key)
        if seen:
            out.append((item, len(seen)))
    return out


def missing_runs(items: Sequence[FactualityItem], plan: Rb2Plan, log: RunLog) -> int:
    """Log lines still to write (what the progress bar counts)."""
    return sum(
        1
        for item in items
        for mode, executions in plan.requests()
        for call in planned_calls(item.item_id, make_task(item, plan, mode, executions))
        if call.key not in log.done
    )


def estimate(items: Sequence[FactualityItem], plan: Rb2Plan, log: RunLog, max_output_tokens: int) -> Estimate:
    """Calls and tokens (characters/4) the pending runs will cost; output is bounded by max_output_tokens."""
    calls = tokens = 0
    nonce = new_nonce()
    for item, count in pending_calls(items, plan, log):
        prompt = render_listwise(item.prompt, item.candidates, nonce)
        calls += count
        tokens += count * (len(prompt.system) + len(prompt.user)) // 4
    return Estimate(calls, tokens, calls * max_output_tokens)


async def collect_inprocess(
    items: Sequence[FactualityItem],
    plan: Rb2Plan,
    log: RunLog,
    services: Services,
    progress: Progress,
    *,
    concurrency: int,
    timeout_s: float,
) -> int:
    """Judge every pending item through ``judge_listwise``; returns the number of requests below quorum."""
    model = services.registry.resolve(plan.model)
    params = services.decoding_params(model.provider)
    limit = asyncio.Semaphore(concurrency)
    failed = 0

    async def one(item: FactualityItem) -> None:
        nonlocal failed
        async with limit:
            for mode, executions in plan.requests():
                task = make_task(item, plan, mode, executions)
                try:
                    await _judge(item, task, model, services, params, log, progress, timeout_s)
                except lw.JudgingFailed as exc:
                    failed += 1
                    progress.write(f"{item.item_id} {mode}: {exc.detail} (rerun the same command to retry)")

    await asyncio.gather(*(one(item) for item in items))
    return failed


async def _judge(
    item: FactualityItem,
    task: lw.ListwiseTask,
    model: ResolvedModel,
    services: Services,
    params: DecodingParams,
    log: RunLog,
    progress: Progress,
    timeout_s: float,
) -> None:
    calls = planned_calls(item.item_id, task)
    if all(call.key in log.done for call in calls):
        return
    texts = dict(zip(task.ids, task.texts, strict=True))

    def identify(i: int, spec: CallSpec) -> PlannedCall:
        call = calls[i] if i < len(calls) else None
        if (
            call is None
            or spec.call.sample != call.sample
            or spec.call.displayed != tuple(texts[c] for c in call.order)
        ):
            raise RuntimeError("judge_listwise planned other runs than the eval harness expects (plan drift)")
        return call

    def report(call: PlannedCall, outcome: CallOutcome) -> None:
        if call.key not in log.done:
            line = outcome_line(item, model.string, call, outcome)
            log.append(line)
            progress.advance(line)

    runner = ReplayRunner(services.runner, identify, log.replay, report)
    await lw.judge_listwise(task, model, runner, params, timeout_s=timeout_s, quorum=services.settings.quorum)


async def collect_server(
    items: Sequence[FactualityItem],
    plan: Rb2Plan,
    log: RunLog,
    client: httpx.AsyncClient,
    progress: Progress,
    *,
    concurrency: int,
) -> int:
    """Judge pending items through ``POST /judge/listwise`` of a deployed service; returns failed requests.

    A request whose runs are all logged is skipped; otherwise it is sent whole (the service's cache answers the
    runs it has already made) and only the runs missing from the log are written.
    """
    limit = asyncio.Semaphore(concurrency)
    failed = 0

    async def one(item: FactualityItem) -> None:
        nonlocal failed
        async with limit:
            for mode, executions in plan.requests():
                task = make_task(item, plan, mode, executions)
                calls = {c.key: c for c in planned_calls(item.item_id, task)}
                if all(key in log.done for key in calls):
                    continue
                runs = await _post(client, item, plan, task, progress)
                if runs is None:
                    failed += 1
                    continue
                for run in runs:
                    call = calls.get((item.item_id, mode, int(run["execution"]), int(run["index"])))
                    if call is not None and call.key not in log.done:
                        line = server_line(item, plan.model, call, run)
                        log.append(line)
                        progress.advance(line)

    await asyncio.gather(*(one(item) for item in items))
    return failed


def server_line(item: FactualityItem, model: str, call: PlannedCall, run: dict[str, Any]) -> dict[str, Any]:
    """The log line of one run returned by the service (``runs[]`` of the listwise response)."""
    judgments = run.get("judgments")
    return _line(
        item,
        model,
        call,
        judgments=judgments,
        rank_source=run.get("rank_source"),
        error=(run.get("error") or "failed") if judgments is None else None,
        cached=bool(run.get("cached")),
        latency_ms=float(run.get("latency_ms") or 0.0),
        usage={k: int(run.get(k) or 0) for k in ("input_tokens", "output_tokens", "cached_tokens")},
    )


async def _post(
    client: httpx.AsyncClient, item: FactualityItem, plan: Rb2Plan, task: lw.ListwiseTask, progress: Progress
) -> list[dict[str, Any]] | None:
    body: dict[str, Any] = {
        "question": task.question,
        "candidates": [{"id": cid, "text": text} for cid, text in zip(task.ids, task.texts, strict=True)],
        "k": task.k,
        "mode": task.mode,
        "executions": task.executions,
        "model": plan.model,
        "seed": task.seed,
        "weights": "proposed",
        "include_runs": True,
    }
    if task.oracle_best is not None:
        body["oracle_best"] = task.oracle_best
    data = await post_json(client, "/judge/listwise", body, f"{item.item_id} {task.mode}", progress)
    if data is None:
        return None
    runs = data.get("runs")
    return list(runs) if isinstance(runs, list) else []
