"""`pcfjudge eval judgebench` and `pcfjudge eval score` end to end (simulated judges, the bundled JudgeBench split)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.cli.main import main
from pcfjudge.judging import apoc
from pcfjudge_lab.eval.accuracy import judgebench_pair_score, source_macro
from pcfjudge_lab.eval.score import score_judgments_file

JUDGEBENCH = "judgebench:gpt-4o"  # bundled with the package (pcfjudge_lab/data/)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LABEL = {"A": "A>B", "B": "B>A", "tie": "A=B"}


def run_jb(out: Path, *extra: str) -> int:
    return main(["eval", "judgebench", "--data", JUDGEBENCH, "--out", str(out), *extra])


def lines_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]


def test_judgebench_end_to_end_matches_a_recomputation_from_the_log(tmp_path: Path) -> None:
    out = tmp_path / "jb"
    assert run_jb(out, "--limit", "60", "--model", "sim:oracle") == 0
    for name in ("report.md", "summary.json", "judgments.jsonl"):
        assert (out / name).exists()
    assert (out / "per_source.png").read_bytes()[:8] == PNG_MAGIC

    passes: dict[str, dict[str, dict[str, Any]]] = {}
    for line in lines_of(out):
        assert line["error"] is None
        passes.setdefault(line["item"], {})[line["pass"]] = line
    assert len(passes) == 60
    direct_ok: dict[str, list[bool]] = {}
    apoc_ok: dict[str, list[bool]] = {}
    two_game = []
    for p in passes.values():
        d, s = p["direct"]["verdict"], p["swapped"]["verdict"]
        assert s == apoc.unswap(p["swapped"]["raw_verdict"])
        assert ("keyed" in p) == (d != s)  # the keyed pass runs exactly when the orders disagree
        winner = s if d != s and p["keyed"]["verdict"] == s else d  # override only when keyed confirms swapped
        direct_ok.setdefault(p["direct"]["source"], []).append(LABEL[d] == p["direct"]["label"])
        apoc_ok.setdefault(p["direct"]["source"], []).append(LABEL[winner] == p["direct"]["label"])
        two_game.append(judgebench_pair_score(p["direct"]["label"], [LABEL[d], LABEL[p["swapped"]["raw_verdict"]]]))

    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 60 and summary["simulation"] is True
    assert summary["direct"]["source_macro"] == pytest.approx(source_macro(direct_ok))
    assert summary["apocjudge"]["source_macro"] == pytest.approx(source_macro(apoc_ok))
    assert summary["judgebench_two_game"]["judgebench"]["overall"] == round(100 * sum(two_game) / 60, 2)
    assert summary["judgebench_two_game"] == score_judgments_file(out / "judgments.jsonl")
    assert summary["protocol"]["keyed_ran"] == sum(1 for p in passes.values() if "keyed" in p)

    report = (out / "report.md").read_text()
    d_macro, a_macro = source_macro(direct_ok), source_macro(apoc_ok)
    assert f"| sim:oracle | 60 | {d_macro:.2f} | {a_macro:.2f} | {a_macro - d_macro:+.2f} |" in report
    assert "SIMULATION" in report and "JudgeBench's own metric" in report

    before = (out / "runs.jsonl").read_bytes()
    assert run_jb(out, "--limit", "60", "--model", "sim:oracle") == 0  # rerun: everything is in the log
    assert (out / "runs.jsonl").read_bytes() == before


def test_judgebench_without_an_oracle_says_accuracy_is_chance(tmp_path: Path) -> None:
    out = tmp_path / "jb"
    assert run_jb(out, "--limit", "12", "--model", "sim:default") == 0
    report = (out / "report.md").read_text()
    assert "`sim:default`" in report and "chance" in report


def test_eval_score_prints_the_scorer_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "judgments.jsonl"
    records = [
        {
            "pair_id": "1",
            "label": "A>B",
            "source": "mmlu-pro-law",
            "judgments": [{"decision": "A>B"}, {"decision": "B>A"}],
        },
        {
            "pair_id": "2",
            "label": "A>B",
            "source": "livebench-math",
            "judgments": [{"decision": "A>B"}, {"decision": "A>B"}],
        },
        {"pair_id": "3", "label": "B>A", "source": "livecodebench", "judgments": [None, {"decision": "A>B"}]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["eval", "score", str(path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == score_judgments_file(path)
    assert printed["n"] == 3 and printed["judgebench"]["overall"] == pytest.approx(66.67)
    assert main(["eval", "score", str(path), "--format", "md"]) == 0
    assert "| JudgeBench overall (%) | 66.67 |" in capsys.readouterr().out
    assert main(["eval", "score", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
