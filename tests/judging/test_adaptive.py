"""Adaptive K core (judging/adaptive.py, judging/waves.py): hand-worked bounds, then properties (hypothesis).

The central property: a certified stop returns the winner set of fixed K = k_max, whatever the runs say.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pcfjudge.judging import adaptive
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments
from pcfjudge.judging.waves import Adaptive, Budget, BudgetError, Waves
from pcfjudge.types import Usage

PROPOSED = cons.PRESETS["proposed"]
SCORE_ONLY = cons.PRESETS["score_only"]
Runs = dict[tuple[int, int], RunJudgments | None]


def run(
    scores: dict[str, float], ranks: dict[str, float] | None = None, unc: frozenset[str] = frozenset()
) -> RunJudgments:
    ranks = ranks or cons.ranks_from_scores(scores)
    return RunJudgments({c: CandidateJudgment(scores[c], ranks[c], False, False, c in unc) for c in scores})


def extreme(ids: list[str], x: str, y: str) -> RunJudgments:
    """The run most in x's favour over y: x scores 100, ranked 1st, alone on top, uncertain; y 0, ranked last."""
    middle = [c for c in ids if c not in (x, y)]
    scores = {x: 100.0, y: 0.0} | dict.fromkeys(middle, 50.0)
    ranks = {x: 1.0, y: float(len(ids))} | {c: float(i + 2) for i, c in enumerate(middle)}
    return run(scores, ranks, frozenset({x}))


def state(
    ids: list[str], runs: list[list[RunJudgments]], left: list[int], w: cons.Weights = PROPOSED
) -> adaptive.Progress:
    return adaptive.progress(ids, runs, left, w)


def replay(
    ids: list[str], runs: Runs, executions: int, k_max: int, w: cons.Weights, auto: Adaptive | None
) -> tuple[Waves, list[int]]:
    """Drive ``Waves`` as the judge does, answering each run from ``runs``; the machine and its wave sizes."""
    waves = Waves(ids, executions, k_max, w, auto=auto)
    sizes = []
    while wave := waves.next():
        sizes.append(len(wave))
        for position in wave:
            waves.record(position, runs[position], call=True)
    return waves, sizes


def winners(ids: list[str], executions: list[list[RunJudgments]], w: cons.Weights) -> set[str]:
    return set(cons.aggregate(ids, executions, w).winners)


# ── hand-worked ──────────────────────────────────────────────────────────────────────────────────────────────────


def test_pair_range_hand_worked() -> None:
    # Proposed weights, a scores 100 ranked 1st, b 0 ranked 2nd, nobody uncertain: per run
    # d = 0.5·100 + 0.25·100 + 0.2·100·(1 − 0) + 0.05·0 = 95, so S = 190 after two runs.
    ids = ["a", "b"]
    dominant = run({"a": 100, "b": 0})
    # k_max = 3: one run left, worth ±100: [(190 − 100)/3, (190 + 100)/3] = [30, 96.67] → certified.
    p = state(ids, [[dominant, dominant]], [1])
    assert adaptive.difference_range(p, "a", "b") == pytest.approx((30.0, 290 / 3))
    assert adaptive.certified(p)
    # k_max = 7: five runs left: [(190 − 500)/7, (190 + 500)/7] = [−44.29, 98.57] → b could still win.
    p = state(ids, [[dominant, dominant]], [5])
    assert adaptive.difference_range(p, "a", "b") == pytest.approx((-310 / 7, 690 / 7))
    assert not adaptive.certified(p)


def test_the_certified_boundary_is_exact() -> None:
    # Score only, k_max = 7, six runs made: a leads b by d per run; the worst last run is b 100, a 0, so the final
    # difference is (6d − 100)/7, a keeps b out iff that exceeds 0.5, i.e. d > 17.25.
    ids = ["a", "b"]
    for b_score, certifiable in ((42.7, True), (42.75, False)):
        made = [run({"a": 60, "b": b_score})] * 6
        p = state(ids, [made], [1], SCORE_ONLY)
        assert adaptive.certified(p) is certifiable
        d = 60 - b_score
        assert adaptive.difference_range(p, "a", "b") == pytest.approx(((6 * d - 100) / 7, (6 * d + 100) / 7))
        final = winners(ids, [[*made, extreme(ids, "b", "a")]], SCORE_ONLY)
        assert (final == {"a"}) is certifiable  # at d = 17.25 the worst run ties them: stopping would be wrong


