"""PCFJudge for one item: plan the runs, fetch them (cache → backend), map back to ids, aggregate (Alg. 1).

Sample indices: run r of execution e uses sample ``e * 64 + r`` in repeated-canonical mode and ``e * 64`` for
permuted runs, so a direct call, run 0 of PCFJudge and run 0 of repeated canonical are the same cache entry,
and executions never share entries.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from pcfjudge.backends.base import DecodingParams, JudgeCall
from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.judging import consensus as cons
from pcfjudge.judging import permutations as perms
from pcfjudge.judging.parse import load_json_object, parse_listwise
from pcfjudge.judging.prompts import LABELS, LISTWISE_VERSION, new_nonce, render_listwise
from pcfjudge.judging.runner import CacheMode, CallOutcome, CallSpec, Runner
from pcfjudge.judging.types import RunRecord, Usage

Mode = Literal["consensus", "direct", "repeated_canonical"]
SAMPLE_STRIDE = 64


class JudgingFailed(Exception):
    """Too few runs succeeded (below quorum). ``status`` is 502, 503 or 504; ``runs`` says what happened."""

    def __init__(self, status: int, kind: str, detail: str, runs: list[RunRecord], retry_after: float | None) -> None:
        super().__init__(detail)
        self.status, self.kind, self.detail, self.runs, self.retry_after = (
            status,
            kind,
            detail,
            runs,
            retry_after,
        )


@dataclass(frozen=True, slots=True)
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
    prompt_version: str = LISTWISE_VERSION
    quorum: int = 0
    degraded: bool = field(init=False)

    def __post_init__(self) -> None:
        self.degraded = any(r.error for r in self.runs)


def item_hash(question: str, texts: Sequence[str], extra: dict[str, Any] | None = None) -> str:
    """Hash of the canonical item: question, candidates in input order, anything else that shapes the answer."""
    payload = json.dumps({"q": question, "c": list(texts), "x": extra or {}}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def cache_key(
    item: str, kind: str, order: Sequence[int], model: str, sample: int, version: str, params: DecodingParams
) -> str:
    """One entry per backend call; the item hash is a Redis Cluster hash tag (all of an item's runs in one slot)."""
    params_digest = hashlib.sha256(params.key().encode()).hexdigest()[:12]
    perm = "-".join(map(str, order))
    return f"pcfj:{{{item}}}:{kind}:{perm}:{model}:{sample}:{version}:{params_digest}"


def plan(task: ListwiseTask) -> tuple[list[perms.Permutation], int]:
    """The displayed orders of one execution and the K requested."""
    n = len(task.ids)
    if task.mode == "direct":
        return [tuple(range(n))], 1
    if task.mode == "repeated_canonical":
        return [tuple(range(n))] * task.k, task.k
    if task.permutations is not None:
        return task.permutations, len(task.permutations)
    return perms.schedule(n, task.k, task.seed), task.k


def required_ok(total: int, quorum: float | None) -> int:
    """Successful runs needed: a strict majority by default, else ceil(quorum · total)."""
    return total // 2 + 1 if quorum is None else max(1, math.ceil(quorum * total - 1e-9))


async def judge_listwise(
    task: ListwiseTask,
    model: ResolvedModel,
    runner: Runner,
    params: DecodingParams,
    *,
    timeout_s: float,
    quorum: float | None = None,
) -> ListwiseResult:
    orders, k_requested = plan(task)
    n = len(task.ids)
    labels = LABELS[:n]
    oracle_index = task.ids.index(task.oracle_best) if task.oracle_best is not None else None
    item = item_hash(task.question, task.texts, {"oracle": oracle_index} if oracle_index is not None else None)
    nonce = new_nonce()
    records: list[RunRecord] = []
    specs: list[CallSpec] = []
    for execution in range(task.executions):
        for index, order in enumerate(orders):
            sample = execution * SAMPLE_STRIDE + (index if task.mode == "repeated_canonical" else 0)
            prompt = render_listwise(task.question, [task.texts[i] for i in order], nonce)
            call = JudgeCall(
                kind="listwise",
                model=model.name,
                system=prompt.system,
                prefix=prompt.prefix,
                body=prompt.body,
                schema_name=prompt.schema_name,
                schema=prompt.schema,
                question=task.question,
                displayed=tuple(task.texts[i] for i in order),
                sample=sample,
                params=params,
                oracle_position=order.index(oracle_index) if oracle_index is not None else None,
            )
            key = cache_key(item, "listwise", order, model.string, sample, prompt.version, params)
            specs.append(CallSpec(key, call, partial(_validate, labels=labels), prompt.version))
            records.append(RunRecord(execution, index, [task.ids[i] for i in order], sample))

    loop = asyncio.get_running_loop()
    outcomes = await runner.run(specs, model, deadline=loop.time() + timeout_s, cache_mode=task.cache_mode)
    for record, outcome in zip(records, outcomes, strict=True):
        _fill(record, outcome, labels, task.ids)

    total = len(records)
    ok = [r for r in records if r.result is not None]
    needed = required_ok(total, quorum)
    if len(ok) < needed:
        raise _below_quorum(records, outcomes, len(ok), needed)

    by_exec = [[r.result for r in ok if r.execution == e and r.result is not None] for e in range(task.executions)]
    consensus = cons.aggregate(task.ids, by_exec, task.weights)
    tops = [cons.top_set(r.result) for r in ok if r.result is not None]
    winners = set(consensus.winners)
    first = records[0]
    direct = cons.top_set(first.result) if first.result is not None else None
    return ListwiseResult(
        model=model.string,
        mode=task.mode,
        k=len(orders),
        k_requested=k_requested,
        k_capped=task.mode == "consensus" and task.permutations is None and len(orders) < task.k,
        weights=task.weights,
        consensus=consensus,
        runs=records,
        direct_winners=direct,
        agreement=sum(1 for t in tops if winners.intersection(t)) / len(tops),
        order_sensitive=len({frozenset(t) for t in tops}) > 1,
        usage=sum((r.usage for r in records), Usage()),
        backend_calls=sum(1 for o in outcomes if not o.cached),
        cache_hits=sum(1 for o in outcomes if o.cached),
        quorum=needed,
    )


def _validate(text: str, *, labels: str) -> dict[str, Any]:
    data = load_json_object(text)
    parse_listwise(data, list(labels), list(labels))
    return data


def _fill(record: RunRecord, outcome: CallOutcome, labels: str, ids: list[str]) -> None:
    record.cached, record.latency_ms, record.usage = outcome.cached, outcome.latency_ms, outcome.usage
    if outcome.answer is None:
        record.error = outcome.error_text
        return
    run = parse_listwise(outcome.answer, list(labels), record.order)
    # Present judgments in the input order of candidate ids.
    record.result = type(run)({cid: run.judgments[cid] for cid in ids}, run.rank_source)


def _below_quorum(records: list[RunRecord], outcomes: list[CallOutcome], ok: int, needed: int) -> JudgingFailed:
    failed = [o for o in outcomes if o.answer is None]
    status, _ = Counter(o.status or 502 for o in failed).most_common(1)[0]
    kinds = Counter(o.error or "error" for o in failed)
    kind = {503: "backend_overloaded", 504: "backend_timeout"}.get(status, "backend_error")
    summary = ", ".join(f"{count}× {k}" for k, count in kinds.most_common())
    retry_after = max((o.retry_after for o in failed if o.retry_after is not None), default=None)
    detail = f"only {ok} of {len(records)} judge runs succeeded (need {needed}); failures: {summary}"
    return JudgingFailed(status, kind, detail, records, retry_after)
