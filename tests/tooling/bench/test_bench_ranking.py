"""``pcfjudge bench ranking`` prints one table of every method at every size, and on its simulated judge the windows
fitted onto one scale order the whole list better than the sliding window, the tournament and pointwise scoring."""

from __future__ import annotations

import pytest
from pcfjudge.cli.main import main
from pcfjudge.tooling.bench.ranking_bench import Judge, RankingBench, metrics, run, sliding_method


def test_the_table_has_every_method_at_every_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "ranking", "--sizes", "20", "40", "--trials", "2"]) == 0
    rows = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("| 20 ") or line.startswith("| 40 ")
    ]
    assert len(rows) == 10 and sum("windows (4 rounds)" in r for r in rows) == 2  # 5 methods at 2 sizes


def test_windows_order_the_whole_list_best_on_the_simulated_judge() -> None:
    outcomes = run(RankingBench(sizes=(100,), trials=10))
    spearman = {o.method: o.metrics["spearman"] for o in outcomes if not o.method.startswith("windows (2")}
    ours = spearman.pop("windows (4 rounds)")
    assert ours > max(spearman.values())
    recall = {
        o.method.split(" (")[0] + ("+" if "boundary" in o.method else ""): o.metrics["recall@10"] for o in outcomes
    }
    assert recall["windows+"] > max(recall["sliding window"], recall["tournament"])  # calls spent at the boundary
    assert next(o for o in outcomes if o.method.startswith("windows")).calls == 28  # 7 windows × 4 rounds


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
