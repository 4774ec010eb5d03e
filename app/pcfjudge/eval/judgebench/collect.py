"""Collect JudgeBench APOCJudge passes into the run log, in process (``judge_pairwise``) or from a deployed service.

One APOCJudge request per pair gives both methods and JudgeBench's own metric: its direct pass is the direct judge
(and JudgeBench's first game), its swapped pass is JudgeBench's second game, and the keyed pass runs only when
the two orders disagree. Log key: (pair_id, "apoc", 0, index) with index 0 direct, 1 swapped, 2 keyed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal, get_args

import httpx

from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.eval.harness import post_json
from pcfjudge.eval.loaders import JudgeBenchPair
from pcfjudge.eval.progress import Estimate, Progress
from pcfjudge.eval.replay import PlannedCall, ReplayRunner
from pcfjudge.eval.runlog import RunLog, usage_json
from pcfjudge.judging import apoc
from pcfjudge.judging.estimation import check_estimation
from pcfjudge.judging.listwise import JudgingFailed
from pcfjudge.judging.pairwise import ORDERS, PairwiseTask, PassName, judge_pairwise
from pcfjudge.judging.pairwise_prompts import render_keyed, render_pairwise
from pcfjudge.judging.prompts import new_nonce
from pcfjudge.judging.runner import CallOutcome, CallSpec
from pcfjudge.services import Services
from pcfjudge.types import DecodingParams

PROTOCOL = "apoc"
PASSES: tuple[PassName, ...] = get_args(PassName)
INDEX: dict[PassName, int] = {name: i for i, name in enumerate(PASSES)}
ORACLE_MODEL = "sim:oracle"


def oracle_best(pair: JudgeBenchPair, model: str) -> Literal["A", "B"] | None:
    """The truly better response for the simulated oracle judge (none for a tie label or any other model)."""
    if model != ORACLE_MODEL:
        return None
    if pair.label == "A>B":
        return "A"
    return "B" if pair.label == "B>A" else None


def make_task(pair: JudgeBenchPair, model: str) -> PairwiseTask:
    return PairwiseTask(
        pair.question, pair.response_a, pair.response_b, keyed=True, oracle_best=oracle_best(pair, model)
    )


def planned(pair: JudgeBenchPair, name: PassName) -> PlannedCall:
    order = tuple("AB"[i] for i in ORDERS[name])
    kind = "keyed" if name == "keyed" else "pairwise"
    return PlannedCall((pair.pair_id, PROTOCOL, 0, INDEX[name]), (pair.pair_id, kind, 0, order), order, 0)


def _line(pair: JudgeBenchPair, model: str, name: PassName, **fields: Any) -> dict[str, Any]:
    call = planned(pair, name)
    line: dict[str, Any] = {
        "item": pair.pair_id,
        "protocol": PROTOCOL,
        "kind": call.replay_key[1],
        "pass": name,
        "execution": 0,
        "index": INDEX[name],
        "order": list(call.order),
        "sample": 0,
        "label": pair.label,
        "source": pair.source,
        "model": model,
        "estimation": check_estimation(pair.question).estimation,
        "verdict": None,
        "raw_verdict": None,
        "resolved_answer": None,
        "answer": None,
        "error": None,
        "cached": False,
        "latency_ms": 0.0,
        "usage": {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0},
    }
    line.update(fields)
    return line


def outcome_line(pair: JudgeBenchPair, model: str, name: PassName, outcome: CallOutcome) -> dict[str, Any]:
    """The log line of one in-process pass (verdict mapped back to the original labels as APOCJudge does)."""
    common = {"cached": outcome.cached, "latency_ms": outcome.latency_ms, "usage": usage_json(outcome.usage)}
    if outcome.answer is None:
        error = outcome.error_text
        return _line(pair, model, name, error=error, **common)
    raw: apoc.Verdict = outcome.answer["verdict"]
    return _line(
        pair,
        model,
        name,
        verdict=apoc.unswap(raw) if name == "swapped" else raw,
        raw_verdict=raw,
        resolved_answer=outcome.answer.get("resolved_answer"),
        answer=outcome.answer,
        **common,
    )


def _pending(pairs: Sequence[JudgeBenchPair], log: RunLog) -> list[JudgeBenchPair]:
    return [p for p in pairs if any(planned(p, n).key not in log.done for n in ("direct", "swapped"))]


def missing_runs(pairs: Sequence[JudgeBenchPair], log: RunLog) -> int:
    """Order passes still to log (keyed passes are only known to be needed once both orders are in)."""
    return sum(1 for p in pairs for n in ("direct", "swapped") if planned(p, n).key not in log.done)


def estimate(pairs: Sequence[JudgeBenchPair], log: RunLog, max_output_tokens: int) -> Estimate:
    """Two order passes per pending pair, plus a keyed pass each as an upper bound; tokens are characters/4."""
    calls = tokens = 0
    nonce = new_nonce()
    for pair in _pending(pairs, log):
        texts = (pair.response_a, pair.response_b)
        for render in (render_pairwise, render_pairwise, render_keyed):
            prompt = render(pair.question, texts, nonce)
            tokens += (len(prompt.system) + len(prompt.user)) // 4
            calls += 1
    return Estimate(calls, tokens, calls * max_output_tokens)


async def collect_inprocess(
    pairs: Sequence[JudgeBenchPair],
    model_name: str,
    log: RunLog,
    services: Services,
    progress: Progress,
    *,
    concurrency: int,
    timeout_s: float,
) -> int:
    """Judge every pair whose passes are not all logged through ``judge_pairwise``; returns failed requests."""
    model = services.registry.resolve(model_name)
    params = services.decoding_params(model.provider)
    limit = asyncio.Semaphore(concurrency)
    failed = 0

    async def one(pair: JudgeBenchPair) -> None:
        nonlocal failed
        async with limit:
            try:
                await _judge(pair, model, params, services, log, progress, timeout_s)
            except JudgingFailed as exc:
                failed += 1
                progress.write(f"{pair.pair_id}: {exc.detail} (rerun the same command to retry)")

    await asyncio.gather(*(one(pair) for pair in pairs))
    return failed


async def _judge(
    pair: JudgeBenchPair,
    model: ResolvedModel,
    params: DecodingParams,
    services: Services,
    log: RunLog,
    progress: Progress,
    timeout_s: float,
) -> None:
    keys = [planned(pair, name).key for name in PASSES]
    if keys[0] in log.done and keys[1] in log.done and _keyed_settled(pair, log):
        return
    texts = {"A": pair.response_a, "B": pair.response_b}

    def identify(i: int, spec: CallSpec) -> PlannedCall:
        name: PassName = "keyed" if spec.call.kind == "keyed" else ("direct", "swapped")[min(i, 1)]
        call = planned(pair, name)
        if spec.call.displayed != tuple(texts[c] for c in call.order) or spec.call.sample != call.sample:
            raise RuntimeError("judge_pairwise planned other passes than the eval harness expects (plan drift)")
        return call

    def report(call: PlannedCall, outcome: CallOutcome) -> None:
        if call.key not in log.done:
            line = outcome_line(pair, model.string, PASSES[call.key[3]], outcome)
            log.append(line)
            progress.advance(line, unplanned=line["pass"] == "keyed")

    runner = ReplayRunner(services.runner, identify, log.replay, report)
    await judge_pairwise(make_task(pair, model.string), model, runner, params, timeout_s=timeout_s)


def _keyed_settled(pair: JudgeBenchPair, log: RunLog) -> bool:
    """Whether the keyed pass is logged or not needed, judged from the logged order verdicts."""
    if planned(pair, "keyed").key in log.done:
        return True
    direct, swapped = (log.latest[planned(pair, n).key].get("verdict") for n in ("direct", "swapped"))
    plan = apoc.plan_keyed(direct, swapped, enabled=True, estimation=check_estimation(pair.question).estimation)
    return not plan.run


async def collect_server(
    pairs: Sequence[JudgeBenchPair],
    model: str,
    log: RunLog,
    client: httpx.AsyncClient,
    progress: Progress,
    *,
    concurrency: int,
) -> int:
    """Judge pending pairs through ``POST /judge/pairwise``; only passes missing from the log are written."""
    limit = asyncio.Semaphore(concurrency)
    failed = 0

    async def one(pair: JudgeBenchPair) -> None:
        nonlocal failed
        keys = [planned(pair, name).key for name in PASSES]
        if keys[0] in log.done and keys[1] in log.done and _keyed_settled(pair, log):
            return
        async with limit:
            body: dict[str, Any] = {
                "question": pair.question,
                "response_a": pair.response_a,
                "response_b": pair.response_b,
                "model": model,
                "keyed": True,
                "include_runs": True,
            }
            if (best := oracle_best(pair, model)) is not None:
                body["oracle_best"] = best
            data = await post_json(client, "/judge/pairwise", body, pair.pair_id, progress)
            if data is None:
                failed += 1
                return
            for run in data.get("runs") or []:
                name: PassName = run["pass"]
                if planned(pair, name).key not in log.done:
                    line = server_line(pair, model, name, run, bool(data["estimation"]["estimation"]))
                    log.append(line)
                    progress.advance(line, unplanned=line["pass"] == "keyed")

    await asyncio.gather(*(one(pair) for pair in pairs))
    return failed


def server_line(
    pair: JudgeBenchPair, model: str, name: PassName, run: dict[str, Any], estimation: bool
) -> dict[str, Any]:
    """The log line of one pass returned by the service (``runs[]`` of the pairwise response)."""
    verdict = run.get("verdict")
    return _line(
        pair,
        model,
        name,
        estimation=estimation,
        verdict=verdict,
        raw_verdict=run.get("raw_verdict"),
        resolved_answer=run.get("resolved_answer"),
        error=(run.get("error") or "failed") if verdict is None else None,
        cached=bool(run.get("cached")),
        latency_ms=float(run.get("latency_ms") or 0.0),
        usage={k: int(run.get(k) or 0) for k in ("input_tokens", "output_tokens", "cached_tokens")},
    )
