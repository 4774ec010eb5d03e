"""Has a judge drifted since its baseline calibration? Two tests, each a pure function (standard library only).

``pcfjudge calibrate`` measures a model on a pinned slice and compares the record with the slice's baseline (the
first record of that model, prompt version and slice). A measure has drifted when BOTH
  * its test is significant: p < α (``PCFJ_DRIFT_ALPHA``, default 0.01), and
  * its shift exceeds the threshold: |current − baseline| > ``PCFJ_DRIFT_MIN_POINTS`` percentage points (default 5),
so a tiny but consistent change on a large slice, or a large but noisy one on a small slice, is not an alarm.

Accuracy, paired on the same items: the exact McNemar test. Of the items the two runs judged differently, b were
right at the baseline and wrong now, c wrong then and right now; under no change each such item is equally likely
to fall either way, so b ~ Bin(b + c, 1/2) and the two-sided p-value is
    p = min(1, 2 · P(X ≤ min(b, c))),  X ~ Bin(b + c, 1/2),
computed exactly (integers). Items both runs got right, or both wrong, say nothing about a change.

First-position win rate, the share of runs whose top choice was shown first: the two-proportion z-test (the runs
of the two calibrations as independent samples), with the pooled proportion p̂ = (x₁ + x₂) / (n₁ + n₂):
    z = (x₂/n₂ − x₁/n₁) / √(p̂ (1 − p̂) (1/n₁ + 1/n₂)),   p = 2 (1 − Φ(|z|)) = erfc(|z| / √2).
An item's K runs are not independent of each other (they share the item), so this p-value is somewhat too small;
the threshold on the shift is what keeps that from raising alarms on noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Measure = Literal["accuracy", "first_position_win_rate"]
MEASURES: tuple[Measure, ...] = ("accuracy", "first_position_win_rate")
MCNEMAR = "mcnemar-exact"
Z_TEST = "two-proportion-z"


@dataclass(frozen=True, slots=True)
class Shift:
    """One measure, compared with its baseline: the proportions, the test's p-value and whether it is drift."""

    measure: Measure
    baseline: float  # proportion, 0–1
    current: float
    p_value: float
    test: str  # MCNEMAR or Z_TEST
    drift: bool

    @property
    def points(self) -> float:
        """The shift in percentage points (current − baseline)."""
        return round(100.0 * (self.current - self.baseline), 6)


def binomial_cdf_half(k: int, n: int) -> float:
    """P(X ≤ k) for X ~ Bin(n, 1/2), exactly: Σ_{i ≤ k} C(n, i) / 2ⁿ (integer sums, one division)."""
    if n < 0:
        raise ValueError("n must be non-negative")
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    tail: int = sum(math.comb(n, i) for i in range(k + 1))
    return tail / (1 << n)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant items: min(1, 2 · P(X ≤ min(b, c))), X ~ Bin(b + c, ½).
    No discordant item gives 1."""
    if b < 0 or c < 0:
        raise ValueError("counts must be non-negative")
    if b + c == 0:
        return 1.0
    return min(1.0, 2.0 * binomial_cdf_half(min(b, c), b + c))


def normal_cdf(x: float) -> float:
    """Φ(x), the standard normal CDF: ½ · erfc(−x / √2) (accurate in both tails)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def two_proportion_z(x1: int, n1: int, x2: int, n2: int) -> tuple[float, float]:
    """(z, two-sided p) of the pooled two-proportion z-test of x1/n1 against x2/n2 (z > 0: the second is larger).

    An empty sample, or a pooled proportion of 0 or 1 (nothing varies), gives (0, 1)."""
    if not (0 <= x1 <= n1 and 0 <= x2 <= n2):
        raise ValueError("need 0 ≤ x ≤ n for both samples")
    if n1 == 0 or n2 == 0:
        return 0.0, 1.0
    pooled = (x1 + x2) / (n1 + n2)
    variance = pooled * (1 - pooled) * (1 / n1 + 1 / n2)
    if variance <= 0:
        return 0.0, 1.0
    z = (x2 / n2 - x1 / n1) / math.sqrt(variance)
    return z, min(1.0, math.erfc(abs(z) / math.sqrt(2.0)))


def is_drift(p_value: float, baseline: float, current: float, *, alpha: float, min_points: float) -> bool:
    """Significant (p < α) AND larger than the threshold (|shift| > ``min_points`` percentage points)."""
    shift = abs(round(100.0 * (current - baseline), 6))  # rounded: 0.55 − 0.50 is 5 points, not 5.000000000000004
    return p_value < alpha and shift > min_points


def accuracy_shift(
    baseline_errors: Sequence[int], current_errors: Sequence[int], *, alpha: float, min_points: float
) -> Shift | None:
    """Accuracy now against the baseline, paired item by item (exact McNemar); None when the two are not the same
    items (different lengths) or there are none."""
    if len(baseline_errors) != len(current_errors) or not baseline_errors:
        return None
    pairs = list(zip(baseline_errors, current_errors, strict=True))
    b = sum(1 for then, now in pairs if not then and now)  # right at the baseline, wrong now
    c = sum(1 for then, now in pairs if then and not now)  # wrong then, right now
    n = len(pairs)
    before = 1 - sum(1 for e in baseline_errors if e) / n
    after = 1 - sum(1 for e in current_errors if e) / n
    p = mcnemar_exact(b, c)
    drift = is_drift(p, before, after, alpha=alpha, min_points=min_points)
    return Shift("accuracy", before, after, p, MCNEMAR, drift)


def first_position_shift(
    baseline: tuple[int, int], current: tuple[int, int], *, alpha: float, min_points: float
) -> Shift | None:
    """First-position win rate now against the baseline, each given as (wins, runs); None without runs."""
    (x1, n1), (x2, n2) = baseline, current
    if n1 == 0 or n2 == 0:
        return None
    _, p = two_proportion_z(x1, n1, x2, n2)
    before, after = x1 / n1, x2 / n2
    return Shift(
        "first_position_win_rate",
        before,
        after,
        p,
        Z_TEST,
        is_drift(p, before, after, alpha=alpha, min_points=min_points),
    )
