"""Windows over many candidates: every round shows each candidate once, windows of near-equal size, display positions
balanced, neighbours varied, deterministic for a seed."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from pcfjudge.judging.window_rounds import budget_calls
from pcfjudge.judging.windows import Window, plan_windows, uncertain_at, window_sizes, windows_over


def test_a_round_is_cut_into_near_equal_windows() -> None:
    assert window_sizes(12, 16) == [12]
    assert window_sizes(20, 16) == [10, 10]  # not 16 + a window of 4
    assert window_sizes(33, 16) == [11, 11, 11]
    assert window_sizes(1000, 16) == [16] * 55 + [15] * 8  # 63 windows
    with pytest.raises(ValueError):
        window_sizes(10, 1)


@pytest.mark.parametrize(("n", "window", "rounds"), [(20, 16, 3), (64, 16, 4), (17, 4, 5), (1000, 16, 2)])
def test_every_round_shows_every_candidate_once(n: int, window: int, rounds: int) -> None:
    plan = plan_windows(n, window, rounds, seed=7)
    assert len(plan) == rounds
    for round_windows in plan:
        assert sorted(c for w in round_windows for c in w) == list(range(n))
        assert all(2 <= len(w) <= window for w in round_windows)
    assert appearances(plan, n) == [rounds] * n


def test_display_positions_are_balanced() -> None:
    """The first and last positions (where a judge's bias sits) go round: no candidate is shown first (or last) more
    than once more than any other."""
    n, rounds = 64, 8
    plan = plan_windows(n, 16, rounds, seed=1)
    first = [0] * n
    last = [0] * n
    for window in itertools.chain.from_iterable(plan):
        first[window[0]] += 1
        last[window[-1]] += 1
    assert max(first) - min(first) <= 1 and max(last) - min(last) <= 1
    assert sum(first) == sum(last) == rounds * 4


def test_neighbours_vary_from_round_to_round() -> None:
    n, rounds = 64, 4
    plan = plan_windows(n, 16, rounds, seed=3)
    met: list[set[int]] = [set() for _ in range(n)]
    for window in itertools.chain.from_iterable(plan):
        for c in window:
            met[c].update(set(window) - {c})
    # the same window every round would give 15; four independent draws give about 15 × 4 minus repeats (≈ 47)
    assert min(len(m) for m in met) >= 35


def test_deterministic_for_a_seed() -> None:
    assert plan_windows(40, 16, 3, seed=5) == plan_windows(40, 16, 3, seed=5)
    assert plan_windows(40, 16, 3, seed=5) != plan_windows(40, 16, 3, seed=6)
    assert plan_windows(40, 16, 2, seed=5) == plan_windows(40, 16, 3, seed=5)[:2]  # more rounds extend fewer


def appearances(plan: Sequence[Sequence[Window]], n: int) -> list[int]:
    """Windows each candidate was shown in."""
    counts = [0] * n
    for round_windows in plan:
        for window in round_windows:
            for c in window:
                counts[c] += 1
    return counts


def test_calls_of_a_plan() -> None:
    assert budget_calls(100, 16, rounds=3) == 7 * 3 == sum(len(r) for r in plan_windows(100, 16, 3))


def test_the_uncertain_at_a_boundary_and_windows_over_them() -> None:
    scores = [90.0, 80.0, 71.0, 70.0, 69.0, 50.0, 40.0, 30.0]
    # top 3: boundary midway between 71 and 70 (70.5); with errors of 2, the candidates at 71, 70 and 69 are uncertain
    assert uncertain_at(scores, [2.0] * 8, top_n=3) == [2, 3, 4]
    assert uncertain_at(scores, [0.1] * 8, top_n=3) == []  # certified: nothing left to spend on
    assert uncertain_at(scores, [2.0] * 8, top_n=3, z=0.3) == [2, 3]
    windows = windows_over([2, 3, 4], 8, window=16, seed=1, times=2)
    assert [sorted(w) for w in windows] == [[2, 3, 4]] * 2 and windows == windows_over([2, 3, 4], 8, 16, 1, 2)
    many = windows_over(list(range(40)), 40, window=16)
    assert sorted(c for w in many for c in w) == list(range(40)) and all(len(w) <= 16 for w in many)
