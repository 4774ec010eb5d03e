"""Juries and offline batches: ``pcfjudge batch`` refuses a jury (``--model``, a PCFJ_JURIES name, or a request line
naming several models) before anything is written or sent, saying what to do instead; ``pcfjudge eval … --batch``
with a jury batches each juror in its own directory (its own provider batch, no live call) and pools them."""

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


def test_a_batch_refuses_a_jury_and_names_the_alternatives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PCFJ_JURIES", json.dumps({"panel": ["sim:default", "sim:oracle"]}))
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached: refused before any call
    plain = requests_file(tmp_path / "plain.jsonl")
    for step, model in (("submit", "sim:default,sim:oracle"), ("run", "panel")):
        out = tmp_path / step
        assert main(["batch", step, "--input", str(plain), "--out", str(out), "--model", model, "--yes"]) == 2
        said = capsys.readouterr().err
        assert "is a jury (sim:default, sim:oracle) and a batch judges one model" in said
        assert "--model <juror>" in said and "pcfjudge eval ... --batch" in said
        assert not out.exists()

    listed = requests_file(tmp_path / "listed.jsonl", model=["openai:judge-x", "sim:oracle"])
    out = tmp_path / "listed"
    assert main(["batch", "submit", "--input", str(listed), "--out", str(out), "--model", "openai:judge-x"]) == 2
    said = capsys.readouterr().err
    assert f"{listed}:1: model: openai:judge-x,sim:oracle is a jury" in said
    assert not list(out.rglob("input-*.jsonl"))  # nothing written for a provider


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
