"""One reward group judged as one listwise PCFJudge task, and each member's reward read from the consensus.

A group's members are completions of one prompt (GRPO's G samples). Their distinct responses are the candidates of
ONE listwise task, so a group costs K calls, not K per member; identical responses are one candidate and get the same
reward. Candidates are put in a canonical order (by digest), so however the members arrived the group is the same
task, with the same calls (cache keys) and the same rewards. A group with one distinct response is scored pointwise: the same prompt family with a single candidate (one
call: there is no order to permute) and reward = the judge's score / 100, whatever the mode.

Rewards (0–1) of a candidate in a group of two or more, by mode:
  consensus  its PCFJudge consensus / 100 (paper Eq. 5: mean score, Borda rank, top vote, uncertainty)
  borda      its Borda share / 100 (1 = ranked first in every permutation, 0 = last in every one)
  win        its top vote: the share of permutations that put it on top (ties split)
More distinct responses than one prompt holds (PCFJ_MAX_CANDIDATES, the window; up to PCFJ_MAX_GROUP_SIZE) are
judged in rounds of windows fitted onto one scale (``engine.window_runs``): every round uniform (the whole order
matters), ``k`` counting rounds (default PCFJ_WINDOW_ROUNDS); the Borda share and top vote are then each candidate's
means over its windows, and the consensus the fitted one (clipped to 0–1 as a reward, as always).
A failed judgment gives every member of the group a ``Failure`` and no reward: never a made-up number.

A group's judgment runs as its request's ``Watch`` says (the caller's deadline, the request's meter) and is awaited
through the ``Recorder`` its request's door gives (``doors.decisions.listwise_recorder``: the judgment's metrics,
under door reward); a group collected across requests is judged once, through the watch and recorder of the request
whose judging function the collector kept (the group's first).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask
from pcfjudge.engine.progress import PLAIN, Watch
from pcfjudge.errors import Refusal
from pcfjudge.judging import permutations as perms
from pcfjudge.judging.prompts import listwise_version
from pcfjudge.judging.waves import Budget
from pcfjudge.judging.window_rounds import WindowOptions
from pcfjudge.settings import RequestLimits

RewardMode = Literal["consensus", "borda", "win"]
Scoring = Literal["group", "pointwise"]
Recorder = Callable[[Awaitable[ListwiseResult]], Awaitable[ListwiseResult]]
"""Awaits a group's listwise judgment for its door (timing, failures, the decision's metrics) and returns it."""


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """What every member of a group shares; members meet only when all of it (and the group label) agrees."""

    prompt: str
    reference: str | None
    model: str  # resolved provider:model
    k: int | None  # None: the service's default for the group's size (``group_k``)
    tenant: str = ""  # the calling key's name: different keys' samples are never judged together
    max_calls: int | None = None  # past one window: the group's call budget (None: its rounds')

    def key(self, label: str) -> str:
        parts = [label, self.prompt, self.reference, self.model, self.k, self.tenant, self.max_calls]
        return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a member has no reward: the error kind the judgment failed with or was refused with (the HTTP edge's table
    gives its status)."""

    kind: str
    detail: str
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class MemberOutcome:
    """What the judge said about one distinct response of a group (shared by every member that gave it)."""

    group_size: int  # members judged together, identical responses included
    candidates: int  # distinct responses the judge compared
    scoring: Scoring
    k: int
    prompt_version: str
    score: float | None = None  # the judge's mean 0–100 score over the permutations
    consensus: float | None = None  # 0–100; None when scored pointwise
    borda: float | None = None
    top_vote: float | None = None
    rank: int | None = None  # 1 = best consensus in the group; None when scored pointwise
    winner: bool | None = None
    order_sensitive: bool | None = None
    failure: Failure | None = None
    stopped: str | None = None  # "deadline": the caller's deadline cut the group's judgment (a partial consensus)

    def reward(self, mode: RewardMode) -> float | None:
        """The reward in 0–1 for ``mode`` (see the module docstring); None when the judgment failed."""
        if self.failure is not None or self.score is None:
            return None
        if self.scoring == "pointwise":
            value = self.score / 100
        else:
            picked = {"consensus": self.consensus, "borda": self.borda, "win": self.top_vote}[mode]
            assert picked is not None
            value = picked if mode == "win" else picked / 100
        return round(min(1.0, max(0.0, value)), 6)