def test_a_tie_is_never_certified_while_runs_remain() -> None:
    ids = ["a", "b"]
    made = [run({"a": 50, "b": 50.2})] * 6
    assert set(cons.aggregate(ids, [made], SCORE_ONLY).winners) == {"a", "b"}
    p = state(ids, [made], [1], SCORE_ONLY)
    assert not adaptive.certified(p)
    assert adaptive.decide(p, "certified") is None
    assert adaptive.decide(state(ids, [made], [0], SCORE_ONLY), "certified") == "k_max"


def test_an_execution_without_a_successful_run_blocks_certification() -> None:
    ids = ["a", "b"]
    strong = [run({"a": 100, "b": 0})] * 6
    # Execution 1 failed every run so far but has one left: it may end up counted (with any value) or not.
    p = state(ids, [strong, []], [1, 1])
    assert adaptive.difference_range(p, "a", "b") is None
    assert not adaptive.certified(p)
    # With nothing left it never counts, and execution 0 alone is certain.
    assert adaptive.certified(state(ids, [strong, []], [1, 0]))


def test_waves_skip_only_points_that_cannot_stop() -> None:
    # Score only, a = 60, b = 40 in every run (d = 20), k_min = 3, k_max = 7. From k = 3 (S = 60) a certified stop at
    # k = 4 needs (60 + 100 − 300)/7 > 0.5 even in the best case: impossible; at k = 5 (60 + 200 − 200)/7 = 8.6: possible,
    # so the second wave makes 2 runs. At k = 5 (S = 100) the real bound is (100 − 200)/7 < 0: go on, one run (the best
    # case at k = 6 is 14.3). At k = 6 the bound (120 − 100)/7 = 2.86 > 0.5: certified, one call short of K = 7.
    ids = ["a", "b"]
    runs: Runs = {(0, i): run({"a": 60, "b": 40}) for i in range(7)}
    waves, sizes = replay(ids, runs, 1, 7, SCORE_ONLY, Adaptive(3, "certified"))
    assert sizes == [3, 2, 1]
    assert waves.stopped == "certified" and waves.made == 6


def test_confident_rule_hand_worked() -> None:
    ids = ["a", "b", "c"]
    top_a = run({"a": 80, "b": 60, "c": 40})
    top_b = run({"a": 60, "b": 80, "c": 40})
    # Three unanimous runs: margin = 0.5·20 + 0.25·50 + 0.2·100 = 42.5 ≥ 10 → confident (not certified: 4 runs left).
    p = state(ids, [[top_a] * 3], [4])
    assert adaptive.margin(p) == pytest.approx(42.5)
    assert adaptive.decide(p, "confident") == "confident" and adaptive.decide(p, "certified") is None
    # Unanimous but a thin margin under score-only weights (a 62 vs b 60): no stop.
    thin = run({"a": 62, "b": 60, "c": 40})
    assert adaptive.unanimous(state(ids, [[thin] * 3], [4], SCORE_ONLY))
    assert not adaptive.confident(state(ids, [[thin] * 3], [4], SCORE_ONLY))
    # Four of five runs agree and 2 are left: 4 > 7/2, a majority the runs left cannot take away.
    assert adaptive.confident(state(ids, [[top_a, top_b, top_a, top_a, top_a]], [2]))
    # Three of five: 3 > 3.5 fails, the runs left could still make b the majority's pick.
    assert not adaptive.confident(state(ids, [[top_a, top_b, top_a, top_b, top_a]], [2]))


