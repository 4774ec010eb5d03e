"""Collect JudgeBench APOCJudge passes into the run log, in process (the service's ``Judge``) or from a deployed service.

One APOCJudge request per pair gives both methods and JudgeBench's own metric: its direct pass is the direct judge
(and JudgeBench's first game), its swapped pass is JudgeBench's second game, and the keyed pass runs only when
the two orders disagree. Log key: (pair_id, "apoc", 0, index) with index 0 direct, 1 swapped, 2 keyed; the passes
are those of the judge's plan (``Judge.plan_pairwise``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, get_args

from pcfjudge.surface import (
    DEFAULT_STYLE,
    CallOutcome,
    PairwiseTask,
    PassName,
    PlannedPass,
    PromptStyle,
    apoc,
    check_estimation,
    new_nonce,
    render_keyed,
    render_pairwise,
)

from pcfjudge_lab.eval.harness import ORACLE_MODEL, Planner, Session
from pcfjudge_lab.eval.judgebench.loader import JudgeBenchPair
from pcfjudge_lab.eval.progress import Estimate
from pcfjudge_lab.eval.runlog import PlannedCall, RunLog, call_line, outcome_fields, service_fields

PROTOCOL = "apoc"
PASSES: tuple[PassName, ...] = get_args(PassName)
INDEX: dict[PassName, int] = {name: i for i, name in enumerate(PASSES)}
Calls = dict[PassName, PlannedCall]


def oracle_best(pair: JudgeBenchPair, model: str) -> Literal["A", "B"] | None:
    """The truly better response for the simulated oracle judge (none for a tie label or any other model)."""
    if model != ORACLE_MODEL:
        return None
    if pair.label == "A>B":
        return "A"
    return "B" if pair.label == "B>A" else None


def make_task(pair: JudgeBenchPair, model: str, style: PromptStyle = DEFAULT_STYLE) -> PairwiseTask:
    return PairwiseTask(
        pair.question,
        pair.response_a,
        pair.response_b,
        keyed=True,
        oracle_best=oracle_best(pair, model),
        model=model,
        style=style,
    )


def planned_calls(pair: JudgeBenchPair, task: PairwiseTask, passes: dict[PassName, PlannedPass]) -> Calls:
    """The passes of the judge's plan for the pair as the log knows them (displayed orders as "A"/"B")."""
    calls: Calls = {}
    for name, planned in passes.items():
        order = tuple("AB"[i] for i in planned.order)
        replay_key = (pair.pair_id, planned.kind, task.sample, order)
        key = (pair.pair_id, PROTOCOL, 0, INDEX[name])
        calls[name] = PlannedCall(planned.key, key, replay_key, order, task.sample, optional=name == "keyed")
    return calls


def _line(pair: JudgeBenchPair, model: str, call: PlannedCall, **fields: Any) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "pass": PASSES[call.key[3]],
        "label": pair.label,
        "source": pair.source,
        "estimation": check_estimation(pair.question).estimation,
        "verdict": None,
        "raw_verdict": None,
        "resolved_answer": None,
    }
    return call_line(call, model, **(defaults | fields))


def outcome_line(pair: JudgeBenchPair, model: str, call: PlannedCall, outcome: CallOutcome) -> dict[str, Any]:
    """The log line of one in-process pass (verdict mapped back to the original labels as APOCJudge does)."""
    fields = outcome_fields(outcome)
    if outcome.answer is not None:
        raw: apoc.Verdict = outcome.answer["verdict"]
        fields |= {
            "verdict": apoc.unswap(raw) if PASSES[call.key[3]] == "swapped" else raw,
            "raw_verdict": raw,
            "resolved_answer": outcome.answer.get("resolved_answer"),
            "answer": outcome.answer,
        }
    return _line(pair, model, call, **fields)