@dataclass(frozen=True, slots=True)
class GroupUsage:
    backend_calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None

    def __add__(self, other: GroupUsage) -> GroupUsage:
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return GroupUsage(
            self.backend_calls + other.backend_calls,
            self.cache_hits + other.cache_hits,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            round(sum(costs), 6) if costs else None,
        )


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    """Every distinct response's outcome (by ``digest``) and what judging the group used; JSON for Redis."""

    model: str
    outcomes: dict[str, MemberOutcome]
    usage: GroupUsage = field(default_factory=GroupUsage)

    def outcome(self, text: str) -> MemberOutcome | None:
        return self.outcomes.get(digest(text))

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, blob: str | bytes) -> GroupVerdict:
        data: dict[str, Any] = json.loads(blob)
        outcomes = {}
        for key, value in data["outcomes"].items():
            failure = value.pop("failure")
            outcomes[key] = MemberOutcome(**value, failure=_failure(failure) if failure else None)
        return cls(data["model"], outcomes, GroupUsage(**data["usage"]))


async def judge_group(
    judge: Judge, spec: GroupSpec, texts: Sequence[str], record: Recorder | None = None, watch: Watch = PLAIN
) -> GroupVerdict:
    """Judge the members' responses (duplicates allowed) as one group: past one window (PCFJ_MAX_CANDIDATES), in
    rounds of windows fitted onto one scale (``engine.window_runs``), so rewards compare across the whole group."""
    counts = Counter(texts)
    # Canonical candidate order: a group judged in any arrival order is the same task (same runs, cache keys and
    # rewards), and the order carries no information about the responses (digests, not texts, decide it).
    unique = sorted(counts, key=digest)
    outcomes, usage = await _judge_unique(judge, spec, unique, counts, record, watch)
    return GroupVerdict(spec.model, outcomes, usage)


def group_k(limits: RequestLimits, k: int | None, distinct: int) -> int:
    """A group's K: the request's, else PCFJ_DEFAULT_K in one window and PCFJ_WINDOW_ROUNDS (rounds) past it."""
    if k is not None:
        return k
    return limits.default_k if distinct <= limits.max_candidates else limits.window_rounds


async def _judge_unique(
    judge: Judge, spec: GroupSpec, texts: list[str], counts: Counter[str], record: Recorder | None, watch: Watch
) -> tuple[dict[str, MemberOutcome], GroupUsage]:
    n = len(texts)
    k = group_k(judge.settings.limits, spec.k, n)
    style = judge.style(None, by_default=False)  # rewards are numbers: no rationales unless PCFJ_RATIONALES says
    base = MemberOutcome(
        group_size=sum(counts[t] for t in texts),
        candidates=n,
        scoring="group" if n > 1 else "pointwise",
        k=min(k, perms.max_k(n)) if n <= judge.settings.limits.max_candidates else k,
        prompt_version=listwise_version(spec.reference, style),
    )
    ids = [str(i) for i in range(n)]
    windows = WindowOptions() if n > judge.settings.limits.max_candidates else None  # rewards: the whole order matters
    budget = Budget(spec.max_calls) if windows is not None and spec.max_calls is not None else None
    task = ListwiseTask(
        spec.prompt, ids, texts, k=k, model=spec.model, reference=spec.reference, style=style, windows=windows,
        budget=budget,
    )  # fmt: skip
    try:
        judgment = judge.listwise(task, watch)
        result = await (judgment if record is None else record(judgment))
    except (JudgingFailed, Refusal) as exc:
        failure = Failure(exc.kind, exc.detail, exc.retry_after)
        return {digest(t): replace(base, failure=failure) for t in texts}, GroupUsage()
    usage = GroupUsage(
        result.backend_calls,
        result.cache_hits,
        result.usage.input_tokens,
        result.usage.output_tokens,
        result.usage.cached_tokens,
        result.cost_usd,
    )
    return {digest(t): _scored(base, result, cid) for cid, t in zip(ids, texts, strict=True)}, usage


def _scored(base: MemberOutcome, result: ListwiseResult, cid: str) -> MemberOutcome:
    stats = result.consensus.candidates[cid]
    group = base.scoring == "group"
    return replace(
        base,
        k=result.k,
        score=round(stats.mean_score, 4),
        consensus=round(stats.consensus, 4) if group else None,
        borda=round(stats.borda, 4) if group else None,
        top_vote=round(stats.top_vote, 4) if group else None,
        rank=result.consensus.ranking.index(cid) + 1 if group else None,
        winner=cid in result.consensus.winners if group else None,
        order_sensitive=result.order_sensitive,
        stopped="deadline" if result.stopped == "deadline" else None,
    )


def _failure(stored: dict[str, Any]) -> Failure:
    """A member's failure as another replica stored it (one of an older version also kept its ``status``)."""
    return Failure(stored["kind"], stored["detail"], stored.get("retry_after"))
