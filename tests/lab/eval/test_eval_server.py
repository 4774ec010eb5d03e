"""The eval harness through a deployed service (`--server`) gives the same numbers as in process; the paid-run gate."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.cli.main import main
from pcfjudge_lab.eval.progress import Estimate, paid_run_gate

SAMPLE = "rewardbench2:sample"  # bundled with the package (pcfjudge_lab/data/)
JUDGEBENCH = "judgebench:gpt-4o"
NUMBERS = ("n", "direct", "final", "diagnostic", "k_curve", "weights")


def local_and_remote(args: list[str], out: Path, server: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the eval ``args`` in process (into ``out/local``) and through ``server`` (``out/remote``): both summaries."""
    assert main([*args, "--out", str(out / "local")]) == 0
    assert main([*args, "--out", str(out / "remote"), "--server", server]) == 0
    local, remote = (json.loads((out / d / "summary.json").read_text()) for d in ("local", "remote"))
    return local, remote


@pytest.mark.slow
def test_rewardbench2_through_the_service_matches_in_process(serve_url: str, tmp_path: Path) -> None:
    common = ["eval", "rewardbench2", "--data", SAMPLE, "--k", "2,3", "--executions", "2"]
    local, remote = local_and_remote(common, tmp_path, serve_url)
    assert {k: local[k] for k in NUMBERS} == {k: remote[k] for k in NUMBERS}
    lines = (tmp_path / "remote" / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 6 * (2 * 3 + 3)
    before = (tmp_path / "remote" / "runs.jsonl").read_bytes()
    assert main([*common, "--out", str(tmp_path / "remote"), "--server", serve_url]) == 0  # resume: nothing to do
    assert (tmp_path / "remote" / "runs.jsonl").read_bytes() == before


@pytest.mark.slow
def test_judgebench_through_the_service_matches_in_process(serve_url: str, tmp_path: Path) -> None:
    common = ["eval", "judgebench", "--data", JUDGEBENCH, "--limit", "20", "--model", "sim:oracle"]
    local, remote = local_and_remote(common, tmp_path, serve_url)
    for key in ("n", "direct", "apocjudge", "per_source", "judgebench_two_game", "protocol"):
        assert local[key] == remote[key]


@pytest.mark.slow
def test_a_refused_request_stops_the_run_with_the_services_reason(serve_url: str, tmp_path: Path) -> None:
    args = ["eval", "judgebench", "--data", JUDGEBENCH, "--limit", "2", "--model", "sim:nope"]
    assert main([*args, "--out", str(tmp_path / "bad"), "--server", serve_url]) == 2


def test_paid_run_gate(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    estimate = Estimate(calls=10, input_tokens=5000, max_output_tokens=20480)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # no terminal
    refused = paid_run_gate("openai:gpt-5.4", estimate, (1.0, 10.0), yes=False)
    assert refused is not None and "--yes" in refused
    err = capsys.readouterr().err
    assert "10 backend calls" in err and "5,000 input tokens" in err and "$0.21" in err
    assert paid_run_gate("openai:gpt-5.4", estimate, None, yes=True) is None
    assert paid_run_gate("sim:oracle", estimate, None, yes=False) is None  # simulation costs nothing
    assert paid_run_gate("openai:gpt-5.4", Estimate(0, 0, 0), None, yes=False) is None  # nothing left to call
