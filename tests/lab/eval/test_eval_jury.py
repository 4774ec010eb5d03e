"""`pcfjudge eval rewardbench2|judgebench --model <jury>` on the simulated judges: each juror evaluated alone (its
rows are a single-model eval's), and jury rows that are the service's pooling of the jurors' per-item results,
re-derived here from the jurors' run logs without the harness's analysis code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.cli.main import main
from pcfjudge.judging import apoc, jury
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.reliability import Reliability, jury_weights
from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments
from pcfjudge_lab.eval.accuracy import source_macro

JURY = "sim:default,sim:oracle"
JUDGEBENCH = "judgebench:gpt-4o"
LABEL = {"A": "A>B", "B": "B>A", "tie": "A=B"}
TABLE_KEYS = ("n", "direct", "final", "diagnostic", "k_curve", "weights", "failed_runs")


def rb2(out: Path, model: str, *extra: str) -> int:
    args = ["eval", "rewardbench2", "--data", "synthetic:8", "--k", "3", "--executions", "2", "--model", model]
    return main([*args, "--out", str(out), "--concurrency", "8", *extra])


def jb(out: Path, model: str) -> int:
    return main(["eval", "judgebench", "--data", JUDGEBENCH, "--limit", "12", "--model", model, "--out", str(out)])


def lines_of(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (directory / "runs.jsonl").read_text().splitlines() if x.strip()]


def summary_of(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / "summary.json").read_text())
    return data


def _run(line: dict[str, Any]) -> RunJudgments:
    fields = ("score", "rank", "major_error", "hallucinated_specificity", "calibrated_uncertainty")
    judgments = {cid: CandidateJudgment(*(j[f] for f in fields)) for cid, j in line["judgments"].items()}
    return RunJudgments(judgments, line["rank_source"])


def juror_consensus(lines: list[dict[str, Any]], k: int, executions: int) -> dict[str, tuple[str, cons.Consensus]]:
    """Per item: the correct id and the juror's consensus over its first ``k`` runs of ``executions`` executions."""
    runs: dict[str, dict[tuple[int, int], RunJudgments]] = {}
    meta: dict[str, tuple[str, list[str]]] = {}
    for line in lines:
        assert line["error"] is None
        if line["protocol"] != "consensus":
            continue
        runs.setdefault(line["item"], {})[(line["execution"], line["index"])] = _run(line)
        if (line["execution"], line["index"]) == (0, 0):
            meta[line["item"]] = (line["correct"], line["order"])
    out = {}
    for item, got in runs.items():
        correct, ids = meta[item]
        execs = [[got[(e, r)] for r in range(k)] for e in range(executions)]
        out[item] = (correct, cons.aggregate(ids, execs, cons.PRESETS["proposed"]))
    return out


def pooled_accuracy(per_juror: list[dict[str, tuple[str, cons.Consensus]]], weights: list[float]) -> float:
    scores = []
    for item, (correct, first) in per_juror[0].items():
        ids = list(first.candidates)
        pooled = jury.pool_listwise(ids, [j[item][1] for j in per_juror], weights)
        scores.append(1 / len(pooled.winners) if correct in pooled.winners else 0.0)
    return 100 * sum(scores) / len(scores)


def write_calibration(path: Path, version: str) -> dict[str, Reliability]:
    """Records that make sim:oracle the reliable juror (9 of 10) and sim:default a weak one (6 of 10)."""
    records = {
        "sim:oracle": Reliability("sim:oracle", version, "s", 10, 9, 0.9, 0.3, 40, 12, (0,) * 9 + (1,)),
        "sim:default": Reliability("sim:default", version, "s", 10, 6, 0.5, 0.4, 40, 16, (1,) * 4 + (0,) * 6),
    }
    data = {"format": 1, "latest": [r.as_dict() for r in records.values()], "baselines": []}
    path.write_text(json.dumps(data), encoding="utf-8")
    return records


