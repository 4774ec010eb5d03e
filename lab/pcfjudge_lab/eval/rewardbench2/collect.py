"""Collect RewardBench 2 judge runs into the run log, in process (the service's ``Judge``) or from a deployed service.

Per item two requests give every table with no further calls: (a) PCFJudge with K = max K and E executions (its
prefixes are the smaller K, and run 0 of execution 0 is the direct judge), (b) repeated canonical with K = max K,
one execution (its run 0 is the same call, hence the same cache entry, as the direct judge).
Log key: (item, mode, execution, index) of the judge's plan (``Judge.plan_listwise``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from pcfjudge.surface import (
    DEFAULT_STYLE,
    LABELS,
    CallOutcome,
    ListwiseMode,
    ListwiseTask,
    PromptStyle,
    RunPlan,
    new_nonce,
    parse_listwise,
    render_listwise,
)

from pcfjudge_lab.eval.harness import ORACLE_MODEL, Planner, Session
from pcfjudge_lab.eval.progress import Estimate
from pcfjudge_lab.eval.rewardbench2.loader import FactualityItem
from pcfjudge_lab.eval.runlog import (
    PlannedCall,
    RunLog,
    call_line,
    judgments_to_json,
    outcome_fields,
    service_fields,
)

Request = tuple[ListwiseTask, list[PlannedCall]]


@dataclass(frozen=True)
class Rb2Plan:
    model: str
    max_k: int
    executions: int
    schedule_seed: int = 0
    style: PromptStyle = DEFAULT_STYLE  # the service's for the listwise door (PCFJ_PROMPTS, PCFJ_RATIONALES)

    def requests(self) -> list[tuple[ListwiseMode, int]]:
        return [("consensus", self.executions), ("repeated_canonical", 1)]


def candidate_ids(item: FactualityItem) -> list[str]:
    return [str(i) for i in range(len(item.candidates))]


def correct_id(item: FactualityItem) -> str:
    return str(item.correct_index)


def make_task(item: FactualityItem, plan: Rb2Plan, mode: ListwiseMode, executions: int) -> ListwiseTask:
    return ListwiseTask(
        question=item.prompt,
        ids=candidate_ids(item),
        texts=list(item.candidates),
        k=plan.max_k,
        mode=mode,
        executions=executions,
        seed=plan.schedule_seed,
        oracle_best=correct_id(item) if plan.model == ORACLE_MODEL else None,
        model=plan.model,
        style=plan.style,
    )


def planned_calls(item_id: str, task: ListwiseTask, plan: RunPlan) -> list[PlannedCall]:
    """The runs of the judge's plan for ``task`` as the log knows them (displayed orders as candidate ids)."""
    calls = []
    for run in plan.runs:
        ids = tuple(task.ids[i] for i in run.order)
        key = (item_id, task.mode, run.execution, run.index)
        calls.append(PlannedCall(run.key, key, (item_id, "listwise", run.sample, ids), ids, run.sample))
    return calls


def requests(item: FactualityItem, plan: Rb2Plan, planner: Planner) -> list[Request]:
    """The item's two requests, each with its planned calls."""
    tasks = [make_task(item, plan, mode, executions) for mode, executions in plan.requests()]
    return [(task, planned_calls(item.item_id, task, planner.plan_listwise(task))) for task in tasks]


def _line(item: FactualityItem, model: str, call: PlannedCall, **fields: Any) -> dict[str, Any]:
    return call_line(call, model, **({"correct": correct_id(item), "judgments": None, "rank_source": None} | fields))


def outcome_line(item: FactualityItem, model: str, call: PlannedCall, outcome: CallOutcome) -> dict[str, Any]:
    """The log line of one in-process run (judgments parsed exactly as the listwise judge parses them)."""
    fields = outcome_fields(outcome)
    if outcome.answer is not None:
        run = parse_listwise(outcome.answer, list(LABELS[: len(call.order)]), list(call.order))
        fields |= {"judgments": judgments_to_json(run), "rank_source": run.rank_source, "answer": outcome.answer}
    return _line(item, model, call, **fields)


