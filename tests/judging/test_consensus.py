"""Paper Eq. 1–5 on hand-worked examples, plus properties (hypothesis)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pcfjudge.judging import consensus as cons
from pcfjudge.judging import permutations as perms
from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments


def run(scores: dict[str, float], ranks: dict[str, float] | None = None, unc: set[str] = frozenset()) -> RunJudgments:
    ranks = ranks or cons.ranks_from_scores(scores)
    return RunJudgments({c: CandidateJudgment(scores[c], ranks[c], c.startswith("x"), False, c in unc) for c in scores})


def test_hand_worked_two_runs_three_candidates() -> None:
    # n=3, K=2.
    # run 1: a=80 b=60 c=40, ranks a1 b2 c3, c marked uncertain; top set {a}
    # run 2: a=70 b=70.3 c=50, ranks b1 a2 c3; top 70.3, a is within 0.5 -> top set {a, b}
    r1 = run({"a": 80, "b": 60, "c": 40}, unc={"c"})
    r2 = run({"a": 70, "b": 70.3, "c": 50}, {"b": 1, "a": 2, "c": 3})
    out = cons.aggregate(["a", "b", "c"], [[r1, r2]], cons.PRESETS["proposed"])
    a, b, c = out.candidates["a"], out.candidates["b"], out.candidates["c"]
    # mean:  a=(80+70)/2=75  b=(60+70.3)/2=65.15  c=(40+50)/2=45
    assert (a.mean_score, b.mean_score, c.mean_score) == pytest.approx((75, 65.15, 45))
    # borda: 100/(K(n-1)) = 25 per point; a: (3-1)+(3-2)=3 -> 75; b: (3-2)+(3-1)=3 -> 75; c: 0
    assert (a.borda, b.borda, c.borda) == pytest.approx((75, 75, 0))
    # top vote: a=(1 + 1/2)/2=0.75  b=(0 + 1/2)/2=0.25  c=0
    assert (a.top_vote, b.top_vote, c.top_vote) == pytest.approx((0.75, 0.25, 0))
    # uncertainty: c=1/2
    assert c.uncertainty == pytest.approx(0.5)
    # C = .5 mean + .25 borda + .2*100*vote + .05*100*unc
    # a = 37.5 + 18.75 + 15 + 0 = 71.25 ; b = 32.575 + 18.75 + 5 = 56.325 ; c = 22.5 + 0 + 0 + 2.5 = 25
    assert (a.consensus, b.consensus, c.consensus) == pytest.approx((71.25, 56.325, 25))
    assert out.winners == ["a"]
    assert out.ranking == ["a", "b", "c"]


def test_flags_are_reported_but_do_not_enter_consensus() -> None:
    # "xa" carries a major-error flag in every run; its consensus equals that of an identical unflagged run.
    flagged = cons.aggregate(["xa", "b"], [[run({"xa": 90, "b": 50})]], cons.PRESETS["proposed"])
    plain = cons.aggregate(["a", "b"], [[run({"a": 90, "b": 50})]], cons.PRESETS["proposed"])
    assert flagged.candidates["xa"].major_error == 1.0
    assert flagged.candidates["xa"].consensus == plain.candidates["a"].consensus


def test_ties_within_half_point_are_all_winners() -> None:
    # score_only: consensus = mean score. a=80, b=79.6 (within 0.5) -> both win; c=79.4 is 0.6 away -> not.
    out = cons.aggregate(["a", "b", "c"], [[run({"a": 80, "b": 79.6, "c": 79.4})]], cons.PRESETS["score_only"])
    assert out.winners == ["a", "b"]


def test_executions_are_averaged() -> None:
    # score_only, two executions of one run each: a = (80 + 60)/2 = 70, b = (50 + 70)/2 = 60
    e1 = [run({"a": 80, "b": 50})]
    e2 = [run({"a": 60, "b": 70})]
    out = cons.aggregate(["a", "b"], [e1, e2, []], cons.PRESETS["score_only"])
    assert out.candidates["a"].consensus == pytest.approx(70)
    assert out.candidates["b"].consensus == pytest.approx(60)
    assert out.winners == ["a"]


def test_tied_scores_share_average_rank() -> None:
    # 90, 70, 70, 10 -> ranks 1, 2.5, 2.5, 4
    assert cons.ranks_from_scores({"a": 90, "b": 70, "c": 70, "d": 10}) == {"a": 1, "b": 2.5, "c": 2.5, "d": 4}


def test_presets_match_paper_table_3() -> None:
    assert cons.PRESETS["proposed"].as_dict() == {"score": 0.5, "borda": 0.25, "top_vote": 0.2, "uncertainty": 0.05}
    assert cons.PRESETS["no_uncertainty"].as_dict() == {"score": 0.5, "borda": 0.27, "top_vote": 0.23, "uncertainty": 0}
    assert cons.PRESETS["score_top"].as_dict() == {"score": 0.6, "borda": 0, "top_vote": 0.4, "uncertainty": 0}
    assert len(cons.PRESETS) == 8


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"score": 0.5, "borda": 0.5, "top_vote": 0.5, "uncertainty": 0}, "sum to 1"),
        ({"score": 1.2, "borda": -0.2, "top_vote": 0, "uncertainty": 0}, "non-negative"),
        ({"score": 1.0}, "exactly the keys"),
        ("best", "unknown weight preset"),
    ],
)
def test_bad_weights_are_refused_with_a_reason(spec: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cons.resolve_weights(spec)  # type: ignore[arg-type]


weights = st.tuples(*[st.floats(0, 1) for _ in range(4)]).filter(lambda w: sum(w) > 0.01)


@given(weights)
def test_normalised_weights_sum_to_one(raw: tuple[float, float, float, float]) -> None:
    total = sum(raw)
    w = cons.resolve_weights(
        dict(zip(("score", "borda", "top_vote", "uncertainty"), (x / total for x in raw), strict=False))
    )
    assert math.isclose(sum(w.as_dict().values()), 1.0, abs_tol=1e-6)


def _judge(order: tuple[int, ...], ids: list[str], score_of: dict[str, float]) -> RunJudgments:
    """An order-invariant judge: each candidate's score depends only on the candidate."""
    shown = [ids[i] for i in order]
    return run({cid: score_of[cid] for cid in shown})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 100), min_size=2, max_size=8), st.randoms(), st.integers(1, 7))
