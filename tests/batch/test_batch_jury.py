"""Juries and offline batches: ``pcfjudge batch --model <jury>`` batches each juror in its own directory (its own
provider batch, no live call) and judges the requests by the jury; a request line naming another jury is refused before
anything is written or sent; ``pcfjudge eval … --batch`` with a jury batches each juror too and pools them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pcfjudge.cli.main import main

from tests.support.basics import OPENAI_KEY
from tests.support.inprocess import FakeProvider

QUESTION = {"question": "2+2?", "candidates": [{"id": "a", "text": "4"}, {"id": "b", "text": "5"}], "k": 2}


def requests_file(path: Path, **fields: object) -> Path:
    path.write_text(json.dumps(QUESTION | fields) + "\n", encoding="utf-8")
    return path


def test_a_line_naming_another_jury_is_refused_before_anything_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached: refused before any call
    listed = requests_file(tmp_path / "listed.jsonl", model=["openai:judge-x", "sim:oracle"])
    out = tmp_path / "listed"
    assert main(["batch", "submit", "--input", str(listed), "--out", str(out), "--model", "openai:judge-x"]) == 2
    said = capsys.readouterr().err
    assert f"{listed}:1: model: openai:judge-x,sim:oracle is a jury" in said
    assert not list(out.rglob("input-*.jsonl"))  # nothing written for a provider


@pytest.mark.slow
def test_a_jury_is_batched_juror_by_juror_and_judged_by_the_jury(
    fake: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pcfjudge batch run --model a,b``: each juror's calls go to its own provider batch (no live call), and
    judgments.jsonl holds the jury's responses, pooled from the jurors' collected answers."""
    for name, value in {
        "OPENAI_API_KEY": OPENAI_KEY,
        "OPENAI_BASE_URL": f"{fake.url}/v1",
        "PCFJ_BATCH_POLL_S": "0.01",
    }.items():
        monkeypatch.setenv(name, value)
    jury = "openai:judge-x,openai:judge-z"
    path = requests_file(tmp_path / "requests.jsonl")
    out = tmp_path / "jury"
    assert main(["batch", "run", "--input", str(path), "--out", str(out), "--model", jury, "--yes"]) == 0
    assert fake.calls()["completions"] == {}  # not one live call
    assert fake.control.get("/_control/batches").json()["served"] == {"openai": 4}  # K=2 for each juror
    (line,) = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert line["model"] == jury and [j["model"] for j in line["jury"]["jurors"]] == jury.split(",")
    assert all(j["delivered"] and j["runs_ok"] == 2 for j in line["jury"]["jurors"])
    for juror in jury.split(","):
        assert (out / "batch" / juror.replace(":", "-") / "judgments.jsonl").is_file()  # each juror's own answers
    capsys.readouterr()
    assert main(["batch", "status", "--out", str(out)]) == 0  # the jury directory remembers its jury and input
    assert "jury judgments:" in capsys.readouterr().out


@pytest.mark.slow
def test_eval_batch_with_a_jury_batches_each_juror_in_its_own_directory(
    fake: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "OPENAI_API_KEY": OPENAI_KEY,
        "OPENAI_BASE_URL": f"{fake.url}/v1",
        "PCFJ_BATCH_POLL_S": "0.01",
    }.items():
        monkeypatch.setenv(name, value)
    jury = "openai:judge-x,openai:judge-z"
    args = ["eval", "rewardbench2", "--data", "synthetic:4", "--model", jury, "--k", "3", "--executions", "1"]
    assert main([*args, "--out", str(tmp_path / "jury"), "--batch", "--yes"]) == 0
    assert fake.calls()["completions"] == {}  # not one live call
    per_juror = {}
    for juror in ("openai-judge-x", "openai-judge-z"):
        summary = json.loads((tmp_path / "jury" / juror / "batch" / "summary.json").read_text())
        assert summary["model"] == f"openai:{juror.removeprefix('openai-')}" and summary["collected_ok"] > 0
        per_juror[juror] = summary["collected_ok"]
    assert fake.control.get("/_control/batches").json()["served"] == {"openai": sum(per_juror.values())}
    rows = [row["model"] for row in json.loads((tmp_path / "jury" / "summary.json").read_text())["rows"]]
    assert rows == ["openai:judge-x", "openai:judge-z", f"{jury} (equal)"]
