"""The jury's pooling and agreement statistics against hand-worked examples (judging/jury.py)."""

from __future__ import annotations

import pytest
from pcfjudge.judging import adaptive, jury
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments

W = cons.PRESETS["proposed"]


def run(scores: dict[str, float]) -> RunJudgments:
    ranks = cons.ranks_from_scores(scores)
    return RunJudgments({c: CandidateJudgment(s, ranks[c], False, False, False) for c, s in scores.items()})


def test_pooled_listwise_is_the_weighted_mean_of_every_component_and_eq5_of_the_pool() -> None:
    one = cons.aggregate(["a", "b"], [[run({"a": 80, "b": 40})]], W)
    two = cons.aggregate(["a", "b"], [[run({"a": 30, "b": 90})]], W)
    pooled = jury.pool_listwise(["a", "b"], [one, two], [0.75, 0.25])
    a = pooled.candidates["a"]
    # juror 1: a = 0.5·80 + 0.25·100 + 0.2·100 = 85; juror 2: a = 0.5·30 + 0 + 0 = 15 → 0.75·85 + 0.25·15 = 67.5
    assert a.consensus == pytest.approx(67.5) and a.mean_score == pytest.approx(67.5)
    assert a.borda == pytest.approx(75.0) and a.top_vote == pytest.approx(0.75)
    b = pooled.candidates["b"]  # juror 1: 20; juror 2: 45 + 25 + 20 = 90 → 15 + 22.5 = 37.5
    assert b.consensus == pytest.approx(37.5)
    assert pooled.winners == ["a"] and pooled.ranking == ["a", "b"]
    eq5 = (
        W.score * a.mean_score + W.borda * a.borda + W.top_vote * 100 * a.top_vote + W.uncertainty * 100 * a.uncertainty
    )
    assert eq5 == pytest.approx(a.consensus)


def test_equal_weights_and_full_runs_are_eq1_5_over_the_union_of_runs() -> None:
    runs1 = [run({"a": 80, "b": 40, "c": 10}), run({"a": 60, "b": 70, "c": 20})]
    runs2 = [run({"a": 50, "b": 55, "c": 90}), run({"a": 90, "b": 10, "c": 30})]
    ids = ["a", "b", "c"]
    pooled = jury.pool_listwise(ids, [cons.aggregate(ids, [runs1], W), cons.aggregate(ids, [runs2], W)], [0.5, 0.5])
    union = cons.aggregate(ids, [runs1 + runs2], W)
    for cid in ids:
        assert pooled.candidates[cid].as_dict() == pytest.approx(union.candidates[cid].as_dict())


def test_pairwise_votes_weigh_and_an_even_split_is_a_tie() -> None:
    assert jury.pool_verdicts(["A", "A", "B"], [1 / 3] * 3) == "A"
    assert jury.pool_verdicts(["A", "B", "B"], [0.6, 0.2, 0.2]) == "A"  # one trusted juror outweighs two
    assert jury.pool_verdicts(["A", "B"], [0.5, 0.5]) == "tie"
    assert jury.pool_verdicts(["tie", "B", "A"], [0.4, 0.3, 0.3]) == "tie"
    assert jury.weighted_mean([1.0, None, 0.0], [0.5, 0.25, 0.25]) == pytest.approx(0.6667, abs=1e-4)


def test_kendalls_w_hand_worked() -> None:
    same = {"a": 3.0, "b": 2.0, "c": 1.0}
    assert jury.kendalls_w([same, same, same]) == 1.0
    # m = 2 reversed rankings of n = 3: rank sums all 4 → S = 0 → W = 0
    assert jury.kendalls_w([same, {"a": 1.0, "b": 2.0, "c": 3.0}]) == 0.0
    # m = 3, n = 3: ranks (1,2,3), (1,3,2), (2,1,3): sums 4, 6, 8; mean 6; S = 8; W = 12·8 / (9·24) = 0.4444
    r = [{"a": 3.0, "b": 2.0, "c": 1.0}, {"a": 3.0, "b": 1.0, "c": 2.0}, {"a": 2.0, "b": 3.0, "c": 1.0}]
    assert jury.kendalls_w(r) == pytest.approx(0.4444, abs=1e-4)
    assert jury.kendalls_w([same]) is None


def test_fleiss_kappa_hand_worked() -> None:
    assert jury.fleiss_kappa([["A", "A", "A"], ["B", "B", "B"]]) == 1.0
    assert jury.fleiss_kappa([["A", "A"], ["A", "A"]]) == 1.0  # one category throughout: full agreement
    # 2 subjects × 3 raters: (A,A,B) and (B,B,A): P_i = 1/3 each; p_A = p_B = 1/2 → P_e = 1/2; κ = (1/3 − 1/2)/(1/2)
    assert jury.fleiss_kappa([["A", "A", "B"], ["B", "B", "A"]]) == pytest.approx(-0.3333, abs=1e-4)
    assert jury.fleiss_kappa([["A"]]) is None


def test_spearman_and_quorum() -> None:
    assert jury.spearman({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 10.0, "b": 20.0, "c": 30.0}) == 1.0
    assert jury.spearman({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 3.0, "b": 2.0, "c": 1.0}) == -1.0
    assert [jury.quorum(n, None) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]
    assert jury.quorum(3, 0.34) == 2 and jury.quorum(4, 0.25) == 1


def test_adaptive_k_certifies_the_jurys_weighted_verdict() -> None:
    """Executions as jurors with shares: the bound is the weighted mean of each juror's interval. A run putting a
    at 100 and b at 0 gives d = c_a − c_b = 0.5·100 + 0.25·100 + 0.2·100 = 95 points."""
    strong = run({"a": 100, "b": 0})
    p = adaptive.progress(["a", "b"], [[strong, strong, strong], [strong]], [1, 2], W, shares=[0.9, 0.1])
    low, high = adaptive.difference_range(p, "a", "b") or (0.0, 0.0)
    # juror 0: S = 285, k = 3, m = 1 → [(285 − 100)/4, (285 + 100)/4] = [46.25, 96.25]
    # juror 1: S = 95, k = 1, m = 2 → [(95 − 200)/3, (95 + 200)/3] = [−35, 98.33]
    assert low == pytest.approx(0.9 * 46.25 - 0.1 * 35) and high == pytest.approx(0.9 * 96.25 + 0.1 * 295 / 3)
    assert adaptive.certified(p)  # 38.1 > 0.5 in every outcome
    equal = adaptive.progress(["a", "b"], [[strong, strong, strong], [strong]], [1, 2], W)
    assert adaptive.difference_range(equal, "a", "b") == pytest.approx(
        (0.5 * 46.25 - 0.5 * 35, 0.5 * 96.25 + 0.5 * 295 / 3)
    )