def test_budgets_spend_in_schedule_order_and_cache_hits_are_free() -> None:
    ids = ["a", "b"]
    waves = Waves(ids, 2, 3, PROPOSED, budget=Budget(max_calls=3))
    first = waves.next()
    assert first == [(0, 0), (1, 0), (0, 1)]  # run index first, then execution
    for position in first:
        waves.record(position, run({"a": 70, "b": 30}), call=position != (1, 0))  # (1, 0) was a cache hit
    assert waves.next() == [(1, 1)]  # one call left in the budget
    waves.record((1, 1), run({"a": 70, "b": 30}), call=True)
    assert waves.next() == [] and waves.stopped == "budget" and waves.made == 4


def test_cost_budget_prices_calls_at_the_dearest_so_far() -> None:
    # $1 / $10 per million tokens; a 4,000-character prompt is budgeted at 1,000 input tokens and, before any call,
    # all 1,000 allowed output tokens: $0.001 + $0.01 = $0.011 a call.
    ids, price = ["a", "b"], (1.0, 10.0)

    def priced(budget: float) -> Waves:
        return Waves(
            ids,
            1,
            7,
            PROPOSED,
            budget=Budget(max_cost_usd=budget),
            price=price,
            prompt_chars=4000,
            max_output_tokens=1000,
        )

    waves = priced(0.03)
    first = waves.next()
    assert len(first) == 2  # floor(0.03 / 0.011)
    waves.record(first[0], run({"a": 70, "b": 30}), call=True, usage=Usage(1000, 200))  # $0.003
    waves.record(first[1], run({"a": 70, "b": 30}), call=True, usage=Usage(1000, 400))  # $0.005, the dearest
    second = waves.next()
    assert len(second) == 4  # $0.022 left at $0.005 a call
    for position in second:
        waves.record(position, run({"a": 70, "b": 30}), call=True, usage=Usage(1000, 400))
    assert waves.next() == [] and waves.stopped == "budget" and waves.spent == pytest.approx(0.028)
    with pytest.raises(BudgetError, match="does not pay for one judge call"):
        priced(0.01).next()
    failing = priced(0.03)
    for position in failing.next():  # calls that failed before using any tokens
        failing.record(position, None, call=True, usage=Usage())
    assert len(failing.next()) == 2  # still priced at the estimate, not at $0
    with pytest.raises(BudgetError, match="PCFJ_PRICES"):
        Waves(ids, 1, 7, PROPOSED, budget=Budget(max_cost_usd=0.01))


# ── properties ───────────────────────────────────────────────────────────────────────────────────────────────────

SCORES = st.one_of(st.integers(0, 100).map(float), st.sampled_from([0.0, 49.5, 50.0, 50.4, 50.5, 50.6, 100.0]))


@st.composite
def weights(draw: st.DrawFn) -> cons.Weights:
    if draw(st.booleans()):
        return draw(st.sampled_from(list(cons.PRESETS.values())))
    raw = draw(st.lists(st.integers(0, 10), min_size=4, max_size=4).filter(lambda xs: sum(xs) > 0))
    return cons.Weights(*(x / sum(raw) for x in raw))


@st.composite
def a_run(draw: st.DrawFn, ids: list[str], lead: str) -> RunJudgments | None:
    """A random run: failed, led by ``lead`` (so stops happen), or anything; explicit or score-derived ranks."""
    style = draw(st.sampled_from(["failed", "lead", "lead", "lead", "any", "any"]))
    if style == "failed":
        return None
    scores = {cid: draw(SCORES) for cid in ids}
    if style == "lead":
        scores[lead] = draw(st.sampled_from([100.0, max(scores.values())]))
    ranks = None
    if draw(st.booleans()):
        order = draw(st.permutations([c for c in ids if c != lead]))
        order = [lead, *order] if style == "lead" else draw(st.permutations(ids))
        ranks = {cid: float(i + 1) for i, cid in enumerate(order)}
    uncertain = frozenset(draw(st.sets(st.sampled_from(ids))))
    return run(scores, ranks, uncertain)


