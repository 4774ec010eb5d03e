"""The windowed procedure as a stepper (judging.window_rounds): budgets, rounds, the boundary, stops, Eq. 5 per run."""

from __future__ import annotations

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


def test_a_clear_boundary_is_certified_after_the_two_first_rounds() -> None:
    n = 40
    ranking = WindowRanking(n, WindowSpec(16, 4, top_n=5))
    first = ranking.next_windows()
    assert Counter(c for w in first for c in w) == {c: 2 for c in range(n)}  # FOCUS_ROUNDS uniform rounds
    call = _judge([100.0 - 2 * c for c in range(n)], random.Random(1), noise=0.5)
    for w in first:
        ranking.record(w, call(w))
    assert ranking.next_windows() == [] and ranking.stopped == "certified"
    assert ranking_of(ranking.fit().scores)[:5] == [0, 1, 2, 3, 4]


def test_an_unclear_boundary_spends_the_budget_on_the_uncertain_within_the_rounds_calls() -> None:
    n, rounds = 100, 4
    ranking = WindowRanking(n, WindowSpec(16, rounds, top_n=10, seed=3))
    truth = [random.Random(f"t{c}").uniform(0, 100) for c in range(n)]
    call = _judge(truth, random.Random(2), drift=8, noise=8)
    shown: Counter[int] = Counter()
    steps = 0
    while windows := ranking.next_windows():
        steps += 1
        if steps > 1:  # boundary steps: only candidates still in doubt, up to one round's calls
            assert len({c for w in windows for c in w}) < n and len(windows) <= ranking.per_round
        for w in windows:
            shown.update(w)
            ranking.record(w, call(w))
    assert ranking.calls <= ranking.budget == budget_calls(n, 16, rounds)
    assert min(shown.values()) == 2 and max(shown.values()) > 2  # the uncertain were shown again, the rest not
    assert ranking.stopped in ("certified", "budget") and 2 <= steps <= rounds - 1


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
    assert ranking.next_windows() == [] and ranking.stopped == "failed" and ranking.calls == 6


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
