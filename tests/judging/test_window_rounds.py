"""The windowed procedure as a stepper (judging.window_rounds): budgets, rounds, the boundary, stops, Eq. 5 per run."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments
from pcfjudge.judging.window_rounds import (
    WindowRanking,
    WindowSpec,
    budget_calls,
    least_calls,
    ranking_of,
    run_values,
)
from pcfjudge.judging.window_stages import focus_size, nearest


def test_the_budget_is_windows_per_round_times_rounds_and_max_calls_only_lowers_it() -> None:
    assert budget_calls(100, 16, 4) == 7 * 4  # ceil(100 / 16) windows of 14–15
    assert budget_calls(64, 16, 4) == 16
    assert budget_calls(1000, 16, 4) == 63 * 4
    assert budget_calls(100, 16, 4, max_calls=20) == 20
    assert least_calls(100, 16) == 14
    with pytest.raises(ValueError, match="at least 14 calls"):
        WindowRanking(100, WindowSpec(16, 4, max_calls=13))
    with pytest.raises(ValueError, match="more candidates than one window"):
        WindowRanking(16, WindowSpec(16, 4))


def _judge(truth: list[float], rng: random.Random, drift: float = 0.0, noise: float = 0.0):  # type: ignore[no-untyped-def]
    def call(window: tuple[int, ...]) -> dict[int, float]:
        offset = rng.gauss(0, drift) if drift else 0.0
        return {c: truth[c] + offset + (rng.gauss(0, noise) if noise else 0.0) for c in window}

    return call


def test_the_whole_order_takes_every_round_at_once_each_candidate_once_per_round() -> None:
    n, rounds = 50, 4
    ranking = WindowRanking(n, WindowSpec(16, rounds))
    first = ranking.next_windows()
    assert len(first) == budget_calls(n, 16, rounds) == ranking.calls
    assert Counter(c for w in first for c in w) == {c: rounds for c in range(n)}
    truth = [float(c) for c in range(n)]
    call = _judge(truth, random.Random(0), drift=10)
    for w in first:
        ranking.record(w, call(w))
    assert ranking.next_windows() == [] and ranking.stopped == "rounds" and ranking.steps == 1
    fit = ranking.fit()
    assert ranking_of(fit.scores) == list(range(n - 1, -1, -1))  # drift alone is absorbed exactly by the offsets


def test_a_boundary_ranking_is_one_round_a_linking_stage_then_full_windows_at_the_boundary() -> None:
    """top_n 10 of 100 in windows of 16, 4 rounds' calls (28): one uniform round (7 windows); one stage keeping a
    fifth (``KEEP``: 20, filled to two full windows' 32), every window of the round sending its best on, which links
    every candidate onto one scale; then boundary steps, each at most a third of the calls left, of full windows over
    the candidates nearest the boundary. A judge with noise 1: the top 10 but for the 10th and
    11th, 0.47 apart."""
    n = 100
    ranking = WindowRanking(n, WindowSpec(16, 4, top_n=10))
    assert ranking.focus == focus_size(10, 16) == 16
    truth = [random.Random(f"t{c}").uniform(0, 100) for c in range(n)]
    call = _judge(truth, random.Random(0), drift=10, noise=1)
    first = ranking.next_windows()
    assert Counter(c for w in first for c in w) == {c: 1 for c in range(n)} and len(first) == 7
    for w in first:
        ranking.record(w, call(w))
    stage = ranking.next_windows()
    assert len(stage) == 2 and all(len(w) == 16 for w in stage) and ranking.alive == 32
    assert all(max(w, key=lambda c: truth[c]) in {c for v in stage for c in v} for w in first)
    for w in stage:
        ranking.record(w, call(w))
    assert ranking.fit().components == 1
    steps = []
    while True:
        left = ranking.budget - ranking.calls
        if not (windows := ranking.next_windows()):
            break
        steps.append(len(windows))
        assert len(windows) <= max(1, left // 3) and all(len(w) == 16 for w in windows)
        for w in windows:
            ranking.record(w, call(w))
    assert len(steps) >= 2 and ranking.calls <= ranking.budget == 28 and ranking.stopped in ("certified", "budget")
    fit = ranking.fit()
    assert fit.components == 1 and len(set(ranking_of(fit.scores)[:10]) & set(ranking_of(truth)[:10])) >= 9


def test_a_clear_boundary_is_certified_once_the_stages_are_done() -> None:
    n = 40
    ranking = WindowRanking(n, WindowSpec(16, 4, top_n=5))
    call = _judge([100.0 - 2 * c for c in range(n)], random.Random(1), noise=0.5)
    while windows := ranking.next_windows():
        for w in windows:
            ranking.record(w, call(w))
    # one stage (a fifth of 40, at least the focus: one full window) linked them all
    assert ranking.stopped == "certified" and ranking.alive == 16
    assert ranking_of(ranking.fit().scores)[:5] == [0, 1, 2, 3, 4]


def test_a_smaller_top_n_runs_the_same_plan_so_its_picks_lead_a_larger_ones() -> None:
    """top_n up to DEFAULT_FOCUS (10) settles the same focus: the same windows, the same fit, so top_n 3's results
    are the first three of top_n 10's at the same budget, whatever the judge says."""
    truth = [random.Random(f"u{c}").uniform(0, 100) for c in range(200)]

    def ranked(top_n: int) -> list[int]:
        ranking = WindowRanking(200, WindowSpec(16, 2, top_n=top_n, seed=4))
        call = _judge(truth, random.Random(7), drift=8, noise=8)
        while windows := ranking.next_windows():
            for w in windows:
                ranking.record(w, call(w))
        return ranking_of(ranking.fit().scores)

    assert ranked(3)[:3] == ranked(10)[:3]
    assert ranked(1)[0] in ranked(20)[:20]


def test_the_least_calls_of_a_boundary_ranking_are_one_round_and_its_leanest_stages() -> None:
    assert least_calls(100, 16, top_n=10) == 7 + 2 + 1  # 100 → 25 (2 windows) → 16 (1): a sufficient budget
    assert least_calls(100, 16) == 14  # the whole order: two rounds
    with pytest.raises(ValueError, match="at least 10 calls"):
        WindowRanking(100, WindowSpec(16, 4, top_n=10, max_calls=9))
    ranking = WindowRanking(100, WindowSpec(16, 4, top_n=10, max_calls=10))
    truth = [float(c) for c in range(100)]
    while windows := ranking.next_windows():
        for w in windows:
            ranking.record(w, {c: truth[c] for c in w})
    assert ranking.calls <= 10 and ranking.fit().components == 1  # a noiseless judge: certified once linked


def test_a_failed_call_is_counted_and_contributes_nothing() -> None:
    ranking = WindowRanking(20, WindowSpec(16, 2))
    windows = ranking.next_windows()
    ranking.record(windows[0], None)
    for w in windows[1:]:
        ranking.record(w, {c: float(c) for c in w})
    assert ranking.failed == 1 and ranking.recorded == len(windows)
    assert sum(ranking.fit().appearances) == sum(len(w) for w in windows[1:])


def test_the_same_seed_plans_the_same_windows_and_another_seed_others() -> None:
    def first(seed: int) -> list[tuple[int, ...]]:
        return WindowRanking(64, WindowSpec(16, 4, seed=seed)).next_windows()

    assert first(0) == first(0) and first(0) != first(1)


def test_one_runs_values_are_eq_5_by_hand() -> None:
    """Scores 90/80/70, ranks 1/2/3, b uncertain; weights (0.5, 0.25, 0.2, 0.05):
    a = 0.5·90 + 0.25·100 + 0.2·100·1 + 0 = 90; b = 0.5·80 + 0.25·50 + 0 + 0.05·100 = 57.5; c = 35."""
    run = RunJudgments(
        {
            "a": CandidateJudgment(90, 1, False, False, False),
            "b": CandidateJudgment(80, 2, False, False, True),
            "c": CandidateJudgment(70, 3, True, False, False),
        }
    )
    values = run_values(run, cons.PRESETS["proposed"])
    assert values["a"][0] == pytest.approx(90.0)
    assert values["b"][0] == pytest.approx(57.5)
    assert values["c"][0] == pytest.approx(35.0)
    assert values["c"][5] == 1.0 and values["b"][4] == 1.0  # the major-error flag and the uncertainty share


def test_no_boundary_round_is_planned_on_a_fit_that_lacks_the_last_steps_answers() -> None:
    """A batch probe (or an outage) fails a step's calls: nothing more is planned from a fit without them."""
    ranking = WindowRanking(40, WindowSpec(16, 4, top_n=1))
    for w in ranking.next_windows():
        ranking.record(w, None)
    assert ranking.next_windows() == [] and ranking.stopped == "failed" and ranking.calls == 3  # its first round


def test_no_window_is_asked_twice() -> None:
    """Candidates tied at the boundary, judged with noise: boundary steps ask about them again and again, but never
    the same window (content and order) twice: that would be the same cache entry, the same answer."""
    ranking = WindowRanking(20, WindowSpec(16, 8, top_n=1))
    asked: list[tuple[int, ...]] = []
    rng = random.Random(5)
    while windows := ranking.next_windows():
        asked += windows
        for w in windows:  # candidates 0 and 1 tie on top, far above the rest; the judge's noise keeps them in doubt
            ranking.record(w, {c: (90.0 if c < 2 else 10.0 + c) + rng.gauss(0, 8) for c in w})
    assert ranking.steps >= 2 and len(asked) == len(set(asked))


def test_small_windows_stage_on_until_one_scale_links_every_candidate() -> None:
    """40 candidates in windows of 3 (the engine test's design): the first stage's field (15, the focus) in 5
    windows cannot link the 14 first windows' groups (15 edges for 19 nodes); stages go on, reshuffling the field,
    until the fit is one scale, and the least budget counts them (CI once saw "4 groups with no common scale" end a
    judgment of 20 calls)."""
    assert least_calls(40, 3, top_n=1) == 14 + 5 + 5
    with pytest.raises(ValueError, match="at least 24 calls"):
        WindowRanking(40, WindowSpec(3, 2, top_n=1, max_calls=20))
    ranking = WindowRanking(40, WindowSpec(3, 2, top_n=1, max_calls=24))
    truth = [random.Random(f"s{c}").uniform(0, 100) for c in range(40)]
    call = _judge(truth, random.Random(3), drift=5, noise=5)
    while windows := ranking.next_windows():
        for w in windows:
            ranking.record(w, call(w))
    assert ranking.fit().components == 1 and ranking.calls <= 24
    assert ranking.stopped in ("certified", "budget")


def test_the_nearest_are_counted_in_standard_errors_from_a_boundary_of_the_top_then_in_points() -> None:
    """Boundaries of the top 2 of scores 90/80/70/60/50: 85 (1st/2nd) and 75 (2nd/3rd). In standard errors from the
    nearer: 90 (±100) is 0.05 away, 80 (±2) 2.5, 70 (±10) 0.5, 60 (±1) 15, 50 (±50) 0.5 (25 points: after 70's 5)."""
    scores, errors = [90.0, 80.0, 70.0, 60.0, 50.0], [100.0, 2.0, 10.0, 1.0, 50.0]
    assert nearest(scores, errors, 2, 1) == [0]
    assert nearest(scores, errors, 2, 3) == [0, 2, 4]
    assert nearest(scores, errors, 2, 4) == [0, 1, 2, 4]
    unmeasured = [math.inf] * 5  # no scatter measured yet: nearest in points, the winner's place counted too
    assert nearest(scores, unmeasured, 2, 3) == [0, 1, 2]
    assert nearest([90.0, 80.0, 70.0, 60.0, 50.0], [1.0] * 5, 1, 2) == [0, 1]  # a winner: its own boundary