def server_line(item: FactualityItem, model: str, call: PlannedCall, run: dict[str, Any]) -> dict[str, Any]:
    """The log line of one run returned by the service (``runs[]`` of the listwise response)."""
    judgments = run.get("judgments")
    fields = service_fields(run, ok=judgments is not None)
    return _line(item, model, call, judgments=judgments, rank_source=run.get("rank_source"), **fields)


def request_body(task: ListwiseTask) -> dict[str, Any]:
    """``POST /judge/listwise`` for ``task``, with every run in the answer."""
    body: dict[str, Any] = {
        "question": task.question,
        "candidates": [{"id": cid, "text": text} for cid, text in zip(task.ids, task.texts, strict=True)],
        "k": task.k,
        "mode": task.mode,
        "executions": task.executions,
        "model": task.model,
        "seed": task.seed,
        "weights": "proposed",
        "include_runs": True,
    }
    if task.oracle_best is not None:
        body["oracle_best"] = task.oracle_best
    return body


def _logged(calls: Sequence[PlannedCall], log: RunLog) -> bool:
    return all(call.key in log.done for call in calls)


@dataclass(frozen=True)
class Rb2Collector:
    """The harness's ``Collector`` for RewardBench 2 items."""

    plan: Rb2Plan

    def pending(
        self, items: Sequence[FactualityItem], planner: Planner, log: RunLog
    ) -> list[tuple[FactualityItem, int]]:
        """Calls still to make (per item, how many), counting a call shared by two requests once."""
        out = []
        for item in items:
            seen = {
                call.replay_key
                for _, calls in requests(item, self.plan, planner)
                for call in calls
                if call.key not in log.done and call.replay_key not in log.replay
            }
            if seen:
                out.append((item, len(seen)))
        return out

    def missing(self, items: Sequence[FactualityItem], planner: Planner, log: RunLog) -> int:
        """Log lines still to write (what the progress bar counts)."""
        return sum(
            call.key not in log.done
            for item in items
            for _, calls in requests(item, self.plan, planner)
            for call in calls
        )

    def estimate(self, items: Sequence[FactualityItem], planner: Planner, log: RunLog, max_output: int) -> Estimate:
        """Calls and tokens (characters/4) the pending runs will cost; output is bounded by ``max_output`` a call."""
        calls = tokens = 0
        nonce = new_nonce()
        for item, count in self.pending(items, planner, log):
            prompt = render_listwise(item.prompt, item.candidates, nonce, style=self.plan.style)
            calls += count
            tokens += count * (len(prompt.system) + len(prompt.user)) // 4
        return Estimate(calls, tokens, calls * max_output)

    async def judge(self, session: Session, item: FactualityItem) -> int:
        """Judge the item's requests whose runs are not all logged; returns those that failed (below quorum)."""
        line = partial(outcome_line, item, self.plan.model)
        failed = 0
        for task, calls in requests(item, self.plan, session.planner):
            if not _logged(calls, session.log):
                failed += await session.judge_logged(task, calls, line, f"{item.item_id} {task.mode}")
        return failed

    async def post(self, session: Session, item: FactualityItem) -> int:
        """The same through ``POST /judge/listwise``: a request with a run missing from the log is sent whole (the
        service's cache answers the runs it has made) and only the missing runs are written."""
        failed = 0
        for task, calls in requests(item, self.plan, session.planner):
            if _logged(calls, session.log):
                continue
            data = await session.post("/judge/listwise", request_body(task), f"{item.item_id} {task.mode}")
            if data is None:
                failed += 1
                continue
            by_key = {call.key: call for call in calls}
            for run in data.get("runs") or []:
                call = by_key.get((item.item_id, task.mode, int(run["execution"]), int(run["index"])))
                if call is not None:
                    session.record(call, server_line(item, self.plan.model, call, run))
        return failed
