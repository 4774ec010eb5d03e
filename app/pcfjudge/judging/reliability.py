"""What calibration measured of each judge model, and what a jury makes of it: weights and effective jurors. Pure.

A ``Reliability`` record is written by ``pcfjudge calibrate`` (the lab's ``pcfjudge_lab/calibrate``) per model and
prompt version: on a pinned slice of the lab's bundled JudgeBench and RewardBench 2 items, PCFJudge with K
permutations; ``errors`` holds one 0/1 per item (1: the consensus winner was wrong), in the slice's item order, so
two records of the same slice give the jurors' error correlation.

Weights (``PCFJ_JURY_WEIGHTS=calibrated``): the log-odds of each juror's accuracy, ω_j ∝ max(0, ln(p_j / (1 − p_j)))
with p_j = (correct + 1) / (items + 2) (Laplace: no juror is certain after a finite slice). For independent jurors
voting on two options this is the optimal weighted majority (Nitzan & Paroush 1982); a juror at or below chance gets
no weight. All weights zero (or any juror uncalibrated) → equal weights, and the response says so.

Effective jurors (Kish's design effect for a weighted mean of correlated estimates): with error correlations ρ_jk
(ρ_jj = 1, negative values taken as 0 so a jury is never worth more than its size)
    J_eff = (Σ_j ω_j)² / Σ_j Σ_k ω_j ω_k ρ_jk,
which is J / (1 + (J − 1)·ρ̄) for equal weights and one common ρ̄: three jurors whose errors correlate at 0.5 are
worth 1.5 independent ones.

Drift (``judging/drift.py``): a record re-measured on its baseline's slice carries the comparison (``drift``, one
``Shift`` per measure, and ``baseline_at``); a record with ``baseline_at`` None is a baseline itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from pcfjudge.judging.drift import Shift, accuracy_shift, first_position_shift

DriftState = Literal["baseline", "stable", "drift"]


@dataclass(frozen=True, slots=True)
class Reliability:
    """One model's calibration under one prompt version."""

    model: str
    prompt_version: str
    slice: str  # the pinned slice's name and hash: records of different slices are not compared
    items: int
    correct: int
    order_consistency: float  # share of items whose K runs all put the same top set first
    first_position_win_rate: float  # share of successful runs whose top choice was shown first
    runs: int  # successful runs behind first_position_win_rate
    first_position_wins: int
    errors: tuple[int, ...] = field(default=(), repr=False)
    measured_at: float = 0.0  # Unix time
    k: int = 0  # permutations asked for per item (a pair has only two orders)
    drift: tuple[Shift, ...] = ()  # against the slice's baseline (empty: this record is the baseline)
    baseline_at: float | None = None  # measured_at of that baseline; None: this record is a baseline

    @property
    def accuracy(self) -> float:
        return self.correct / self.items if self.items else 0.0

    @property
    def drift_state(self) -> DriftState:
        if self.baseline_at is None:
            return "baseline"
        return "drift" if any(s.drift for s in self.drift) else "stable"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["errors"] = list(self.errors)
        data["drift"] = [asdict(s) for s in self.drift]
        data["accuracy"] = round(self.accuracy, 4)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reliability:
        """The record ``as_dict`` wrote (unknown keys ignored); TypeError/ValueError/KeyError on a malformed one."""
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        values["errors"] = tuple(int(e) for e in values.get("errors", ()))
        values["drift"] = tuple(values.get("drift", ()))
        if values["drift"]:
            values["drift"] = tuple(Shift(**s) for s in values["drift"])
        return cls(**values)


def compared(baseline: Reliability, current: Reliability, *, alpha: float, min_points: float) -> Reliability:
    """``current`` with its drift against ``baseline`` (the same model, prompt version and slice): accuracy by
    McNemar on the paired per-item errors, first-position win rate by the two-proportion z-test."""
    if (baseline.model, baseline.prompt_version, baseline.slice) != (
        current.model,
        current.prompt_version,
        current.slice,
    ):
        raise ValueError("a record is compared only with the baseline of its own model, prompt version and slice")

    shifts = [
        accuracy_shift(baseline.errors, current.errors, alpha=alpha, min_points=min_points),
        first_position_shift(
            (baseline.first_position_wins, baseline.runs),
            (current.first_position_wins, current.runs),
            alpha=alpha,
            min_points=min_points,
        ),
    ]
    return replace(current, drift=tuple(s for s in shifts if s is not None), baseline_at=baseline.measured_at)


def log_odds_weight(record: Reliability) -> float:
    """max(0, ln(p / (1 − p))) with the Laplace-smoothed accuracy p = (correct + 1) / (items + 2)."""
    p = (record.correct + 1) / (record.items + 2)
    return max(0.0, math.log(p / (1 - p)))


def jury_weights(records: Sequence[Reliability | None]) -> tuple[list[float], bool]:
    """Normalised weights for jurors with these records, and whether they are calibrated (else equal)."""
    n = len(records)
    raw = [log_odds_weight(r) for r in records if r is not None]
    if len(raw) < n or sum(raw) <= 0:
        return [1.0 / n] * n, False
    total = sum(raw)
    return [w / total for w in raw], True


def error_correlation(a: Reliability, b: Reliability) -> float | None:
    """The phi coefficient of two records' per-item errors on the same slice; None when they cannot be compared
    (another slice, or either model never or always wrong)."""
    if a.slice != b.slice or len(a.errors) != len(b.errors) or not a.errors:
        return None
    n = len(a.errors)
    ma, mb = sum(a.errors) / n, sum(b.errors) / n
    va, vb = ma * (1 - ma), mb * (1 - mb)
    if va <= 0 or vb <= 0:
        return None
    cov = sum(x * y for x, y in zip(a.errors, b.errors, strict=True)) / n - ma * mb
    return round(cov / math.sqrt(va * vb), 4)


def effective_jurors(weights: Sequence[float], correlation: Sequence[Sequence[float]]) -> float:
    """Kish's effective number: (Σ ω)² / ΣΣ ω_j ω_k max(0, ρ_jk), with ρ_jj = 1."""
    total = sum(weights) ** 2
    spread = sum(
        wj * wk * (1.0 if j == k else max(0.0, correlation[j][k]))
        for j, wj in enumerate(weights)
        for k, wk in enumerate(weights)
    )
    return round(total / spread, 3) if spread > 0 else float(len(weights))


def correlation_matrix(records: Sequence[Reliability | None]) -> list[list[float]] | None:
    """Every pair's error correlation, or None when any pair cannot be compared."""
    n = len(records)
    matrix = [[1.0] * n for _ in range(n)]
    for j in range(n):
        for k in range(j + 1, n):
            a, b = records[j], records[k]
            rho = error_correlation(a, b) if a is not None and b is not None else None
            if rho is None:
                return None
            matrix[j][k] = matrix[k][j] = rho
    return matrix


class Book:
    """The records the service judges with: the latest per (model, prompt version), replaced whole on reload."""

    def __init__(self, records: Sequence[Reliability] = ()) -> None:
        self.records: dict[tuple[str, str], Reliability] = {}
        self.replace(records)

    def replace(self, records: Sequence[Reliability]) -> None:
        latest: dict[tuple[str, str], Reliability] = {}
        for record in records:
            key = (record.model, record.prompt_version)
            if key not in latest or record.measured_at >= latest[key].measured_at:
                latest[key] = record
        self.records = latest

    def get(self, model: str, prompt_version: str) -> Reliability | None:
        return self.records.get((model, prompt_version))