def test_relabelling_does_not_change_who_wins(scores: list[int], rnd: object, k: int) -> None:
    n = len(scores)
    ids = [f"c{i}" for i in range(n)]
    score_of = dict(zip(ids, map(float, scores), strict=False))
    runs = [_judge(p, ids, score_of) for p in perms.schedule(n, k)]
    before = cons.aggregate(ids, [runs], cons.PRESETS["proposed"])
    relabel = dict(zip(ids, [f"z{i}" for i in reversed(range(n))], strict=False))
    new_ids = [relabel[c] for c in ids]
    new_scores = {relabel[c]: s for c, s in score_of.items()}
    after = cons.aggregate(
        new_ids, [[_judge(p, new_ids, new_scores) for p in perms.schedule(n, k)]], cons.PRESETS["proposed"]
    )
    assert sorted(after.winners) == sorted(relabel[w] for w in before.winners)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 8), st.integers(1, 4), st.integers(0, 3))
def test_position_only_judge_gives_near_equal_consensus(n: int, blocks: int, seed: int) -> None:
    # The judge scores purely by displayed position (100, 90, 80, ...). Over a balanced schedule of whole
    # blocks (K a multiple of n) every candidate sees every position equally often: consensus is equal.
    k = min(n * blocks, perms.max_k(n))
    ids = [f"c{i}" for i in range(n)]
    runs = [run({ids[cand]: 100.0 - 10 * pos for pos, cand in enumerate(p)}) for p in perms.schedule(n, k, seed)]
    out = cons.aggregate(ids, [runs], cons.PRESETS["proposed"])
    values = [c.consensus for c in out.candidates.values()]
    spread = max(values) - min(values)
    if k % n == 0:
        assert spread == pytest.approx(0, abs=1e-9)
        assert sorted(out.winners) == sorted(ids)
    else:  # a partial block: each candidate is off by at most one visit per position
        assert spread <= 100.0 / k + 1e-9


@given(st.lists(st.floats(0, 100), min_size=1, max_size=10))
def test_every_candidate_within_half_point_of_max_wins(values: list[float]) -> None:
    scores = {f"c{i}": v for i, v in enumerate(values)}
    winners = cons.within_tolerance_of_max(scores)
    best = max(values)
    assert set(winners) == {c for c, v in scores.items() if v >= best - 0.5}