def server_line(
    pair: JudgeBenchPair, model: str, call: PlannedCall, run: dict[str, Any], estimation: bool
) -> dict[str, Any]:
    """The log line of one pass returned by the service (``runs[]`` of the pairwise response)."""
    verdict = run.get("verdict")
    return _line(
        pair,
        model,
        call,
        estimation=estimation,
        verdict=verdict,
        raw_verdict=run.get("raw_verdict"),
        resolved_answer=run.get("resolved_answer"),
        **service_fields(run, ok=verdict is not None),
    )


def request_body(task: PairwiseTask) -> dict[str, Any]:
    """``POST /judge/pairwise`` for ``task``, with every pass in the answer."""
    body: dict[str, Any] = {
        "question": task.question,
        "response_a": task.response_a,
        "response_b": task.response_b,
        "model": task.model,
        "keyed": task.keyed,
        "include_runs": True,
    }
    if task.oracle_best is not None:
        body["oracle_best"] = task.oracle_best
    return body


def settled(pair: JudgeBenchPair, calls: Calls, log: RunLog) -> bool:
    """Whether every pass the pair needs is logged: both orders, and the keyed pass unless their verdicts make it
    unneeded."""
    if calls["direct"].key not in log.done or calls["swapped"].key not in log.done:
        return False
    if calls["keyed"].key in log.done:
        return True
    direct, swapped = (log.latest[calls[name].key].get("verdict") for name in ("direct", "swapped"))
    plan = apoc.plan_keyed(direct, swapped, enabled=True, estimation=check_estimation(pair.question).estimation)
    return not plan.run


@dataclass(frozen=True)
class JbCollector:
    """The harness's ``Collector`` for JudgeBench pairs."""

    model: str
    style: PromptStyle = DEFAULT_STYLE  # the service's for the pairwise door (PCFJ_PROMPTS, PCFJ_RATIONALES)

    def request(self, pair: JudgeBenchPair, planner: Planner) -> tuple[PairwiseTask, Calls]:
        task = make_task(pair, self.model, self.style)
        return task, planned_calls(pair, task, planner.plan_pairwise(task))

    def _orders_missing(self, pair: JudgeBenchPair, planner: Planner, log: RunLog) -> int:
        calls = self.request(pair, planner)[1]
        return sum(calls[name].key not in log.done for name in ("direct", "swapped"))

    def missing(self, pairs: Sequence[JudgeBenchPair], planner: Planner, log: RunLog) -> int:
        """Order passes still to log (keyed passes are only known to be needed once both orders are in)."""
        return sum(self._orders_missing(pair, planner, log) for pair in pairs)

    def estimate(self, pairs: Sequence[JudgeBenchPair], planner: Planner, log: RunLog, max_output: int) -> Estimate:
        """Two order passes per pending pair, plus a keyed pass each as an upper bound; tokens are characters/4."""
        calls = tokens = 0
        nonce = new_nonce()
        for pair in pairs:
            if not self._orders_missing(pair, planner, log):
                continue
            texts = (pair.response_a, pair.response_b)
            for render in (render_pairwise, render_pairwise, render_keyed):
                prompt = render(pair.question, texts, nonce, self.style)
                tokens += (len(prompt.system) + len(prompt.user)) // 4
                calls += 1
        return Estimate(calls, tokens, calls * max_output)

    async def judge(self, session: Session, pair: JudgeBenchPair) -> int:
        """Judge the pair unless every pass it needs is logged; returns 1 when both orders failed, else 0."""
        task, calls = self.request(pair, session.planner)
        if settled(pair, calls, session.log):
            return 0
        line = partial(outcome_line, pair, self.model)
        return await session.judge_logged(task, list(calls.values()), line, pair.pair_id)

    async def post(self, session: Session, pair: JudgeBenchPair) -> int:
        """The same through ``POST /judge/pairwise``; only passes missing from the log are written."""
        task, calls = self.request(pair, session.planner)
        if settled(pair, calls, session.log):
            return 0
        data = await session.post("/judge/pairwise", request_body(task), pair.pair_id)
        if data is None:
            return 1
        estimation = bool(data["estimation"]["estimation"])
        for run in data.get("runs") or []:
            call = calls[run["pass"]]
            session.record(call, server_line(pair, self.model, call, run, estimation))
        return 0
