"""The drift tests against values worked by hand: the exact McNemar test, the two-proportion z-test, and the rule
that drift needs both significance and a shift past the threshold."""

from __future__ import annotations

import math

import pytest
from pcfjudge.judging.drift import (
    MCNEMAR,
    Z_TEST,
    accuracy_shift,
    binomial_cdf_half,
    first_position_shift,
    is_drift,
    mcnemar_exact,
    normal_cdf,
    two_proportion_z,
)

# ── McNemar, exact ─────────────────────────────────────────────────────────────────────────────────────────────────


def test_binomial_tail_of_a_fair_coin() -> None:
    assert binomial_cdf_half(1, 10) == pytest.approx(11 / 1024)  # C(10,0) + C(10,1) = 1 + 10
    assert binomial_cdf_half(2, 14) == pytest.approx(106 / 16384)  # 1 + 14 + 91
    assert binomial_cdf_half(0, 6) == pytest.approx(1 / 64)
    assert binomial_cdf_half(-1, 5) == 0.0 and binomial_cdf_half(5, 5) == 1.0


def test_mcnemar_on_hand_worked_tables() -> None:
    # b = 1 right-then-wrong, c = 9 wrong-then-right: 2 · P(X ≤ 1), X ~ Bin(10, ½) = 2 · 11/1024
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024) == pytest.approx(0.021484375)
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9)  # two-sided: symmetric
    assert mcnemar_exact(0, 6) == pytest.approx(0.03125)  # 2 · (½)⁶
    assert mcnemar_exact(2, 12) == pytest.approx(212 / 16384)  # ≈ 0.0129
    assert mcnemar_exact(0, 8) == pytest.approx(2 / 256)  # ≈ 0.0078: the smallest with 8 discordant items
    assert mcnemar_exact(5, 5) == 1.0  # 2 · 638/1024 > 1: capped
    assert mcnemar_exact(0, 0) == 1.0  # no discordant item: no evidence of a change
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


def test_mcnemar_ignores_concordant_items() -> None:
    """Only the discordant pairs count: adding items both runs got right (or both wrong) changes nothing."""
    base, now = [0, 0, 1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0, 0, 0]  # b = 1, c = 6
    shift = accuracy_shift(base, now, alpha=0.01, min_points=5)
    padded = accuracy_shift([*base, 0, 0, 1], [*now, 0, 0, 1], alpha=0.01, min_points=5)
    assert shift is not None and padded is not None
    assert shift.p_value == padded.p_value == pytest.approx(2 * (1 + 7) / 128)  # 2 · P(X ≤ 1), X ~ Bin(7, ½)
    assert shift.test == MCNEMAR and shift.measure == "accuracy"
    assert (shift.baseline, shift.current) == (pytest.approx(2 / 8), pytest.approx(7 / 8))


def test_accuracy_shift_needs_the_same_items() -> None:
    assert accuracy_shift([0, 1], [0, 1, 1], alpha=0.01, min_points=5) is None
    assert accuracy_shift([], [], alpha=0.01, min_points=5) is None


# ── two proportions ────────────────────────────────────────────────────────────────────────────────────────────────


def test_normal_cdf_matches_the_table() -> None:
    assert normal_cdf(0) == 0.5
    assert normal_cdf(1.959963984540054) == pytest.approx(0.975, abs=1e-12)
    assert normal_cdf(-1.0) == pytest.approx(0.15865525393145707, abs=1e-12)
    assert normal_cdf(2.576) == pytest.approx(0.995, abs=1e-5)
    assert normal_cdf(-10) == pytest.approx(7.6198530241604696e-24, rel=1e-9)  # erfc keeps the far tail


def test_two_proportion_z_on_a_hand_worked_example() -> None:
    # 50/100 then 70/100: pooled 0.6, se = √(0.6 · 0.4 · (1/100 + 1/100)) = √0.0048, z = 0.2 / √0.0048 = 5/√3
    z, p = two_proportion_z(50, 100, 70, 100)
    assert z == pytest.approx(5 / math.sqrt(3))  # 2.8868
    assert p == pytest.approx(2 * (1 - normal_cdf(5 / math.sqrt(3))))
    assert p == pytest.approx(0.003892, abs=5e-6)
    z_down, p_down = two_proportion_z(70, 100, 50, 100)
    assert z_down == pytest.approx(-z) and p_down == pytest.approx(p)
    # 40/80 vs 44/80: pooled 0.525, se = √(0.525 · 0.475 · 2/80) ≈ 0.07896, z = 0.05 / 0.07896 ≈ 0.633
    z, p = two_proportion_z(40, 80, 44, 80)
    assert z == pytest.approx(0.05 / math.sqrt(0.525 * 0.475 * 2 / 80))
    assert p == pytest.approx(0.5266, abs=1e-3)


def test_two_proportion_z_degenerate_samples() -> None:
    assert two_proportion_z(0, 0, 3, 10) == (0.0, 1.0)  # no runs
    assert two_proportion_z(10, 10, 20, 20) == (0.0, 1.0)  # nothing varies
    with pytest.raises(ValueError):
        two_proportion_z(11, 10, 1, 10)


def test_first_position_shift() -> None:
    shift = first_position_shift((50, 100), (70, 100), alpha=0.01, min_points=5)
    assert shift is not None and shift.test == Z_TEST and shift.measure == "first_position_win_rate"
    assert shift.points == pytest.approx(20.0) and shift.drift
    assert first_position_shift((0, 0), (5, 10), alpha=0.01, min_points=5) is None


# ── significance AND size ──────────────────────────────────────────────────────────────────────────────────────────


def test_drift_needs_significance_and_a_shift_past_the_threshold() -> None:
    assert is_drift(0.001, 0.50, 0.70, alpha=0.01, min_points=5)
    assert not is_drift(0.02, 0.50, 0.70, alpha=0.01, min_points=5)  # large but not significant
    assert not is_drift(0.001, 0.50, 0.53, alpha=0.01, min_points=5)  # significant but small
    assert not is_drift(0.01, 0.50, 0.70, alpha=0.01, min_points=5)  # p must be below α
    assert not is_drift(0.001, 0.50, 0.55, alpha=0.01, min_points=5)  # exactly 5 points does not exceed 5
    assert is_drift(0.001, 0.70, 0.50, alpha=0.01, min_points=5)  # a fall counts like a rise


def test_a_large_paired_slice_drifts_a_small_one_does_not() -> None:
    """The same 10-point accuracy fall: 40 of 400 items right-then-wrong (none back) is drift; on 20 items
    (2 right-then-wrong) the exact test cannot tell it from chance (p = 0.5)."""
    big = accuracy_shift([0] * 400, [1] * 40 + [0] * 360, alpha=0.01, min_points=5)
    small = accuracy_shift([0] * 20, [1] * 2 + [0] * 18, alpha=0.01, min_points=5)
    assert big is not None and small is not None
    assert big.points == pytest.approx(-10.0) and big.drift and big.p_value == pytest.approx(2 / 2**40)
    assert small.points == pytest.approx(-10.0) and not small.drift and small.p_value == pytest.approx(0.5)
