"""A jury of judge models in one consensus (docs/method.md "Juries"): pure pooling and agreement statistics.

Each juror j judges the item on its own (PCFJudge over its own K permutations, or APOCJudge) and the jury pools the
jurors' results with weights ω_j ≥ 0, Σ ω_j = 1 (equal, or from calibration: ``judging/reliability.py``).

Listwise (paper Eq. 1–5 extended): every per-candidate component of the jury is the weighted mean of the jurors'
    mean_score_i = Σ_j ω_j · mean_score_i^j,  borda_i, top_vote_i, uncertainty_i and the flags alike,
and since Eq. 5 is linear the jury's consensus is both Eq. 5 of the pooled components and Σ_j ω_j · consensus_i^j.
With equal weights and every juror's K runs successful this is Eq. 1–5 over the union of all J·K runs. Winners are
the candidates within the 0.5-point tie tolerance of the best pooled consensus; the ranking sorts by it (input order
breaks exact ties), as for one judge.

Pairwise: each juror's APOCJudge decision (A, B or tie) is a vote of weight ω_j; the jury's winner is the verdict
with the largest total weight, and a tie between the two largest totals (within 1e-9) is the verdict "tie".
``preference_a`` pools as Σ_j ω_j · preference_a^j.

Agreement: Kendall's W over the jurors' rankings (tie-corrected), each juror's Spearman ρ with the jury's consensus
and whether its winners meet the jury's; Fleiss' κ over the jurors' verdicts (subjects: the orders every juror
judged, raters: jurors). The number of independent jurors the jury is worth is ``reliability.effective_jurors``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from pcfjudge.judging import consensus as cons

EPSILON = 1e-9
V = TypeVar("V", bound=str)


@dataclass(slots=True)
class JurorReport:
    """One juror's own result and how it sits with the jury's."""

    model: str
    weight: float
    delivered: bool
    error: str | None = None  # why it did not deliver
    failure: str | None = None  # what kind of failure (engine.failures.JudgingFailed's kind)
    winners: list[str] | None = None  # listwise: its winner set; pairwise: [its winner]
    decision: str | None = None  # pairwise: the APOCJudge rule behind its verdict
    scores: dict[str, float] | None = None  # listwise: its consensus per candidate
    agreement: float | None = None  # listwise: Spearman's ρ with the jury's consensus
    agrees: bool | None = None  # winners meet the jury's (pairwise: the same verdict)
    backend_calls: int = 0
    cache_hits: int = 0
    runs_ok: int = 0
    runs: int = 0
    first_position_wins: int = 0  # listwise: successful runs whose top choice was shown first
    cost_usd: float | None = None  # its runs' usage at its price (None: unpriced)


@dataclass(slots=True)
class JuryReport:
    name: str
    jurors: list[JurorReport]
    weights: str  # "equal" or "calibrated"
    quorum: int
    kendalls_w: float | None = None  # listwise
    fleiss_kappa: float | None = None  # pairwise
    effective_jurors: float | None = None  # None: the jurors' error correlation was never measured
    degraded: bool = field(init=False)

    def __post_init__(self) -> None:
        self.degraded = any(not j.delivered for j in self.jurors)


def equal_weights(n: int) -> list[float]:
    return [1.0 / n] * n


def pool_listwise(ids: Sequence[str], jurors: Sequence[cons.Consensus], weights: Sequence[float]) -> cons.Consensus:
    """The jury's consensus: every component the ``weights``-weighted mean of the jurors' (weights sum to 1)."""
    if not jurors or len(jurors) != len(weights):
        raise ValueError("one weight per juror, and at least one juror")
    total = sum(weights)
    if total <= 0:
        raise ValueError("jury weights must not all be zero")
    shares = [w / total for w in weights]
    candidates: dict[str, cons.CandidateConsensus] = {}
    for cid in ids:
        columns = zip(*(j.candidates[cid].as_dict().values() for j in jurors), strict=True)
        candidates[cid] = cons.CandidateConsensus(
            *(sum(w * v for w, v in zip(shares, c, strict=True)) for c in columns)
        )
    scores = {cid: c.consensus for cid, c in candidates.items()}
    position = {cid: i for i, cid in enumerate(ids)}
    ranking = sorted(ids, key=lambda cid: (-scores[cid], position[cid]))
    return cons.Consensus(candidates, cons.within_tolerance_of_max(scores), ranking)


def pool_verdicts(verdicts: Sequence[V], weights: Sequence[float]) -> V | Literal["tie"]:
    """The jury's pairwise verdict: the one with the most weight; the two heaviest level → "tie"."""
    if not verdicts or len(verdicts) != len(weights):
        raise ValueError("one weight per juror, and at least one juror")
    totals: dict[V, float] = {}
    for verdict, weight in zip(verdicts, weights, strict=True):
        totals[verdict] = totals.get(verdict, 0.0) + weight
    ordered = sorted(totals.items(), key=lambda kv: -kv[1])
    if len(ordered) > 1 and ordered[0][1] - ordered[1][1] <= EPSILON:
        return "tie"
    return ordered[0][0]


