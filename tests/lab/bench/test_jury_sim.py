"""``pcfjudge bench jury`` (a SIMULATION): deterministic for a seed, the majority of three independent 0.7 jurors is
3p² − 2p³, calibrated weights mute a bad juror, correlated errors shrink the effective jurors to Kish's value, and
the claims docs/jury-simulation.md makes of the default run hold."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pcfjudge.cli.main import main
from pcfjudge_lab.bench.jury_sim import (
    SCENARIOS,
    Row,
    Scenario,
    draw_errors,
    model_error_correlation,
    run,
    simulate,
)

BY_KEY = {s.key: s for s in SCENARIOS}


@pytest.fixture(scope="module")
def default_run() -> dict[str, Row]:
    """The run docs/jury-simulation.md shows (20,000 items, 500 calibration items, seed 0)."""
    return {r.scenario.key: r for r in run()}


def test_a_seed_gives_the_same_rows_and_another_seed_others() -> None:
    scenario = BY_KEY["strong-4weak-corr"]
    first = simulate(scenario, 1000, 200, seed=7)
    assert simulate(scenario, 1000, 200, seed=7) == first
    assert simulate(scenario, 1000, 200, seed=8) != first
    shown = json.loads(json.dumps(first.to_json()))
    assert shown["best"]["beats_best"] == "= best" and shown["scenario"]["key"] == scenario.key


def test_three_independent_jurors_of_0_7_are_right_3p2_minus_2p3_of_the_time(default_run: dict[str, Row]) -> None:
    p = 0.7
    majority = 3 * p**2 - 2 * p**3  # 0.784
    row = default_run["equal"]
    assert abs(row.equal.accuracy - majority) <= row.equal.half_width
    assert abs(row.calibrated.accuracy - majority) <= row.calibrated.half_width  # near-equal weights: the same vote
    assert abs(row.best.accuracy - p) <= 2 * row.best.half_width  # the best of three, in hindsight
    assert row.equal.beats_best == "yes"


def test_calibrated_weights_mute_a_bad_juror(default_run: dict[str, Row]) -> None:
    row = default_run["bad-juror"]
    assert row.weights[2] == 0.0 and row.calibrated_weights  # below chance: no weight
    assert row.calibrated.accuracy - row.equal.accuracy > row.calibrated.half_width + row.equal.half_width
    assert row.equal.beats_best == "no" and row.calibrated.beats_best in ("= best", "within noise")


def test_correlated_errors_shrink_the_effective_jurors_to_kish(default_run: dict[str, Row]) -> None:
    rho = model_error_correlation(0.7, 0.7, 0.6)
    kish = 3 / (1 + 2 * rho)  # equal weights, one common error correlation
    row = simulate(BY_KEY["equal-corr"], 2000, 4000, seed=0)
    assert row.effective_equal is not None and row.effective_equal < 3
    assert abs(row.effective_equal - kish) < 0.1 and abs(row.model_effective_equal - kish) < 0.01
    independent, correlated = default_run["equal"], default_run["equal-corr"]
    assert correlated.equal.accuracy < independent.equal.accuracy - independent.equal.half_width * 2


def test_the_model_error_correlation_is_what_the_draws_give() -> None:
    scenario = Scenario("check", "check", (0.85, 0.65), 0.6)
    errors = draw_errors(np.random.default_rng(0), scenario, 200_000)
    measured = np.corrcoef(errors[:, 0], errors[:, 1])[0, 1]
    assert abs(measured - model_error_correlation(0.85, 0.65, 0.6)) < 0.01
    assert abs(errors.mean(axis=0) - np.array([0.15, 0.35])).max() < 0.005
    assert model_error_correlation(0.85, 0.65, 0.0) == 0.0


def test_when_the_weighted_jury_beats_its_best_juror_and_when_not(default_run: dict[str, Row]) -> None:
    """The claims docs/jury-simulation.md makes of its table."""
    two_weak, four_weak = default_run["strong-2weak"], default_run["strong-4weak"]
    assert two_weak.equal.beats_best == "no" and two_weak.calibrated.beats_best == "= best"  # a dictator
    assert four_weak.equal.beats_best == "no" and four_weak.calibrated.beats_best == "yes"
    correlated = default_run["strong-4weak-corr"]
    assert correlated.calibrated.beats_best == "no"  # log-odds weights assume independent errors
    very_strong = default_run["very-strong-corr"]
    assert very_strong.equal.beats_best == "no" and very_strong.calibrated.beats_best == "= best"


def test_the_command_prints_the_simulation_label_and_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "jury", "--items", "400", "--calibration-items", "100", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATION" in out.splitlines()[0]
    rows = [line for line in out.splitlines() if line.startswith("| ") and "±" in line]
    assert [r.split("|")[1].strip() for r in rows] == [s.title for s in SCENARIOS]
    assert main(["bench", "jury", "--items", "400", "--calibration-items", "100", "--json"]) == 0
    assert [r["scenario"]["key"] for r in json.loads(capsys.readouterr().out)] == [s.key for s in SCENARIOS]
