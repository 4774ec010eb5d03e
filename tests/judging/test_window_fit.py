"""One scale over many windows: the offset model, by hand and on synthetic judgments with per-call drift."""

from __future__ import annotations

import math
import random

import pytest
from pcfjudge.judging.window_fit import fit_windows
from pcfjudge.judging.windows import plan_windows


def test_hand_worked_two_calls_with_a_lenient_second_call() -> None:
    """Call A: 0 → 80, 1 → 60; call B (10 points more lenient): 1 → 70, 2 → 50. One scale: 0 is 20 above 1, which is
    20 above 2; the scores average to the mean of all scores given (65): 85, 65, 45, with nothing left over."""
    fit = fit_windows(3, [(0, 0, 80.0), (0, 1, 60.0), (1, 1, 70.0), (1, 2, 50.0)])
    assert fit.scores == pytest.approx([85.0, 65.0, 45.0])
    assert fit.residual_sd == pytest.approx(0.0, abs=1e-6)
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
