"""Plain data shared by the judging core: what one judge run says about each candidate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
    """One successful run, already mapped back to original candidate ids."""

    judgments: dict[str, CandidateJudgment]
    rank_source: RankSource = "judge"


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of backend calls; ``cached_tokens`` counts prompt tokens served from a provider cache."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
        )


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
    usage: Usage = field(default_factory=Usage)
