"""Calibration records and what a jury makes of them, against hand-worked values: log-odds weights (Laplace),
the phi coefficient of per-item errors, Kish's effective jurors, the book's latest record, and the drift
comparison a record carries (and keeps through its JSON form)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from pcfjudge.judging.reliability import (
    Book,
    Reliability,
    compared,
    correlation_matrix,
    effective_jurors,
    error_correlation,
    jury_weights,
    log_odds_weight,
)


def record(model: str = "sim:default", errors: tuple[int, ...] = (0, 1, 0, 0), **fields: object) -> Reliability:
    values: dict[str, object] = {
        "model": model,
        "prompt_version": "listwise-v2",
        "slice": "pinned-v1/4x5/abc",
        "items": len(errors),
        "correct": len(errors) - sum(errors),
        "order_consistency": 0.75,
        "first_position_win_rate": 0.5,
        "runs": 20,
        "first_position_wins": 10,
        "errors": errors,
        "measured_at": 1000.0,
        "k": 5,
    }
    return Reliability(**(values | fields))  # type: ignore[arg-type]


# ── weights ────────────────────────────────────────────────────────────────────────────────────────────────────────


def test_log_odds_weight_is_laplace_smoothed() -> None:
    # 8 of 10 right: p = 9/12 = 0.75, ln(0.75/0.25) = ln 3
    assert log_odds_weight(record(errors=(0,) * 8 + (1,) * 2)) == pytest.approx(math.log(3))
    # never wrong on 2 items: p = 3/4, not 1: a finite weight
    assert log_odds_weight(record(errors=(0, 0))) == pytest.approx(math.log(3))
    # at chance (p = 1/2) or below: no weight
    assert log_odds_weight(record(errors=(0, 1))) == 0.0
    assert log_odds_weight(record(errors=(1, 1, 1))) == 0.0


def test_jury_weights_normalise_the_log_odds() -> None:
    strong = record("a", errors=(0,) * 8 + (1,) * 2)  # ln 3
    weak = record("b", errors=(0,) * 6 + (1,) * 4)  # p = 7/12: ln(7/5)
    weights, calibrated = jury_weights([strong, weak])
    assert calibrated
    total = math.log(3) + math.log(7 / 5)
    assert weights == pytest.approx([math.log(3) / total, math.log(7 / 5) / total])


def test_jury_weights_fall_back_to_equal() -> None:
    assert jury_weights([record("a"), None]) == ([0.5, 0.5], False)  # one juror uncalibrated
    chance = record("a", errors=(0, 1))
    assert jury_weights([chance, chance, chance]) == ([pytest.approx(1 / 3)] * 3, False)  # all at chance


# ── error correlation ──────────────────────────────────────────────────────────────────────────────────────────────


def test_phi_of_per_item_errors() -> None:
    # a = 1100, b = 1010: n11 = 1, means ½ and ½: cov = 1/4 − 1/4 = 0 → phi 0
    assert error_correlation(record("a", errors=(1, 1, 0, 0)), record("b", errors=(1, 0, 1, 0))) == 0.0
    assert error_correlation(record("a", errors=(1, 1, 0, 0)), record("b", errors=(1, 1, 0, 0))) == 1.0
    assert error_correlation(record("a", errors=(1, 1, 0, 0)), record("b", errors=(0, 0, 1, 1))) == -1.0
    # a = 11100, b = 11000: n11 = 2, ma = 3/5, mb = 2/5: cov = 2/5 − 6/25 = 4/25, phi = (4/25) / √(6/25 · 6/25) = 2/3
    phi = error_correlation(record("a", errors=(1, 1, 1, 0, 0)), record("b", errors=(1, 1, 0, 0, 0)))
    assert phi == pytest.approx(2 / 3, abs=1e-4)


def test_phi_needs_the_same_slice_and_some_variation() -> None:
    a = record("a", errors=(1, 0, 1, 0))
    assert error_correlation(a, replace(record("b", errors=(1, 0, 0, 1)), slice="other")) is None
    assert error_correlation(a, record("b", errors=(0, 0, 0, 0))) is None  # never wrong: no variance
    assert error_correlation(a, record("b", errors=(1, 0, 1))) is None
    assert correlation_matrix([a, None]) is None
    assert correlation_matrix([a, record("b", errors=(1, 0, 1, 0))]) == [[1.0, 1.0], [1.0, 1.0]]


# ── effective jurors ───────────────────────────────────────────────────────────────────────────────────────────────


def test_three_jurors_at_rho_half_are_worth_one_and_a_half() -> None:
    third = [1 / 3] * 3
    rho = [[1, 0.5, 0.5], [0.5, 1, 0.5], [0.5, 0.5, 1]]
    assert effective_jurors(third, rho) == pytest.approx(1.5)  # 3 / (1 + 2 · 0.5)
    assert effective_jurors(third, [[1, 0, 0], [0, 1, 0], [0, 0, 1]]) == pytest.approx(3.0)
    assert effective_jurors(third, [[1, 1, 1], [1, 1, 1], [1, 1, 1]]) == pytest.approx(1.0)
    # negative correlations count as 0: never more than the jury's size
    assert effective_jurors([0.5, 0.5], [[1, -0.8], [-0.8, 1]]) == pytest.approx(2.0)
    # unequal weights, independent: (Σω)² / Σω² = 1 / (0.64 + 0.01 + 0.01) = 1.515
    assert effective_jurors([0.8, 0.1, 0.1], [[1, 0, 0], [0, 1, 0], [0, 0, 1]]) == pytest.approx(1.515)


# ── the book ───────────────────────────────────────────────────────────────────────────────────────────────────────


def test_the_book_keeps_the_latest_record_per_model_and_prompt_version() -> None:
    old = record("a", measured_at=100.0)
    new = record("a", errors=(1, 1, 1, 1), measured_at=200.0)
    other_version = replace(record("a", measured_at=50.0), prompt_version="listwise-v1")
    book = Book([new, old, other_version, record("b")])
    assert book.get("a", "listwise-v2") is new  # the later one, in whatever order the store gave them
    assert book.get("a", "listwise-v1") is other_version
    assert book.get("c", "listwise-v2") is None
    book.replace([old])  # replaced whole: b is gone
    assert book.get("a", "listwise-v2") is old and book.get("b", "listwise-v2") is None


# ── drift carried by a record ──────────────────────────────────────────────────────────────────────────────────────


def test_compared_records_carry_their_drift_and_survive_json() -> None:
    baseline = record("a", errors=(0,) * 40, runs=100, first_position_wins=50, measured_at=10.0)
    assert baseline.drift_state == "baseline"
    later = record("a", errors=(1,) * 12 + (0,) * 28, runs=100, first_position_wins=80, measured_at=20.0)
    now = compared(baseline, later, alpha=0.01, min_points=5)
    assert now.baseline_at == 10.0 and now.drift_state == "drift"
    by_measure = {s.measure: s for s in now.drift}
    assert by_measure["accuracy"].p_value == pytest.approx(2 / 2**12) and by_measure["accuracy"].drift
    assert by_measure["first_position_win_rate"].drift
    assert Reliability.from_dict(now.as_dict()) == now
    same = compared(baseline, replace(baseline, measured_at=30.0), alpha=0.01, min_points=5)
    assert same.drift_state == "stable" and all(s.p_value == 1.0 for s in same.drift)
    with pytest.raises(ValueError):
        compared(baseline, replace(later, slice="another"), alpha=0.01, min_points=5)


def test_records_without_the_new_fields_still_load() -> None:
    data = record().as_dict()
    for name in ("k", "drift", "baseline_at", "accuracy"):
        data.pop(name)
    loaded = Reliability.from_dict(data | {"unknown": 1})
    assert loaded.k == 0 and loaded.drift == () and loaded.drift_state == "baseline"
