"""``pcfjudge bench reward`` on a small load: it starts its processes, collects each prompt's one-sample requests into
one group (P·K provider calls) and finds every reward equal to judging the group directly. No speed is asserted."""

from __future__ import annotations

import pytest
from pcfjudge.cli.main import main
from pcfjudge_lab.bench.reward_bench import RewardBench, format_report, run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("endpoint", ["openrlhf", "slime"])
def test_one_sample_requests_cost_one_judgment_per_prompt(endpoint: str) -> None:
    bench = RewardBench(prompts=3, completions=4, k=3, concurrency=12, latency_ms=20, endpoint=endpoint)
    outcome = run(bench)
    assert outcome.errors == []
    assert outcome.calls == 3 * 3  # P·K, not P·G·K = 36
    assert outcome.matches == 12 and outcome.direct_calls == 0
    assert len(outcome.latencies_ms) == 12
    report = format_report(bench, outcome)
    assert "provider calls      9 (grouped: 3·K = 9; one judgment per sample would be 12·K = 36)" in report
    assert "rewards identical   12/12" in report


def test_the_command_prints_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "reward", "--prompts", "2", "--completions", "2", "--k", "2", "--concurrency", "4"]
    assert main([*argv, "--latency-ms", "10", "--endpoint", "reward"]) == 0
    out = capsys.readouterr().out
    assert "to /v1/reward" in out and "provider calls      4 (grouped: 2·K = 4;" in out
