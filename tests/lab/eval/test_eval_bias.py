"""Position bias, usability and cost from run-log lines (pcfjudge_lab.eval.bias), on hand-worked logs."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.cli.main import main
from pcfjudge_lab.eval import bias


def _listwise(order: list[str], ranks: dict[str, int], **extra: Any) -> dict[str, Any]:
    line = {
        "item": extra.pop("item", "q1"),
        "protocol": "consensus",
        "order": order,
        "judgments": {cid: {"rank": r} for cid, r in ranks.items()},
        "error": None,
        "cached": False,
        "latency_ms": 2000.0,
        "usage": {"input_tokens": 100, "output_tokens": 10},
    }
    return line | extra


def test_binomial_test_matches_hand_computation() -> None:
    # Bin(4, 1/4): P(X=3) = 4·(1/4)^3·(3/4) = 12/256, P(X=4) = 1/256; P(X=2) = 54/256 is more likely than 12/256.
    assert bias.binomial_test(3, 4, Fraction(1, 4)) == pytest.approx(13 / 256)
    assert bias.binomial_test(1, 4, Fraction(1, 4)) == pytest.approx(1.0)  # the mode: nothing is less likely-or-equal
    assert bias.binomial_test(0, 0, Fraction(1, 2)) == 1.0


def test_listwise_bias_counts_the_sole_top_by_displayed_position() -> None:
    lines = [
        _listwise(["0", "1", "2", "3"], {"0": 1, "1": 2, "2": 3, "3": 4}),  # first shown on top
        _listwise(["1", "0", "3", "2"], {"1": 1, "0": 2, "3": 3, "2": 4}),  # first shown on top
        _listwise(["2", "3", "0", "1"], {"0": 1, "1": 2, "2": 3, "3": 4}),  # third shown on top
        _listwise(["3", "2", "1", "0"], {"3": 1, "2": 1, "1": 3, "0": 4}),  # tie of the first two: not decisive
        _listwise(["0", "1", "2", "3"], {}, error="invalid_json: no JSON"),  # failed: not counted
        _listwise(["0", "1", "2", "3"], {"0": 4, "1": 1, "2": 2, "3": 3}, protocol="repeated_canonical"),
    ]
    out = bias.listwise_bias(lines)
    assert out["runs"] == 4 and out["candidates"] == 4
    assert out["top_by_position_pct"] == pytest.approx([62.5, 12.5, 25.0, 0.0])  # 2.5, 0.5, 1, 0 of 4 runs
    assert (out["first_on_top"], out["decisive_runs"]) == (2, 3)
    assert out["chance_pct"] == 25.0
    # Bin(3, 1/4): P(2) = 9/64; outcomes no more likely: 2 (9/64) and 3 (1/64).
    assert out["p"] == pytest.approx(10 / 64)


def test_pairwise_bias_first_shown_wins_and_order_consistency() -> None:
    def line(item: str, pass_: str, raw: str | None, verdict: str | None) -> dict[str, Any]:
        return {"item": item, "pass": pass_, "raw_verdict": raw, "verdict": verdict, "error": None}

    lines = [
        line("p1", "direct", "A", "A"),
        line("p1", "swapped", "A", "B"),  # first shown won both times: inconsistent
        line("p2", "direct", "B", "B"),
        line("p2", "swapped", "A", "B"),  # consistent
        line("p3", "direct", "A", "A"),
        line("p3", "keyed", "B", "B"),  # keyed passes are not an order test
        {**line("p4", "direct", None, None), "error": "timeout"},
    ]
    out = bias.pairwise_bias(lines)
    assert (out["first_wins"], out["second_wins"]) == (4, 1)
    assert out["first_win_pct"] == 80.0
    assert out["p"] == pytest.approx(0.375)  # 2·P(X ≤ 1), X ~ Bin(5, 1/2) = 2·6/32
    assert (out["order_consistent"], out["pairs_both_passes"]) == (1, 2)


def test_usability_and_cost() -> None:
    lines = [
        _listwise(["0", "1"], {"0": 1, "1": 2}, item="a"),
        _listwise(["1", "0"], {"0": 1, "1": 2}, item="a", latency_ms=4000.0),
        _listwise(["0", "1"], {}, item="b", error="truncated: the answer hit max_output_tokens (512 tokens)"),
        _listwise(["0", "1"], {"0": 1, "1": 2}, item="b", cached=True, usage={"input_tokens": 0, "output_tokens": 0}),
        _listwise(["0", "1"], {"0": 1, "1": 2}, item="b", protocol="repeated_canonical"),
    ]
    use = bias.usability(lines)
    assert (use["usable"], use["runs"], use["truncated"]) == (4, 5, 1)
    assert use["failed_kinds"] == {"truncated": 1}
    spend = bias.cost(lines, "consensus")
    assert spend["calls"] == 3 and spend["judgments"] == 2  # the cached line and the other protocol are left out
    assert spend["seconds_per_call"] == pytest.approx((2 + 4 + 2) / 3)
    assert spend["call_seconds_per_judgment"] == pytest.approx((6 + 2) / 2)
    assert spend["input_tokens_per_judgment"] == pytest.approx(150.0)
    text = "\n".join(bias.render({"bias": {"usability": use, "cost": spend, "listwise": bias.listwise_bias(lines)}}))
    assert "Usable runs: 4 of 5 (80.0%); failed: truncated 1" in text


def test_the_eval_uses_the_prompts_the_service_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PCFJ_RATIONALES and PCFJ_PROMPTS reach the eval's runs (they were ignored: every eval ran listwise-v2)."""
    monkeypatch.setenv("PCFJ_RATIONALES", "false")
    rb2 = tmp_path / "rb2"
    argv = ["eval", "rewardbench2", "--data", "synthetic:2", "--model", "sim:default", "--k", "3", "--executions", "1"]
    assert main([*argv, "--out", str(rb2)]) == 0
    summary = json.loads((rb2 / "summary.json").read_text())
    assert summary["prompt_version"] == "listwise-v2-terse"
    answers = [json.loads(line)["answer"] for line in (rb2 / "runs.jsonl").read_text().splitlines()]
    assert answers and all("rationale" not in c for a in answers for c in a["candidates"].values())
    assert "Position bias and cost per judgment" in (rb2 / "report.md").read_text()

    monkeypatch.delenv("PCFJ_RATIONALES")
    monkeypatch.setenv("PCFJ_PROMPTS", "v1")
    jb = tmp_path / "jb"
    argv = ["eval", "judgebench", "--data", "judgebench:gpt-4o", "--model", "sim:default", "--limit", "2"]
    assert main([*argv, "--out", str(jb)]) == 0
    assert json.loads((jb / "summary.json").read_text())["prompt_versions"] == "pairwise-v1, keyed-v1"
    assert "Response shown first won" in (jb / "report.md").read_text()
