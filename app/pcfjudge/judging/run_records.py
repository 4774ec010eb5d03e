"""Plain data shared by the judging core: what one judge run says about each candidate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pcfjudge.types import Usage

_NO_USAGE = Usage()

RankSource = Literal["judge", "scores"]


@dataclass(frozen=True, slots=True)
class CandidateJudgment:
    """The five per-candidate outputs of one listwise run (paper §3.2), plus the run's rank for it."""

    score: float
    rank: float
    major_error: bool
    hallucinated_specificity: bool
    calibrated_uncertainty: bool
    rationale: str = ""


@dataclass(frozen=True, slots=True)
class RunJudgments:
    """One successful run, already mapped back to original candidate ids; ``top``: its top set when the maker
    computed it once (``consensus.top_set`` computes it otherwise)."""

    judgments: dict[str, CandidateJudgment]
    rank_source: RankSource = "judge"
    top: tuple[str, ...] | None = field(default=None, compare=False, repr=False)


@dataclass(slots=True)
class RunRecord:
    """One planned run of a request and what became of it (a failed run has ``error`` and no judgments)."""

    execution: int
    index: int
    order: list[str]
    sample: int
    result: RunJudgments | None = None
    error: str | None = None
    cached: bool = False
    latency_ms: float = 0.0
    usage: Usage = _NO_USAGE  # immutable: shared by every run that spent nothing
    model: str | None = None  # a jury's run: the juror that made it
