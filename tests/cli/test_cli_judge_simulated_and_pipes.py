"""``pcfjudge judge`` says when its verdicts come from the simulated judge, takes the oracle's answer for the
simulated oracle, and stops quietly when the reader of its output goes away (``pcfjudge judge --json … | head``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pcfjudge.cli.main import main

from tests.support.basics import OPENAI_KEY, ROOT
from tests.support.inprocess import FakeProvider
from tests.support.processes import clean_env

QUESTION = "In which year did the Berlin Wall fall?"
ANSWERS = ["1989.", "It fell in 1991.", "Not sure."]
NOTE = "is the simulated judge: its verdicts are seeded draws"


def test_the_table_says_once_that_the_verdicts_are_simulated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text("\n".join(json.dumps({"question": QUESTION, "candidates": ANSWERS}) for _ in range(2)) + "\n")
    assert main(["judge", "--file", str(items), "--k", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count(NOTE) == 1 and out.index(NOTE) > out.index("★ winner")  # under the first table
    assert "Note: sim:default" in out and "OPENAI_API_KEY" in out


def test_with_json_the_note_goes_to_stderr_and_stdout_stays_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", QUESTION, *ANSWERS, "--json"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["model"] for line in captured.out.splitlines()] == ["sim:default"]
    assert NOTE in captured.err


def test_the_simulated_oracle_takes_the_truly_best_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", QUESTION, *ANSWERS, "--model", "sim:oracle", "--oracle-best", "0", "--json"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["model"] == "sim:oracle" and result["winners"] == ["0"]
    assert "told which answer is truly best" in captured.err
    assert main(["judge", QUESTION, *ANSWERS, "--oracle-best", "0"]) == 1  # the default judge is no oracle
    assert "only the simulated oracle" in capsys.readouterr().err


def test_a_real_judge_gets_no_note(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    assert main(["judge", QUESTION, *ANSWERS, "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert "openai:" in out and "simulated" not in out


@pytest.mark.slow
def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """As ``pcfjudge judge --file items.jsonl --json | head -1``: the reader leaves after one line."""
    items = tmp_path / "items.jsonl"
    lines = (json.dumps({"question": f"{QUESTION} ({i})", "candidates": ANSWERS}) for i in range(300))
    items.write_text("\n".join(lines) + "\n")
    argv = [sys.executable, "-m", "pcfjudge.cli.main", "judge", "--file", str(items), "--json", "--k", "1"]
    with subprocess.Popen(argv, cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # what head does after its line: every later write meets a closed pipe
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 141, stderr
    assert json.loads(first)["model"] == "sim:default"
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_a_jury_prints_a_line_per_juror_and_the_jurys_agreement(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["judge", QUESTION, *ANSWERS, "--model", "sim:default,sim:oracle", "--oracle-best", "0", "--k", "3"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "· sim:default,sim:oracle · K=3 ·" in out and "12 calls" not in out
    oracle = next(line for line in out.splitlines() if line.startswith("  juror sim:oracle"))
    assert "(weight 0.50): winner [0]" in oracle
    assert "  jury sim:default,sim:oracle: Kendall's W " in out and "equal weights" in out
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out.splitlines()[0])
    assert [j["model"] for j in data["jury"]["jurors"]] == ["sim:default", "sim:oracle"]
