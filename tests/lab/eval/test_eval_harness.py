"""`pcfjudge eval rewardbench2` end to end on the simulated oracle judge: log, report, figures, resume."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.backends.base import Completion, JudgeCall
from pcfjudge.backends.sim import SimBackend
from pcfjudge.cli.main import main
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments
from pcfjudge_lab.eval.accuracy import sign_test

from tests.support.eval_synth import write_rewardbench2

SAMPLE = "rewardbench2:sample"  # bundled with the package (pcfjudge_lab/data/)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run_rb2(data: Path | str, out: Path, *extra: str) -> int:
    return main(["eval", "rewardbench2", "--data", str(data), "--out", str(out), "--concurrency", "8", *extra])


def log_lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]


def _run(judgments: dict[str, dict[str, Any]], rank_source: str) -> RunJudgments:
    fields = ("score", "rank", "major_error", "hallucinated_specificity", "calibrated_uncertainty")
    return RunJudgments({cid: CandidateJudgment(*(j[f] for f in fields)) for cid, j in judgments.items()}, rank_source)  # type: ignore[arg-type]


def recompute(lines: list[dict[str, Any]], k_max: int = 7, executions: int = 3) -> dict[str, Any]:
    """An independent re-derivation of the tables from the raw log (not using pcfjudge_lab.eval.rewardbench2.analysis)."""
    items: dict[str, dict[str, Any]] = {}
    for line in lines:
        assert line["error"] is None
        item = items.setdefault(line["item"], {"correct": line["correct"], "runs": {}})
        item["runs"][(line["protocol"], line["execution"], line["index"])] = _run(
            line["judgments"], line["rank_source"]
        )
    ids = ["0", "1", "2", "3"]

    def score(item: dict[str, Any], execs: list[list[tuple[str, int, int]]], w: cons.Weights) -> float:
        winners = cons.aggregate(ids, [[item["runs"][key] for key in keys] for keys in execs], w).winners
        return 1 / len(winners) if item["correct"] in winners else 0.0

    proposed = cons.PRESETS["proposed"]
    out: dict[str, Any] = {"direct": [], "final": [], "pcf": {}, "rep": {}, "weights": {}}
    for item in items.values():
        out["direct"].append(score(item, [[("consensus", 0, 0)]], proposed))
        out["final"].append(
            score(item, [[("consensus", e, r) for r in range(k_max)] for e in range(executions)], proposed)
        )
        for k in range(1, k_max + 1):
            out["pcf"].setdefault(k, []).append(score(item, [[("consensus", 0, r) for r in range(k)]], proposed))
            out["rep"].setdefault(k, []).append(
                score(item, [[("repeated_canonical", 0, r) for r in range(k)]], proposed)
            )
        for name, w in cons.PRESETS.items():
            out["weights"].setdefault(name, []).append(score(item, [[("consensus", 0, r) for r in range(k_max)]], w))
    return out


def pct(scores: list[float]) -> float:
    return 100 * sum(scores) / len(scores)


def test_rewardbench2_end_to_end_on_synthetic_items(tmp_path: Path) -> None:
    data = write_rewardbench2(tmp_path / "rb2.jsonl", 120)
    out = tmp_path / "out"
    assert run_rb2(data, out) == 0

    for name in ("paired_gains.png", "accuracy_vs_k.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
    lines = log_lines(out)
    keys = Counter((x["item"], x["protocol"], x["execution"], x["index"]) for x in lines)
    assert len(keys) == len(lines) == 120 * (3 * 7 + 7)  # every run logged exactly once
    assert len({x["correct"] for x in lines}) > 1  # the correct answer is not always first
    # The repeated-canonical run 0 is the direct judge's call: served from the cache, same judgments.
    by_key = {(x["item"], x["protocol"], x["execution"], x["index"]): x for x in lines}
    for item in {x["item"] for x in lines}:
        rep0, direct = by_key[(item, "repeated_canonical", 0, 0)], by_key[(item, "consensus", 0, 0)]
        assert rep0["cached"] and rep0["judgments"] == direct["judgments"] and rep0["order"] == direct["order"]
        assert direct["order"] == ["0", "1", "2", "3"]

    summary = json.loads((out / "summary.json").read_text())
    ref = recompute(lines)
    assert summary["n"] == 120 and summary["simulation"] is True and summary["incomplete_items"] == []
    assert summary["direct"]["accuracy"] == pytest.approx(pct(ref["direct"]))
    assert summary["final"]["accuracy"] == pytest.approx(pct(ref["final"]))
    improved = sum(f > d for d, f in zip(ref["direct"], ref["final"], strict=True))
    regressed = sum(f < d for d, f in zip(ref["direct"], ref["final"], strict=True))
    assert (summary["final"]["improved"], summary["final"]["regressed"]) == (improved, regressed)
    assert summary["final"]["unchanged"] == 120 - improved - regressed
    assert summary["final"]["sign_test_p"] == pytest.approx(sign_test(improved, regressed))
    for k in (3, 5, 7):
        assert summary["diagnostic"]["pcfjudge"][str(k)]["accuracy"] == pytest.approx(pct(ref["pcf"][k]))
        assert summary["diagnostic"]["repeated_canonical"][str(k)]["accuracy"] == pytest.approx(pct(ref["rep"][k]))
    assert summary["k_curve"]["pcfjudge"] == pytest.approx([pct(ref["pcf"][k]) for k in range(1, 8)])
    for name in cons.PRESETS:
        assert summary["weights"][name]["accuracy"] == pytest.approx(pct(ref["weights"][name]))

    report = (out / "report.md").read_text()
    assert "SIMULATION" in report and "ties" in report.lower() and "1/|winners|" in report
    row = (
        f"| sim:oracle | 120 | {pct(ref['direct']):.2f} | {pct(ref['final']):.2f} | "
        f"{pct(ref['final']) - pct(ref['direct']):+.2f} | {improved} / {regressed} | {120 - improved - regressed} |"
    )
    assert row in report
    assert "| sim:oracle | PCFJudge | " + f"{pct(ref['pcf'][3]):.2f}" in report
    assert "| Score/top | 0.60 | 0.00 | 0.40 | 0.00 | " + f"{pct(ref['weights']['score_top']):.2f}" in report
    assert "![Paired gains against the direct judge](paired_gains.png)" in report


def test_rewardbench2_on_the_bundled_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sample"
    assert run_rb2(SAMPLE, out, "--k", "2,4", "--executions", "2") == 0
    printed = capsys.readouterr().out
    assert "Table 1" in printed and "| sim:oracle | 6 |" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 6 and summary["ks"] == [2, 4] and summary["executions"] == 2
    assert len(log_lines(out)) == 6 * (2 * 4 + 4)
    assert (out / "report.md").exists() and (out / "accuracy_vs_k.png").read_bytes()[:8] == PNG_MAGIC


def test_simulation_pcfjudge_beats_direct_and_repeated_canonical_does_not(tmp_path: Path) -> None:
    data = write_rewardbench2(tmp_path / "rb2.jsonl", 300, seed=11)
    out = tmp_path / "out"
    assert run_rb2(data, out, "--k", "7") == 0
    summary = json.loads((out / "summary.json").read_text())
    pcf7 = summary["diagnostic"]["pcfjudge"]["7"]
    rep7 = summary["diagnostic"]["repeated_canonical"]["7"]
    final = summary["final"]
    assert final["delta_pp"] > 3 and final["improved"] > 2 * final["regressed"] and final["sign_test_p"] < 0.01
    assert pcf7["delta_pp"] > 2 and pcf7["improved"] > 2 * pcf7["regressed"] and pcf7["sign_test_p"] < 0.05
    assert abs(rep7["delta_pp"]) < 2 and rep7["sign_test_p"] > 0.05


def test_interrupted_run_resumes_without_repeating_logged_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_rewardbench2(tmp_path / "rb2.jsonl", 20, seed=3)
    calls: list[tuple[int, tuple[str, ...]]] = []
    original = SimBackend.complete

    async def interrupting(self: SimBackend, call: JudgeCall, until: float | None = None) -> Completion:
        if len(calls) >= 100:
            raise KeyboardInterrupt  # as Ctrl-C would, in the middle of a batch of calls
        calls.append((call.sample, call.displayed))
        return await original(self, call, until)

    monkeypatch.setattr(SimBackend, "complete", interrupting)
    out = tmp_path / "out"
    assert run_rb2(data, out, "--concurrency", "2") == 130
    first = log_lines(out)
    assert 28 < len(first) <= 100 and not (out / "summary.json").exists()
    with (out / "runs.jsonl").open("a") as handle:
        handle.write('{"item": "Factuality:1", "protoc')  # a line torn by the crash

    logged = {(x["sample"], tuple(x["order"]), x["item"]) for x in first if not x["cached"]}
    calls.clear()

    async def counting(self: SimBackend, call: JudgeCall, until: float | None = None) -> Completion:
        calls.append((call.sample, call.displayed))
        return await original(self, call, until)

    monkeypatch.setattr(SimBackend, "complete", counting)
    assert run_rb2(data, out) == 0
    lines = log_lines_valid(out)
    keys = Counter((x["item"], x["protocol"], x["execution"], x["index"]) for x in lines)
    assert max(keys.values()) == 1 and len(keys) == 20 * 28  # nothing duplicated, nothing lost
    assert len(calls) == 20 * 27 - len(logged)  # only calls not yet logged were made
    by_item_text = _displayed_index(data)
    recalled = {(s, by_item_text[d]) for s, d in calls}
    assert not recalled & {(s, (item, order)) for s, order, item in logged}

    fresh = tmp_path / "fresh"
    assert run_rb2(data, fresh) == 0
    resumed, clean = (json.loads((d / "summary.json").read_text()) for d in (out, fresh))
    for key in ("direct", "final", "diagnostic", "k_curve", "weights", "n"):
        assert resumed[key] == clean[key]


def log_lines_valid(out: Path) -> list[dict[str, Any]]:
    lines = []
    for raw in (out / "runs.jsonl").read_text().splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            continue
    return lines


def _displayed_index(data: Path) -> dict[tuple[str, ...], tuple[str, tuple[str, ...]]]:
    """Displayed texts -> (item id, displayed order of candidate ids), for the seed-0 candidate shuffle."""
    from pcfjudge.judging.permutations import schedule
    from pcfjudge_lab.eval.rewardbench2.loader import load_rewardbench2

    index: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {}
    for item in load_rewardbench2(data, seed=0):
        for perm in schedule(4, 24):
            index[tuple(item.candidates[i] for i in perm)] = (item.item_id, tuple(str(i) for i in perm))
    return index


def test_failed_runs_are_logged_and_only_they_are_retried_on_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_rewardbench2(tmp_path / "rb2.jsonl", 10, seed=5)
    out = tmp_path / "out"
    monkeypatch.setenv("PCFJ_SIM_FAIL_RATE", "0.3")
    monkeypatch.setenv("PCFJ_MAX_RETRIES", "0")
    run_rb2(data, out, "--k", "3", "--executions", "2")  # may end in a report or "incomplete"; either way logged
    first = log_lines(out)
    failed = {(x["item"], x["protocol"], x["execution"], x["index"]) for x in first if x["error"] is not None}
    assert failed and all(x["error"].startswith("provider_error") for x in first if x["error"])

    monkeypatch.setenv("PCFJ_SIM_FAIL_RATE", "0")
    calls: list[int] = []
    original = SimBackend.complete

    async def counting(self: SimBackend, call: JudgeCall, until: float | None = None) -> Completion:
        calls.append(call.sample)
        return await original(self, call, until)

    monkeypatch.setattr(SimBackend, "complete", counting)
    assert run_rb2(data, out, "--k", "3", "--executions", "2") == 0
    lines = log_lines(out)
    ok = {(x["item"], x["protocol"], x["execution"], x["index"]) for x in lines if x["error"] is None}
    assert len(ok) == 10 * (2 * 3 + 3) and failed <= ok  # every failed run now has a successful line
    assert len(lines) == len(first) + len(failed)  # one new line per failed run, nothing else re-logged
    assert len(calls) <= len(failed)  # a failed repeated run 0 can be served by the logged direct call
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 10 and summary["failed_runs"] == 0


def test_missing_eval_extra_tells_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now raises ImportError
    assert run_rb2(SAMPLE, tmp_path / "out") == 2
    assert "pip install -e ./lab" in capsys.readouterr().err
    assert not (tmp_path / "out" / "runs.jsonl").exists()


def test_an_engine_that_dies_mid_run_stops_the_eval_with_what_it_died_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After some answers the engine refuses every connection (what a crashed llama.cpp does): the eval stops at
    once with one message naming the likely cause, and what was judged before stays logged for the rerun."""
    from pcfjudge.backends.base import ProviderError

    data = write_rewardbench2(tmp_path / "rb2.jsonl", 6, seed=3)
    out = tmp_path / "out"
    monkeypatch.setenv("PCFJ_MAX_RETRIES", "0")
    original, answered = SimBackend.complete, []

    async def dies_after_ten(self: SimBackend, call: JudgeCall, until: float | None = None) -> Completion:
        if len(answered) >= 10:
            raise ProviderError("cannot reach the openai endpoint at http://127.0.0.1:8080/v1/")
        answered.append(call.sample)
        return await original(self, call, until)

    monkeypatch.setattr(SimBackend, "complete", dies_after_ten)
    assert run_rb2(data, out, "--k", "3", "--executions", "1", "--concurrency", "1") == 2
    err = capsys.readouterr().err
    assert "stopped accepting connections" in err and "SIGSEGV" in err and "rerun the same command" in err
    lines = log_lines(out)
    assert sum(1 for x in lines if x["error"] is None) >= len(answered) == 10  # kept (a logged call can serve two)
    assert 0 < sum(1 for x in lines if x["error"] is not None) <= 3  # stopped at the first dead item's K runs
