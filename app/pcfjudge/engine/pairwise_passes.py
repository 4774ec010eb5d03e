"""APOCJudge for one response pair: direct and swapped passes, then a keyed pass when they disagree (paper §3.5).

The decision rules (ties, overrides, failures, preference strength) live in ``pcfjudge.judging.apoc`` and are documented
there; this module only plans the passes, fetches them through the ``Runner`` (cache → backend, one cache entry
per pass) and validates and maps their answers.

Passes and cache entries (``plan_passes``; ``cache_key(item, kind, order, model, sample, version, params)``):
  direct   kind "pairwise", order (0, 1): response_a shown first as "A"           version pairwise-v2 (or the style's)
  swapped  kind "pairwise", order (1, 0): response_b shown first; verdict unswapped version pairwise-v2 (or the style's)
  keyed    kind "keyed",    order (0, 1): original order                           version keyed-v2 (or the style's)
The two orders run concurrently; the keyed pass, when needed, runs after them within the same request deadline.
If both orders fail the request fails (``JudgingFailed``, 502/503/504 as for listwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from pcfjudge.backends.base import JudgeCall
from pcfjudge.backends.registry import Jury, ResolvedModel
from pcfjudge.engine.failures import JudgingFailed, judging_failed
from pcfjudge.engine.progress import DEADLINE_KIND, Watch
from pcfjudge.engine.runner import CallOutcome, CallRunner, CallSpec
from pcfjudge.judging import apoc
from pcfjudge.judging.cache_keys import cache_key, item_hash
from pcfjudge.judging.estimation import EstimationCheck, check_estimation
from pcfjudge.judging.jury import JuryReport
from pcfjudge.judging.pairwise_prompts import VERDICTS, pairwise_version, render_keyed, render_pairwise
from pcfjudge.judging.parse import OutputError, load_json_object
from pcfjudge.judging.prompts import DEFAULT_STYLE, Prompt, PromptStyle, new_nonce
from pcfjudge.types import CacheMode, DecodingParams, Usage

PassName = Literal["direct", "swapped", "keyed"]
ORDERS: dict[PassName, tuple[int, int]] = {"direct": (0, 1), "swapped": (1, 0), "keyed": (0, 1)}


@dataclass(frozen=True, slots=True)
class PairwiseTask:
    question: str
    response_a: str
    response_b: str
    keyed: bool = True
    estimation: bool | None = None  # None: detect with the heuristic; True/False: forced by the request
    oracle_best: Literal["A", "B"] | None = None  # sim:oracle only: the truly better response
    sample: int = 0
    cache_mode: CacheMode = "use"
    model: ResolvedModel | Jury | str | None = None  # resolved by a front door (a model or a jury), or provider:model
    style: PromptStyle = DEFAULT_STYLE  # prompt family and rationales (front doors take it from ``Judge.style``)


@dataclass(frozen=True, slots=True)
class PlannedPass:
    """One pass a pair makes: its displayed order, call kind, prompt version and cache key."""

    name: PassName
    order: tuple[int, int]
    kind: Literal["pairwise", "keyed"]
    version: str
    key: str


@dataclass(slots=True)
class PassRecord:
    """One pass and what became of it; ``verdict`` is in the original labels, ``raw_verdict`` as the judge saw it."""

    name: PassName
    order: tuple[int, int]
    prompt_version: str
    verdict: apoc.Verdict | None = None
    raw_verdict: apoc.Verdict | None = None
    rationale: str | None = None
    resolved_answer: str | None = None
    cached: bool = False
    latency_ms: float = 0.0
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    model: str | None = None  # a jury's pass: the juror that made it


@dataclass(slots=True)
class PairwiseResult:
    model: str
    decision: apoc.Decision
    keyed_plan: apoc.KeyedPlan
    estimation: EstimationCheck
    passes: list[PassRecord]
    backend_calls: int
    cache_hits: int
    usage: Usage
    style: PromptStyle = DEFAULT_STYLE
    cost_usd: float | None = None  # usage at the model's price (PCFJ_PRICES), set by ``Judge``; None: unpriced
    jury: JuryReport | None = None  # a jury's judgment: every juror's decision and the agreement (engine/jury_runs.py)
    stopped: Literal["deadline"] | None = None  # the caller's deadline cut a pass (its verdict is missing)
    pooled_preference_a: float | None = None  # a jury's: Σ ω_j preference_a_j

    def stopped_event(self) -> dict[str, Any]:
        """Its ``stopped`` event (docs/streaming.md): why it ended and the passes made."""
        return {"judgment": "pairwise", "reason": self.stopped or "planned", "runs": len(self.passes)}

    def usage_of(self, model: str) -> Usage:
        """The tokens of the passes ``model`` made (a jury's juror)."""
        return sum((p.usage for p in self.passes if p.model == model), Usage())

    @property
    def prompt_versions(self) -> dict[str, str]:
        """The version of each pass kind in this judgment's style."""
        return {"pairwise": pairwise_version(self.style), "keyed": pairwise_version(self.style, keyed=True)}

    @property
    def keyed_pass(self) -> PassRecord | None:
        return next((p for p in self.passes if p.name == "keyed"), None)

    @property
    def preference_a(self) -> float | None:
        if self.jury is not None:
            return self.pooled_preference_a
        return apoc.preference_a(p.verdict for p in self.passes if p.verdict is not None)

    @property
    def degraded(self) -> bool:
        return any(p.error for p in self.passes)


def validate_answer(text: str, *, keyed: bool) -> dict[str, Any]:
    """A pairwise (or keyed) answer as ``{"verdict", "rationale"[, "resolved_answer"]}``, or ``OutputError``.

    The verdict is matched case-insensitively ("a", "TIE") and normalised; extra keys are dropped. A missing
    rationale (a ``-v2-terse`` prompt asks for none) reads as "".
    """
    data = load_json_object(text)
    verdict = data.get("verdict")
    normal = {v.lower(): v for v in VERDICTS}.get(verdict.strip().lower()) if isinstance(verdict, str) else None
    if normal is None:
        raise OutputError("invalid_output", f"verdict must be one of A, B, tie (got {verdict!r})")
    rationale = data.get("rationale", "")
    if not isinstance(rationale, str):
        raise OutputError("invalid_output", "rationale must be a string")
    out: dict[str, Any] = {"verdict": normal, "rationale": rationale}
    if keyed:
        resolved = data.get("resolved_answer")
        if not isinstance(resolved, str):
            raise OutputError("invalid_output", "resolved_answer must be a string")
        out["resolved_answer"] = resolved
    return out


def _oracle(task: PairwiseTask) -> int | None:
    return {"A": 0, "B": 1}.get(task.oracle_best) if task.oracle_best is not None else None


def plan_passes(task: PairwiseTask, model: str, params: DecodingParams) -> dict[PassName, PlannedPass]:
    """The passes a pair can make with ``model`` (a resolved provider:model string); the keyed one only runs when
    the orders disagree."""
    oracle = _oracle(task)
    item = item_hash(
        task.question, (task.response_a, task.response_b), {"oracle": oracle} if oracle is not None else None
    )
    passes: dict[PassName, PlannedPass] = {}
    for name, order in ORDERS.items():
        kind: Literal["pairwise", "keyed"] = "keyed" if name == "keyed" else "pairwise"
        version = pairwise_version(task.style, keyed=name == "keyed")
        key = cache_key(item, kind, order, model, task.sample, version, params)
        passes[name] = PlannedPass(name, order, kind, version, key)
    return passes


class _Planner:
    """Builds the CallSpec of each pass of one request (shared plan, nonce and decoding parameters)."""

    def __init__(self, task: PairwiseTask, model: ResolvedModel, params: DecodingParams) -> None:
        self.task, self.model, self.params = task, model, params
        self.texts = (task.response_a, task.response_b)
        self.oracle = _oracle(task)
        self.passes = plan_passes(task, model.string, params)
        self.nonce = new_nonce()

    def spec(self, name: PassName) -> tuple[CallSpec, PassRecord]:
        planned = self.passes[name]
        displayed = tuple(self.texts[i] for i in planned.order)
        keyed = name == "keyed"
        render = render_keyed if keyed else render_pairwise
        prompt: Prompt = render(self.task.question, displayed, self.nonce, self.task.style)
        call = JudgeCall(
            kind=planned.kind,
            model=self.model.name,
            system=prompt.system,
            prefix=prompt.prefix,
            body=prompt.body,
            schema_name=prompt.schema_name,
            schema=prompt.schema,
            question=self.task.question,
            displayed=displayed,
            sample=self.task.sample,
            params=self.params,
            oracle_position=planned.order.index(self.oracle) if self.oracle is not None else None,
        )
        spec = CallSpec(planned.key, call, partial(validate_answer, keyed=keyed), prompt.version)
        return spec, PassRecord(name, planned.order, prompt.version)


async def judge_pairwise(
    task: PairwiseTask, model: ResolvedModel, runner: CallRunner, params: DecodingParams, *, watch: Watch
) -> PairwiseResult:
    """Run APOCJudge on one pair (use ``Judge.pairwise``); raises ``JudgingFailed`` only when both orders fail."""
    planner = _Planner(task, model, params)
    estimation = check_estimation(task.question, task.estimation)

    (direct_spec, direct), (swapped_spec, swapped) = planner.spec("direct"), planner.spec("swapped")
    passes = [direct, swapped]
    both = _live({id(direct_spec): direct, id(swapped_spec): swapped}, watch)
    outcomes = await runner.run([direct_spec, swapped_spec], model, watch=both, cache_mode=task.cache_mode)
    for record, outcome in zip(passes, outcomes, strict=True):
        _fill(record, outcome)
    if direct.verdict is None and swapped.verdict is None:
        if all(o.error == DEADLINE_KIND for o in outcomes):
            raise JudgingFailed(
                "backend_timeout", "deadline: neither order finished by the deadline (they go on into the cache)", None
            )
        raise _orders_failed(outcomes)

    plan = apoc.plan_keyed(direct.verdict, swapped.verdict, enabled=task.keyed, estimation=estimation.estimation)
    if plan.run:
        keyed_spec, keyed = planner.spec("keyed")
        one = _live({id(keyed_spec): keyed}, watch)
        (keyed_outcome,) = await runner.run([keyed_spec], model, watch=one, cache_mode=task.cache_mode)
        _fill(keyed, keyed_outcome)
        passes.append(keyed)
        outcomes.append(keyed_outcome)
    keyed_verdict = passes[2].verdict if len(passes) > 2 else None
    cut = any(o.error == DEADLINE_KIND for o in outcomes)
    return PairwiseResult(
        model=model.string,
        decision=apoc.decide(direct.verdict, swapped.verdict, keyed_verdict, plan),
        keyed_plan=plan,
        estimation=estimation,
        passes=passes,
        backend_calls=sum(1 for o in outcomes if not o.cached),
        cache_hits=sum(1 for o in outcomes if o.cached),
        usage=sum((p.usage for p in passes), Usage()),
        style=task.style,
        stopped="deadline" if cut else None,
    )


def _live(records: dict[int, PassRecord], watch: Watch) -> Watch:
    """With a listener (``stream: true``): the watch that sends a ``pass`` event as each pass finishes."""
    if watch.listener is None:
        return watch

    def hook(spec: CallSpec, outcome: CallOutcome) -> None:
        record = records[id(spec)]
        if outcome.error == DEADLINE_KIND:
            return
        _fill(record, outcome)
        data = {"pass": record.name, "order": ["A" if i == 0 else "B" for i in record.order], "model": record.model}
        watch.emit("pass", data | {"verdict": record.verdict, "cached": record.cached, "error": record.error})

    return watch.hooked(hook)


def _fill(record: PassRecord, outcome: CallOutcome) -> None:
    record.cached, record.latency_ms, record.usage = outcome.cached, outcome.latency_ms, outcome.usage
    answer = outcome.answer
    if answer is None:
        record.error = outcome.error_text
        return
    raw: apoc.Verdict = answer["verdict"]
    record.raw_verdict = raw
    record.verdict = apoc.unswap(raw) if record.order == (1, 0) else raw
    record.rationale = answer["rationale"] or None  # a -v2-terse pass has none
    record.resolved_answer = answer.get("resolved_answer")


def _orders_failed(outcomes: list[CallOutcome]) -> JudgingFailed:
    """Both order passes failed: 502/503/504 by the most common failure status, as for listwise."""
    failures = "; ".join(
        f"{name}: {o.error}" + (f" ({o.detail})" if o.detail else "")
        for name, o in zip(("direct", "swapped"), outcomes, strict=True)
    )
    return judging_failed(outcomes, f"both order passes of the pairwise judgment failed; {failures}")