def weighted_mean(values: Sequence[float | None], weights: Sequence[float]) -> float | None:
    """Σ ω_j v_j over the jurors that have a value, renormalised; None when none has."""
    pairs = [(v, w) for v, w in zip(values, weights, strict=True) if v is not None]
    total = sum(w for _, w in pairs)
    return round(sum(v * w for v, w in pairs) / total, 4) if pairs and total > 0 else None


def kendalls_w(scores: Sequence[Mapping[str, float]]) -> float | None:
    """Kendall's coefficient of concordance of m jurors ranking the same n candidates by ``scores`` (higher is
    better), with the standard correction for ties: W = 12·S / (m²(n³ − n) − m·Σ T), T = Σ_groups (t³ − t);
    1 = every juror ranks alike, 0 = no agreement. None with fewer than two jurors or candidates, or when every juror
    ties everything (the denominator is zero)."""
    m = len(scores)
    if m < 2:
        return None
    ids = list(scores[0])
    n = len(ids)
    if n < 2:
        return None
    ranks = [cons.ranks_from_scores(s) for s in scores]
    sums = [sum(r[cid] for r in ranks) for cid in ids]
    mean = m * (n + 1) / 2
    s = sum((total - mean) ** 2 for total in sums)
    ties = sum(_tie_term(r) for r in ranks)
    denominator = m * m * (n**3 - n) - m * ties
    return round(min(1.0, 12 * s / denominator), 4) if denominator > 0 else None


def _tie_term(ranks: Mapping[str, float]) -> float:
    counts: dict[float, int] = {}
    for rank in ranks.values():
        counts[rank] = counts.get(rank, 0) + 1
    return float(sum(t**3 - t for t in counts.values()))


def spearman(x: Mapping[str, float], y: Mapping[str, float]) -> float | None:
    """Spearman's ρ (average ranks for ties) between two score maps over the same ids; None when either is constant."""
    ids = list(x)
    if len(ids) < 2:
        return None
    rx, ry = cons.ranks_from_scores(x), cons.ranks_from_scores(y)
    a, b = [rx[i] for i in ids], [ry[i] for i in ids]
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((p - ma) * (q - mb) for p, q in zip(a, b, strict=True))
    va, vb = sum((p - ma) ** 2 for p in a), sum((q - mb) ** 2 for q in b)
    return round(cov / math.sqrt(va * vb), 4) if va > 0 and vb > 0 else None


def fleiss_kappa(subjects: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' κ: ``subjects[s]`` holds every rater's category for subject s (the same number of raters each).
    κ = (P̄ − P_e) / (1 − P_e); when P_e = 1 (every rating the same category) κ is 1 if the raters agree (they
    do). None with fewer than two raters or no subjects."""
    if not subjects:
        return None
    raters = len(subjects[0])
    if raters < 2 or any(len(s) != raters for s in subjects):
        return None
    totals: dict[str, int] = {}
    agreement = 0.0
    for ratings in subjects:
        counts: dict[str, int] = {}
        for category in ratings:
            counts[category] = counts.get(category, 0) + 1
            totals[category] = totals.get(category, 0) + 1
        agreement += (sum(c * c for c in counts.values()) - raters) / (raters * (raters - 1))
    p_bar = agreement / len(subjects)
    p_e = sum((t / (raters * len(subjects))) ** 2 for t in totals.values())
    if p_e >= 1 - EPSILON:
        return 1.0
    return round((p_bar - p_e) / (1 - p_e), 4)


def quorum(jurors: int, share: float | None) -> int:
    """Jurors that must deliver: a strict majority by default, else ceil(share · jurors) (at least one)."""
    return jurors // 2 + 1 if share is None else max(1, math.ceil(share * jurors - 1e-9))
