"""``pcfjudge bench ranking`` prints one table of every method at every size, and on its simulated judge the windows
fitted onto one scale order the whole list better than the sliding window, the tournament and pointwise scoring."""

from __future__ import annotations

import pytest
from pcfjudge.cli.main import main
from pcfjudge_lab.bench.ranking_bench import Judge, RankingBench, metrics, run, sliding_method


def test_the_table_has_every_method_at_every_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "ranking", "--sizes", "20", "40", "--trials", "2"]) == 0
    rows = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("| 20 ") or line.startswith("| 40 ")
    ]
    assert len(rows) == 14 and sum("windows, whole order (4 rounds)" in r for r in rows) == 2  # 7 methods, 2 sizes
    assert all(r.split("|")[-2].strip().endswith(" ms") for r in rows if "| windows" in r)  # the service's CPU


def test_the_issues_targets_hold_on_the_simulated_judge() -> None:
    """Issues 30 and 48 at N = 100 (top 10) and a reward group of 64, measured here on 60 worlds of the bench's
    judge (the figures in docs/performance.md come from the full command): at the sliding window's calls and at the
    tournament's, the top 10 is found more often than they find it; the whole order of 64 beats pointwise scoring at
    a quarter of its calls."""
    outcomes = {(o.n, o.method.split(" (")[0]): o for o in run(SMALL)}
    sliding, tournament = outcomes[(100, "sliding window")], outcomes[(100, "tournament")]
    at_sliding = outcomes[(100, "windows, top 10, at the sliding window's calls")]
    at_tournament = outcomes[(100, "windows, top 10, at the tournament's calls")]
    assert at_sliding.metrics["recall@10"] >= sliding.metrics["recall@10"] + 0.04
    assert at_sliding.calls <= 1.2 * sliding.calls and at_sliding.metrics["spearman"] > sliding.metrics["spearman"]
    assert at_tournament.metrics["recall@10"] >= tournament.metrics["recall@10"] + 0.05
    assert at_tournament.calls <= tournament.calls
    group, pointwise = outcomes[(64, "windows, whole order")], outcomes[(64, "pointwise")]
    assert group.metrics["spearman"] >= pointwise.metrics["spearman"] + 0.03 and group.tokens <= pointwise.tokens
    assert group.metrics["spearman"] >= 0.95 and group.calls == 16  # 4 windows × 4 rounds: 4 appearances each
    assert outcomes[(100, "windows, whole order")].calls == 28  # 7 windows × 4 rounds


SMALL = RankingBench(sizes=(64, 100), trials=3)


def test_metrics_of_a_perfect_and_a_reversed_order() -> None:
    truth = [float(i) for i in range(20)]
    best_first = sorted(range(20), key=lambda c: -truth[c])
    assert metrics(best_first, truth) == {
        "recall@10": 1.0,
        "ndcg@10": 1.0,
        "top1": 1.0,
        "spearman": 1.0,
        "kendall": 1.0,
    }
    worst = metrics(best_first[::-1], truth)
    assert worst["recall@10"] == 0.0 and worst["spearman"] == -1.0 and worst["kendall"] == -1.0


def test_the_sliding_window_makes_one_back_to_front_pass() -> None:
    import random

    judge = Judge([float(i) for i in range(40)], RankingBench(drift=0.0, noise=0.0, bias=0.0), random.Random(0))
    order = sliding_method(judge, list(range(40)))  # worst first: the best must bubble up through every window
    assert judge.calls == 4 and order[0] == 39  # windows [24:40], [16:32], [8:24], [0:16]


def test_the_reference_looks_where_the_doubt_is_and_counts_its_looks_as_calls() -> None:
    """The reference (not a method: noise only, one look at a time) with no noise finds the top 10 exactly from one
    look each; with noise, its looks go to the candidates near the boundary, and its cost is looks / w calls."""
    import random

    from pcfjudge_lab.bench.ranking_bench import reference_method

    truth = [float(i) for i in range(100)]
    exact = Judge(truth, RankingBench(noise=0.0), random.Random(0))
    assert reference_method(exact, 100, 192)[:10] == list(range(99, 89, -1)) and exact.calls == 12
    noisy = Judge([random.Random(f"r{c}").uniform(10, 90) for c in range(100)], RankingBench(), random.Random(1))
    best = set(sorted(range(100), key=lambda c: -noisy.truth[c])[:10])
    assert len(best & set(reference_method(noisy, 100, 1600)[:10])) >= 8 and noisy.shown == 1600
