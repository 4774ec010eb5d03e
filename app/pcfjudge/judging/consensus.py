"""Permutation consensus, exactly paper Eq. 1–5: pure functions over runs already mapped to original ids.

For the successful runs of one execution (K runs, n candidates):
  mean_score_i  = (1/K) Σ_r s_i                                   (Eq. 1, 0–100)
  borda_i       = 100 / (K (n−1)) · Σ_r (n − rank_i)              (Eq. 2, 0–100; rank 1 = best)
  top_vote_i    = (1/K) Σ_r 1[i ∈ T_r] / |T_r|                    (Eq. 3, 0–1; T_r = scores within 0.5 of the top)
  uncertainty_i = (1/K) Σ_r 1[i marked calibrated uncertainty]    (Eq. 4, 0–1)
  consensus_i   = w_s·mean_score + w_B·borda + w_v·100·top_vote + w_u·100·uncertainty   (Eq. 5)
With E executions every component and the consensus are the mean over executions that have a successful run.
Winners are all candidates within 0.5 of the best consensus (ties kept). Major-error and
hallucinated-specificity flags are reported as shares of runs but never enter the consensus (paper §3.3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments

TIE_TOLERANCE = 0.5
_WEIGHT_KEYS = ("score", "borda", "top_vote", "uncertainty")


@dataclass(frozen=True, slots=True)
class Weights:
    """Consensus weights on mean score, Borda rank, top vote and calibrated uncertainty."""

    score: float
    borda: float
    top_vote: float
    uncertainty: float

    def __post_init__(self) -> None:
        values = (self.score, self.borda, self.top_vote, self.uncertainty)
        if any(not math.isfinite(v) or v < 0 for v in values):
            raise ValueError("weights must be finite and non-negative")
        if not math.isclose(sum(values), 1.0, abs_tol=1e-6):
            raise ValueError(f"weights must sum to 1 (these sum to {sum(values):.6g})")

    def as_dict(self) -> dict[str, float]:
        return {key: getattr(self, key) for key in _WEIGHT_KEYS}


# Paper Table 3, in its order.
PRESETS: dict[str, Weights] = {
    "proposed": Weights(0.50, 0.25, 0.20, 0.05),
    "uniform": Weights(0.25, 0.25, 0.25, 0.25),
    "score_only": Weights(1.00, 0.00, 0.00, 0.00),
    "rank_only": Weights(0.00, 1.00, 0.00, 0.00),
    "top_vote_only": Weights(0.00, 0.00, 1.00, 0.00),
    "no_uncertainty": Weights(0.50, 0.27, 0.23, 0.00),
    "score_rank": Weights(0.50, 0.50, 0.00, 0.00),
    "score_top": Weights(0.60, 0.00, 0.40, 0.00),
}


def resolve_weights(spec: str | Mapping[str, float]) -> Weights:
    """A preset name or a {score, borda, top_vote, uncertainty} mapping; ValueError says how to fix it."""
    if isinstance(spec, str):
        if spec not in PRESETS:
            raise ValueError(f"unknown weight preset {spec!r}; use one of: {', '.join(PRESETS)}")
        return PRESETS[spec]
    keys = set(spec)
    if keys != set(_WEIGHT_KEYS):
        raise ValueError(f"weights must have exactly the keys {', '.join(_WEIGHT_KEYS)} (got {sorted(keys)})")
    return Weights(**{key: float(spec[key]) for key in _WEIGHT_KEYS})


@dataclass(frozen=True, slots=True)
class CandidateConsensus:
    """Aggregated statistics for one candidate (means over executions)."""

    consensus: float
    mean_score: float
    borda: float
    top_vote: float
    uncertainty: float
    major_error: float
    hallucinated_specificity: float

    def as_dict(self) -> dict[str, float]:
        """The statistics by field name, in declaration order."""
        return {name: getattr(self, name) for name in _CONSENSUS_FIELDS}


_CONSENSUS_FIELDS = tuple(f.name for f in fields(CandidateConsensus))


@dataclass(frozen=True, slots=True)
class Consensus:
    candidates: dict[str, CandidateConsensus]
    winners: list[str]
    ranking: list[str]


def top_set(run: RunJudgments) -> list[str]:
    """Candidates whose score is within 0.5 of the run's top score (the run's T_r), in id order of the run."""
    return list(run.top) if run.top is not None else list(tops_of(run.judgments))


def tops_of(judgments: Mapping[str, CandidateJudgment]) -> tuple[str, ...]:
    """``top_set`` of a run's judgments."""
    best = max(j.score for j in judgments.values())
    return tuple(cid for cid, j in judgments.items() if j.score >= best - TIE_TOLERANCE)