@st.composite
def requests(draw: st.DrawFn) -> tuple[list[str], int, int, int, cons.Weights, Runs]:
    n = draw(st.integers(2, 5))
    ids = [f"c{i}" for i in range(n)]
    executions, k_max = draw(st.integers(1, 3)), draw(st.integers(1, 7))
    k_min = draw(st.integers(1, k_max))
    lead = draw(st.sampled_from(ids))
    runs = {(e, i): draw(a_run(ids, lead)) for e in range(executions) for i in range(k_max)}
    return ids, executions, k_min, k_max, draw(weights()), runs


def _executions(runs: Runs, executions: int, k: int) -> list[list[RunJudgments]]:
    return [[r for i in range(k) if (r := runs[(e, i)]) is not None] for e in range(executions)]


@settings(max_examples=400, deadline=None)
@given(requests())
def test_certified_stopping_returns_the_k_max_winners(
    request: tuple[list[str], int, int, int, cons.Weights, Runs],
) -> None:
    ids, executions, k_min, k_max, w, runs = request
    full = _executions(runs, executions, k_max)
    if not any(full):
        return  # no run succeeded: fixed K fails too
    waves, _ = replay(ids, runs, executions, k_max, w, Adaptive(k_min, "certified"))
    assert waves.stopped in ("certified", "k_max")
    assert waves.made >= min(k_min, k_max) * executions
    consensus = waves.progress().consensus
    assert consensus is not None and set(consensus.winners) == winners(ids, full, w)


@settings(max_examples=300, deadline=None)
@given(requests())
def test_waves_never_skip_a_certified_stop_and_confident_stops_no_later(
    request: tuple[list[str], int, int, int, cons.Weights, Runs],
) -> None:
    """The lookahead is lossless: the certified stop is the first k ≥ k_min (one run at a time) where ``certified``
    holds; confident mode checks a superset of those points, so it never makes more runs."""
    ids, executions, k_min, k_max, w, runs = request
    first = next(
        (
            k
            for k in range(k_min, k_max)
            if adaptive.certified(adaptive.progress(ids, _executions(runs, executions, k), [k_max - k] * executions, w))
        ),
        k_max,
    )
    certified, _ = replay(ids, runs, executions, k_max, w, Adaptive(k_min, "certified"))
    assert certified.made == first * executions
    confident, _ = replay(ids, runs, executions, k_max, w, Adaptive(k_min, "confident"))
    assert confident.made <= certified.made


@settings(max_examples=300, deadline=None)
@given(requests(), st.data())
def test_certified_states_survive_the_most_adverse_runs(
    request: tuple[list[str], int, int, int, cons.Weights, Runs], data: st.DataObject
) -> None:
    """From any prefix: the pair bounds are reached by the extreme runs, and a certified state keeps its winners
    against every pair's extreme completion, every run failing, and a random completion."""
    ids, executions, _, k_max, w, runs = request
    made = data.draw(st.one_of(st.integers(0, k_max), st.integers(max(0, k_max - 2), k_max)))
    prefix = _executions(runs, executions, made)
    p = adaptive.progress(ids, prefix, [k_max - made] * executions, w)
    if p.consensus is None or made == k_max:
        return
    x, y = data.draw(st.permutations(ids))[:2]
    bounds = adaptive.difference_range(p, x, y)
    tail = k_max - made
    pushed = [[*done, *[extreme(ids, x, y)] * tail] for done in prefix]
    if bounds is not None:
        final = cons.aggregate(ids, pushed, w).candidates
        assert final[x].consensus - final[y].consensus == pytest.approx(bounds[1], abs=1e-9)
    if not adaptive.certified(p):
        return
    current = set(p.consensus.winners)
    for a in ids:
        for b in ids:
            if a != b:
                assert winners(ids, [[*d, *[extreme(ids, a, b)] * tail] for d in prefix], w) == current
    assert winners(ids, prefix, w) == current  # every run left fails
    assert winners(ids, _executions(runs, executions, k_max), w) == current
