"""Hand-worked checks of the evaluation metrics (sign test, top-1, paired counts, JudgeBench rules)."""

from __future__ import annotations

import pytest
from pcfjudge_lab.eval.accuracy import (
    PairedCounts,
    accuracy,
    flip_label,
    judgebench_pair_score,
    normalize_decision,
    paired_counts,
    sign_test,
    source_bucket,
    source_macro,
    top1_score,
)


def test_sign_test_small_hand_values() -> None:
    # 3 vs 0: n=3, P(X<=0) = 1/8, p = 2*(1/8) = 0.25
    assert sign_test(3, 0) == 0.25
    # 4 vs 1: n=5, P(X<=1) = (C(5,0)+C(5,1))/32 = 6/32, p = 2*6/32 = 0.375
    assert sign_test(4, 1) == 0.375
    # 6 vs 0: n=6, P(X<=0) = 1/64, p = 2/64 = 0.03125
    assert sign_test(0, 6) == 0.03125
    # 1 vs 0: 2*(1/2) = 1; 5 vs 5: 2*P(X<=5) > 1, capped at 1; no discordant pairs: 1
    assert sign_test(1, 0) == 1.0
    assert sign_test(5, 5) == 1.0
    assert sign_test(0, 0) == 1.0


def test_sign_test_paper_values() -> None:
    # 21 vs 5: n=26, sum C(26,0..5) = 1+26+325+2600+14950+65780 = 83682; p = 2*83682/2^26 ≈ 0.0024939
    assert round(sign_test(21, 5), 4) == 0.0025
    assert sign_test(21, 5) == 2 * 83682 / 2**26
    assert round(sign_test(17, 7), 3) == 0.064
    assert f"{sign_test(38, 12):.1e}" == "3.1e-04"


def test_sign_test_is_symmetric_and_rejects_negatives() -> None:
    assert sign_test(5, 21) == sign_test(21, 5)
    with pytest.raises(ValueError):
        sign_test(-1, 3)


def test_top1_score_ties_share_credit() -> None:
    assert top1_score(["b"], "b") == 1.0
    assert top1_score(["a", "b"], "b") == 0.5
    assert top1_score(["a", "b", "c", "d"], "a") == 0.25
    assert top1_score(["a", "b"], "c") == 0.0
    assert top1_score([], "a") == 0.0
    assert top1_score(["a", "a", "b"], "a") == 0.5  # duplicates counted once


def test_paired_counts() -> None:
    # item 1: 0 -> 1 improved; item 2: 1 -> 0 regressed; item 4: 0.5 -> 1 improved; items 0, 3 unchanged
    counts = paired_counts([1, 0, 1, 0, 0.5], [1, 1, 0, 0, 1])
    assert counts == PairedCounts(improved=2, regressed=1, unchanged=2)
    with pytest.raises(ValueError):
        paired_counts([1, 0], [1])


def test_accuracy() -> None:
    assert accuracy([True, False, True, True]) == 75.0
    assert accuracy([1.0, 0.5, 0.0]) == 50.0
    with pytest.raises(ValueError):
        accuracy([])


def test_normalize_and_flip() -> None:
    assert normalize_decision("A>>B") == "A>B"
    assert normalize_decision(" B >> A ") == "B>A"
    assert normalize_decision("A=B") == "A=B"
    assert normalize_decision("C>D") is None
    assert normalize_decision("a>b") is None
    assert normalize_decision(None) is None
    assert flip_label("A>B") == "B>A"
    assert flip_label("B>A") == "A>B"
    assert flip_label("A=B") == "A=B"
    assert flip_label("A>>B") == "B>A"
    with pytest.raises(ValueError):
        flip_label("A<B")


def test_judgebench_consistent_and_partial_games() -> None:
    # game 2 is judged swapped: its "B>A" flips to "A>B" = label -> +1 +1 = 2 > 0
    assert judgebench_pair_score("A>B", ["A>B", "B>A"]) is True
    # failed second game scores 0: +1 + 0 = 1 > 0
    assert judgebench_pair_score("B>A", ["B>A", None]) is True
    # tie scores 0: 0 + (flip "A>B" -> "B>A" = label) +1 = 1 > 0
    assert judgebench_pair_score("B>A", ["A=B", "A>B"]) is True
    # unparseable decision scores 0
    assert judgebench_pair_score("A>B", ["A>B", "garbage"]) is True


def test_judgebench_wrong_pairs() -> None:
    # order-inconsistent: "A>B" in both games -> +1 and (flipped "B>A") -1 = 0 -> wrong
    assert judgebench_pair_score("A>B", ["A>B", "A>B"]) is False
    # two ties, two failed games, one wrong + one failed
    assert judgebench_pair_score("A>B", ["A=B", "A=B"]) is False
    assert judgebench_pair_score("A>B", [None, None]) is False
    assert judgebench_pair_score("B>A", ["A>B", None]) is False
    # consistently wrong: -1 -1
    assert judgebench_pair_score("A>B", ["B>A", "A>B"]) is False


def test_judgebench_strong_preference_normalized() -> None:
    # "A>>B" -> "A>B" (+1); "B>>A" -> "B>A", flipped "A>B" (+1)
    assert judgebench_pair_score("A>B", ["A>>B", "B>>A"]) is True
    assert judgebench_pair_score("B>A", ["A>>B", "B>>A"]) is False


def test_judgebench_pair_score_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        judgebench_pair_score("A>B", ["A>B"])
    with pytest.raises(ValueError):
        judgebench_pair_score("tie", ["A>B", "B>A"])


def test_source_bucket() -> None:
    assert source_bucket("mmlu-pro-law") == "mmlu-pro"
    assert source_bucket("mmlu-pro-computer science") == "mmlu-pro"
    assert source_bucket("livebench-reasoning") == "livebench-reasoning"
    assert source_bucket("livebench-math") == "livebench-math"
    assert source_bucket("livecodebench") == "livecodebench"
    with pytest.raises(ValueError):
        source_bucket("arena-hard")


def test_source_macro_is_mean_of_per_bucket_accuracy() -> None:
    # law 1/2 = 50, history 3/4 = 75, math 0/1 = 0 -> (50+75+0)/3 = 41.67 (micro would be 4/7 = 57.14)
    result = source_macro(
        {
            "mmlu-pro-law": [True, False],
            "mmlu-pro-history": [True, True, True, False],
            "livebench-math": [False],
        }
    )
    assert result == pytest.approx(125 / 3)
    assert source_macro({"a": [True], "b": []}) == 100.0  # empty buckets are not "present"
    with pytest.raises(ValueError):
        source_macro({})