def within_tolerance_of_max(values: Mapping[str, float]) -> list[str]:
    """Every key whose value is within the 0.5-point tie tolerance of the maximum."""
    best = max(values.values())
    return [key for key, value in values.items() if value >= best - TIE_TOLERANCE]


def execution_stats(ids: Sequence[str], runs: Sequence[RunJudgments], weights: Weights) -> dict[str, list[float]]:
    """Eq. 1–5 for one execution: id -> [consensus, mean, borda, top_vote, uncertainty, major, halluc]."""
    k, n = len(runs), len(ids)
    if k == 0:
        raise ValueError("an execution needs at least one successful run")
    sums = {cid: [0.0] * 6 for cid in ids}
    for run in runs:
        tops = top_set(run)
        share = 1.0 / len(tops)
        for cid, j in run.judgments.items():
            acc = sums[cid]
            acc[0] += j.score
            acc[1] += n - j.rank
            if cid in tops:
                acc[2] += share
            acc[3] += j.calibrated_uncertainty
            acc[4] += j.major_error
            acc[5] += j.hallucinated_specificity
    out: dict[str, list[float]] = {}
    for cid in ids:
        s, rank_sum, votes, unc, major, hall = sums[cid]
        mean_score = s / k
        borda = 100.0 * rank_sum / (k * (n - 1)) if n > 1 else 100.0
        top_vote = votes / k
        uncertainty = unc / k
        consensus = (
            weights.score * mean_score
            + weights.borda * borda
            + weights.top_vote * 100.0 * top_vote
            + weights.uncertainty * 100.0 * uncertainty
        )
        out[cid] = [consensus, mean_score, borda, top_vote, uncertainty, major / k, hall / k]
    return out


def aggregate(ids: Sequence[str], executions: Sequence[Sequence[RunJudgments]], weights: Weights) -> Consensus:
    """Consensus over executions (each a list of successful runs); empty executions are skipped."""
    per_exec = [execution_stats(ids, runs, weights) for runs in executions if runs]
    if not per_exec:
        raise ValueError("no successful runs to aggregate")
    candidates: dict[str, CandidateConsensus] = {}
    for cid in ids:
        if len(per_exec) == 1:  # the mean of one value is the value
            candidates[cid] = CandidateConsensus(*per_exec[0][cid])
            continue
        means = [sum(column) / len(per_exec) for column in zip(*(stats[cid] for stats in per_exec), strict=True)]
        candidates[cid] = CandidateConsensus(*means)
    scores = {cid: c.consensus for cid, c in candidates.items()}
    winners = within_tolerance_of_max(scores)
    position = {cid: i for i, cid in enumerate(ids)}
    ranking = sorted(ids, key=lambda cid: (-scores[cid], position[cid]))
    return Consensus(candidates=candidates, winners=winners, ranking=ranking)


def ranks_from_scores(scores: Mapping[str, float]) -> dict[str, float]:
    """Competition ranks from scores, tied scores sharing the average of their positions (1 = best)."""
    ordered = sorted(scores, key=lambda cid: -scores[cid])
    ranks: dict[str, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and scores[ordered[j + 1]] == scores[ordered[i]]:
            j += 1
        for cid in ordered[i : j + 1]:
            ranks[cid] = (i + j) / 2 + 1
        i = j + 1
    return ranks