def test_rewardbench2_jury_rows_pool_the_jurors_and_juror_rows_are_single_model_evals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "jury"
    assert rb2(out, JURY) == 0
    summary = summary_of(out)
    rows = {row["model"]: row for row in summary["rows"]}
    assert list(rows) == ["sim:default", "sim:oracle", f"{JURY} (equal)"]
    assert summary["jurors"] == ["sim:default", "sim:oracle"] and summary["quorum"] == 2

    for juror, directory in (("sim:default", "sim-default"), ("sim:oracle", "sim-oracle")):
        alone = tmp_path / f"alone-{directory}"
        assert rb2(alone, juror) == 0
        single = summary_of(alone)
        assert {key: rows[juror][key] for key in TABLE_KEYS} == {key: single[key] for key in TABLE_KEYS}
        own = summary_of(out / directory)  # the juror's own directory is that single-model evaluation's
        assert own["command"] == single["command"].replace(str(alone), str(out / directory))
        timed = ("command", "bias")  # the command names its directory; the cost part of bias has latencies
        assert {k: v for k, v in own.items() if k not in timed} == {k: v for k, v in single.items() if k not in timed}
        assert [own["bias"][k] for k in ("usability", "listwise")] == [
            single["bias"][k] for k in ("usability", "listwise")
        ]
        same = ("item", "protocol", "execution", "index", "order", "model", "judgments")
        key = lambda line: (line["item"], line["protocol"], line["execution"], line["index"])  # noqa: E731
        assert sorted([{f: x[f] for f in same} for x in lines_of(out / directory)], key=key) == sorted(
            [{f: x[f] for f in same} for x in lines_of(alone)], key=key
        )

    per_juror_final = [juror_consensus(lines_of(out / d), 3, 2) for d in ("sim-default", "sim-oracle")]
    per_juror_direct = [juror_consensus(lines_of(out / d), 1, 1) for d in ("sim-default", "sim-oracle")]
    equal = rows[f"{JURY} (equal)"]
    assert equal["final"]["accuracy"] == pytest.approx(pooled_accuracy(per_juror_final, [0.5, 0.5]))
    assert equal["direct"]["accuracy"] == pytest.approx(pooled_accuracy(per_juror_direct, [0.5, 0.5]))
    report = (out / "report.md").read_text()
    for model in rows:
        assert f"| {model} | 8 |" in report
    assert "Calibrated weights: not available" in report

    # with every juror calibrated: a calibrated row beside, from the same logs (no new call)
    calibration = tmp_path / "calibration.json"
    records = write_calibration(calibration, summary["prompt_version"])
    monkeypatch.setenv("PCFJ_CALIBRATION_FILE", str(calibration))
    calls = sum(len(lines_of(out / d)) for d in ("sim-default", "sim-oracle"))
    assert rb2(out, JURY) == 0
    assert sum(len(lines_of(out / d)) for d in ("sim-default", "sim-oracle")) == calls
    summary = summary_of(out)
    rows = {row["model"]: row for row in summary["rows"]}
    weights, calibrated = jury_weights([records["sim:default"], records["sim:oracle"]])
    assert calibrated and summary["calibration"]["weights"]["calibrated"] == {
        "sim:default": round(weights[0], 4),
        "sim:oracle": round(weights[1], 4),
    }
    row = rows[f"{JURY} (calibrated)"]
    assert row["final"]["accuracy"] == pytest.approx(pooled_accuracy(per_juror_final, weights))
    assert summary["calibration"]["effective_jurors"] is not None


def juror_decisions(lines: list[dict[str, Any]]) -> dict[str, tuple[str, str, apoc.Decision]]:
    """Per pair: source, label and the juror's APOCJudge decision by the service's rules from its logged passes."""
    passes: dict[str, dict[str, dict[str, Any]]] = {}
    for line in lines:
        assert line["error"] is None
        passes.setdefault(line["item"], {})[line["pass"]] = line
    out = {}
    for pair, p in passes.items():
        direct, swapped = p["direct"]["verdict"], p["swapped"]["verdict"]
        plan = apoc.plan_keyed(direct, swapped, enabled=True, estimation=p["direct"]["estimation"])
        keyed = p["keyed"]["verdict"] if "keyed" in p else None
        out[pair] = (p["direct"]["source"], p["direct"]["label"], apoc.decide(direct, swapped, keyed, plan))
    return out


def test_judgebench_jury_by_name_votes_the_jurors_decisions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PCFJ_JURIES", json.dumps({"panel": ["sim:default", "sim:oracle"]}))
    out = tmp_path / "jb"
    assert jb(out, "panel") == 0
    summary = summary_of(out)
    rows = {row["model"]: row for row in summary["rows"]}
    assert list(rows) == ["sim:default", "sim:oracle", "panel (equal)"] and summary["jury"] == "panel"

    alone = tmp_path / "alone"
    assert jb(alone, "sim:oracle") == 0
    single = summary_of(alone)
    for key in ("n", "direct", "apocjudge", "delta_pp", "paired", "per_source"):
        assert rows["sim:oracle"][key] == single[key], key

    decisions = [juror_decisions(lines_of(out / d)) for d in ("sim-default", "sim-oracle")]
    apoc_ok: dict[str, list[bool]] = {}
    direct_ok: dict[str, list[bool]] = {}
    subjects = []
    for pair, (source, label, _) in decisions[0].items():
        verdicts = [d[pair][2].winner for d in decisions]
        subjects.append(verdicts)
        winner = jury.pool_verdicts(verdicts, [0.5, 0.5])
        direct = jury.pool_verdicts([d[pair][2].direct for d in decisions], [0.5, 0.5])
        apoc_ok.setdefault(source, []).append(LABEL[winner] == label)
        direct_ok.setdefault(source, []).append(LABEL[direct] == label)
    row = rows["panel (equal)"]
    assert row["apocjudge"]["source_macro"] == pytest.approx(source_macro(apoc_ok))
    assert row["direct"]["source_macro"] == pytest.approx(source_macro(direct_ok))
    assert summary["agreement"]["fleiss_kappa"] == jury.fleiss_kappa(subjects)
    report = (out / "report.md").read_text()
    assert "| panel (equal) | 12 |" in report and "`panel` = `sim:default`, `sim:oracle`" in report


def test_a_bad_jury_is_refused_before_any_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert jb(tmp_path / "a", "sim:default,sim:default") == 2
    assert "repeated: sim:default" in capsys.readouterr().err
    assert jb(tmp_path / "b", "sim:default,") == 2
    assert "none empty" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()

    single = tmp_path / "single"  # a directory holding one model's runs takes no jury
    assert jb(single, "sim:oracle") == 0
    capsys.readouterr()
    assert jb(single, JURY) == 2
    assert "holds runs made with other settings" in capsys.readouterr().err
