"""One scale over many windows: the offset model, by hand and on synthetic judgments with per-call drift."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from pcfjudge.judging.window_fit import fit_windows, shrunk
from pcfjudge.judging.windows import plan_windows


def test_hand_worked_two_calls_with_a_lenient_second_call() -> None:
    """Call A: 0 → 80, 1 → 60; call B (10 points more lenient): 1 → 70, 2 → 50. One scale: 0 is 20 above 1, which is
    20 above 2; the scores average to the mean of all scores given (65): 85, 65, 45, with nothing left over, and
    no degree of freedom to measure a scatter with (4 scores, 3 candidates, 2 calls): the scatter is unknown
    (infinite, so nothing is certified), not zero."""
    fit = fit_windows(3, [(0, 0, 80.0), (0, 1, 60.0), (1, 1, 70.0), (1, 2, 50.0)])
    assert fit.scores == pytest.approx([85.0, 65.0, 45.0])
    assert fit.residual_sd == math.inf and fit.standard_errors == [math.inf] * 3
    assert fit.appearances == [1, 2, 1] and fit.components == 1


def _spearman(a: list[float], b: list[float]) -> float:
    def ranks(x: list[float]) -> list[float]:
        order = sorted(range(len(x)), key=lambda i: x[i])
        out = [0.0] * len(x)
        for r, i in enumerate(order):
            out[i] = float(r)
        return out

    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))


def _error(scores: list[float], truth: list[float]) -> float:
    """Mean absolute difference from the truth, both centred (the fit's scale is anchored at the mean score)."""
    ms, mt = sum(scores) / len(scores), sum(truth) / len(truth)
    return sum(abs((s - ms) - (t - mt)) for s, t in zip(scores, truth, strict=True)) / len(scores)


def _judge(truth: list[float], windows: list[tuple[int, ...]], drift: float, noise: float, seed: int):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    observations = []
    for k, window in enumerate(windows):
        offset = rng.gauss(0, drift)  # this call's strictness
        observations += [(k, c, truth[c] + offset + rng.gauss(0, noise)) for c in window]
    return observations


def test_the_fit_recovers_a_known_order_through_per_call_drift() -> None:
    n = 64
    rng = random.Random(11)
    truth = [rng.uniform(20, 90) for _ in range(n)]
    windows = [w for round_windows in plan_windows(n, 16, 4, seed=2) for w in round_windows]
    observations = _judge(truth, windows, drift=12.0, noise=3.0, seed=5)
    fit = fit_windows(n, observations)
    naive = [0.0] * n  # each candidate's raw mean: the drift of the calls it happened to be in stays in it
    for _, c, s in observations:
        naive[c] += s / 4
    assert fit.components == 1
    assert _spearman(fit.scores, truth) > max(0.99, _spearman(naive, truth))
    assert _error(fit.scores, truth) < _error(naive, truth) / 2  # the drift is taken out, not averaged down
    assert fit.residual_sd == pytest.approx(3.0, rel=0.25)  # the noise, the drift taken out by the offsets


def test_one_round_alone_is_not_one_scale_and_says_so() -> None:
    windows = plan_windows(40, 16, 1, seed=0)[0]  # three disjoint windows
    fit = fit_windows(40, _judge([float(i) for i in range(40)], windows, drift=5.0, noise=1.0, seed=1))
    assert fit.components == 3
    two = [w for r in plan_windows(40, 16, 2, seed=0) for w in r]
    assert fit_windows(40, _judge([float(i) for i in range(40)], two, drift=5.0, noise=1.0, seed=1)).components == 1


def test_standard_errors_shrink_with_appearances() -> None:
    n = 32
    truth = [float(i) for i in range(n)]
    few = [w for r in plan_windows(n, 8, 2, seed=4) for w in r]
    many = [w for r in plan_windows(n, 8, 8, seed=4) for w in r]
    se_few = fit_windows(n, _judge(truth, few, 5.0, 2.0, 9)).standard_errors
    se_many = fit_windows(n, _judge(truth, many, 5.0, 2.0, 9)).standard_errors
    assert sum(se_many) / n < sum(se_few) / n * 0.7
    assert fit_windows(3, [(0, 0, 50.0), (0, 1, 40.0)]).standard_errors[2] == math.inf  # never judged


def test_a_judges_position_bias_is_fitted_and_taken_out_of_the_scores() -> None:
    """Four rounds over 100 candidates, a judge adding 15 points to what it shows first, falling to 0 for the last
    (plus per-call drift and a little noise): with the display positions the fit measures that bias (first minus last
    about 15) and the scores come out close to the truth; without them the bias stays in the scores."""
    rng = random.Random(0)
    n = 100
    truth = [rng.uniform(10, 90) for _ in range(n)]
    observations, positions = [], []
    for call, window in enumerate(w for round_ in plan_windows(n, 16, 4) for w in round_):
        drift = rng.gauss(0, 8)
        for p, c in enumerate(window):
            score = truth[c] + drift + 15 * (1 - p / (len(window) - 1)) + rng.gauss(0, 1)
            observations.append((call, c, score))
            positions.append(p)

    def error(scores: list[float]) -> float:
        shift = sum(scores) / n - sum(truth) / n
        return sum(abs(s - shift - t) for s, t in zip(scores, truth, strict=True)) / n

    plain, fitted = fit_windows(n, observations), fit_windows(n, observations, positions=positions)
    effects = fitted.position_effects
    assert plain.position_effects == [] and 14 < effects[0] - effects[-1] < 16.5
    assert error(fitted.scores) < 0.6 < 1.5 < error(plain.scores)
    assert fitted.residual_sd < 1.3 < 4 < plain.residual_sd


def test_position_effects_are_shrunk_by_hand() -> None:
    """James–Stein by hand: effects 3, −1, −1, −1, each position shown 10 times, scatter variance 10: each effect's
    sampling variance is 1, |raw|² is 12, so the factor is 1 − (4 − 3) · 1 / 12 = 11/12. Noise as large as the
    effects: shrunk to none (never flipped). Three positions or fewer: kept as measured."""
    raw, shown = np.array([3.0, -1.0, -1.0, -1.0]), np.full(4, 10.0)
    assert shrunk(raw, shown, 10.0).tolist() == pytest.approx([2.75, -11 / 12, -11 / 12, -11 / 12])
    assert shrunk(raw, shown, 120.0).tolist() == [0.0] * 4
    assert shrunk(np.array([2.0, -1.0, -1.0]), np.full(3, 10.0), 10.0).tolist() == [2.0, -1.0, -1.0]
    assert shrunk(np.zeros(4), shown, 10.0).tolist() == [0.0] * 4


def test_a_judge_without_position_bias_gets_no_made_up_bias_from_few_calls() -> None:
    """Twelve calls of sixteen over 100 candidates by a judge with no position bias (drift 8, noise 6, as the
    ranking bench's): measured as they stand, the largest position effect was 3.8 to 6.4 points in these five worlds,
    a made-up bias the fit would take out of every score; shrunk, every effect stays below half a point."""
    for seed in range(5):
        rng = random.Random(seed)
        n = 100
        truth = [rng.uniform(10, 90) for _ in range(n)]
        observations, positions = [], []
        windows = [w for round_ in plan_windows(n, 16, 2, seed) for w in round_]
        for call, window in enumerate(windows[:12]):
            drift = rng.gauss(0, 8)
            for p, c in enumerate(window):
                observations.append((call, c, truth[c] + drift + rng.gauss(0, 6)))
                positions.append(p)
        effects = fit_windows(n, observations, positions=positions).position_effects
        assert len(effects) >= 14 and max(abs(e) for e in effects) < 0.5


def test_fitted_scores_are_put_on_the_0_100_scale_by_hand() -> None:
    """Within 0–100: as fitted. 20…110 (spread 90): shifted down by 10. −30…150 (spread 180): shifted by +30, then
    scaled by 100/180; standard errors scaled alike; the order never changes."""
    from pcfjudge.judging.window_fit import WindowFit, on_scale

    def fitted(*scores: float) -> WindowFit:
        return WindowFit(list(scores), [2.0] * len(scores), [2] * len(scores), 1.0, 1, 1)

    assert on_scale(fitted(10, 50, 90)).scores == [10, 50, 90]
    shifted = on_scale(fitted(20, 60, 110))
    assert shifted.scores == [10, 50, 100] and (shifted.shift, shifted.factor) == (-10, 1.0)
    scaled = on_scale(fitted(-30, 60, 150))
    assert scaled.scores == pytest.approx([0, 50, 100]) and scaled.factor == pytest.approx(100 / 180)
    assert scaled.shift == pytest.approx(30) and scaled.standard_errors == pytest.approx([200 / 180] * 3)
    low = on_scale(fitted(-5, 40))
    assert low.scores == [0, 45] and low.shift == 5
