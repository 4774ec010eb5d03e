"""``pcfjudge judge``: the table shows /judge/listwise's numbers best first with the winner marked, ``--json`` is that
response, ``--file`` judges every line (bad lines reported by number, progress on stderr), ``--url`` goes through a
real ``pcfjudge serve`` with the same result as judging in process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.cli.main import main

from tests.support.basics import CANDIDATES, QUESTION
from tests.support.inprocess import app_client
from tests.support.processes import clean_env


def api_listwise(question: str, candidates: list[Any], **extra: Any) -> dict[str, Any]:
    """What POST /judge/listwise answers on embedded defaults (a fresh in-process app)."""

    async def call() -> dict[str, Any]:
        async with app_client() as client:
            body = {"question": question, "candidates": candidates, "include_runs": False, **extra}
            response = await client.post("/judge/listwise", json=body)
            assert response.status_code == 200, response.text
            result: dict[str, Any] = response.json()
            return result

    return asyncio.run(call())


def table_rows(out: str) -> list[list[str]]:
    """The data rows of a printed table, split on runs of two or more spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "consensus" in line and "Borda" in line) + 1
    rows = []
    for line in lines[start:]:
        if line.startswith("★ winner") or not line.strip():
            break
        rows.append([cell for cell in line.strip().split("  ") if cell.strip()])
    return rows


def test_table_shows_the_consensus_best_first_with_the_winner_marked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", QUESTION, *CANDIDATES, "--k", "3"]) == 0
    out = capsys.readouterr().out
    expected = api_listwise(QUESTION, CANDIDATES, k=3)
    stats = {c["id"]: c for c in expected["candidates"]}
    header = next(line for line in out.splitlines() if "consensus" in line)
    for column in ("candidate", "consensus", "mean score", "Borda", "top votes", "flags"):
        assert column in header
    rows = table_rows(out)
    assert len(rows) == 3 and out.startswith(f"Q: {QUESTION}\n")
    for row, cid in zip(rows, expected["ranking"], strict=True):
        marked = row[0] == "★"
        cells = [cell.strip() for cell in row[1:] if cell.strip()] if marked else [cell.strip() for cell in row]
        assert marked == (cid in expected["winners"])
        assert cells[1] == f"[{cid}] {CANDIDATES[int(cid)]}"
        assert cells[2:5] == [f"{stats[cid][name]:.1f}" for name in ("consensus", "mean_score", "borda")]
        assert cells[5] == f"{stats[cid]['top_vote']:.0%}"
    assert f"★ winner {', '.join(f'[{w}]' for w in expected['winners'])}" in out and "sim:default · K=3" in out


def test_past_one_window_the_table_gives_standard_errors_and_the_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    answers = [f"Answer {i}: {CANDIDATES[i % len(CANDIDATES)]}" for i in range(24)]
    assert main(["judge", QUESTION, *answers]) == 0
    out = capsys.readouterr().out
    expected = api_listwise(QUESTION, answers)
    stats = {c["id"]: c for c in expected["candidates"]}
    rows = table_rows(out)
    assert len(rows) == 24
    for row, cid in zip(rows, expected["ranking"], strict=True):
        cells = [cell.strip() for cell in row if cell.strip() and cell.strip() != "★"]
        assert cells[2] == f"{stats[cid]['consensus']:.1f} ±{stats[cid]['standard_error']:.1f}"
    windows = expected["diagnostics"]["windows"]
    assert f"windows of at most 16 in 4 rounds' budget (stopped: {windows['stopped']})" in out


def test_json_is_the_listwise_response(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", QUESTION, *CANDIDATES, "--k", "2", "--seed", "4", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    expected = api_listwise(QUESTION, CANDIDATES, k=2, seed=4)
    got.pop("request_id"), expected.pop("request_id")
    expected["usage"], got["usage"] = expected["usage"]["backend_calls"], got["usage"]["backend_calls"]
    assert got == expected


def test_file_judges_every_line_with_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = tmp_path / "items.jsonl"
    lines = [
        json.dumps({"question": QUESTION, "candidates": CANDIDATES}),
        json.dumps({"question": "Capital of France?", "candidates": [{"id": "p", "text": "Paris."}, "Lyon."]}),
        "",
        "not json",
        json.dumps({"question": "Alone?", "candidates": ["just one"]}),
        json.dumps({"question": "Extra?", "candidates": ["a", "b"], "k": 3}),
    ]
    items.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["judge", "--file", str(items), "--k", "2"]) == 1  # some lines failed
    captured = capsys.readouterr()
    assert "── line 1 ──" in captured.out and "── line 2 ──" in captured.out and captured.out.count("★ winner") == 2
    assert "[p] Paris." in captured.out and "[1] Lyon." in captured.out
    assert "judged 5/5" in captured.err  # progress (not a terminal: one line per item)
    assert "error: line 4: not JSON" in captured.err
    assert "error: line 5: candidates: send between 2 and 10000 candidates (got 1)" in captured.err
    assert 'error: line 6: each line must be {"question"' in captured.err

    assert main(["judge", "--file", str(items), "--k", "2", "--json"]) == 1
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o.get("line") for o in out] == [None, None, 4, 5, 6] and out[1]["ranking"] in (["p", "1"], ["1", "p"])


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge"]) == 2
    assert main(["judge", "--file", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err


@pytest.mark.slow
def test_url_judges_through_a_running_service(serve_url: str) -> None:
    argv = [sys.executable, "-m", "pcfjudge.cli.main", "judge", "--url", serve_url, QUESTION, *CANDIDATES, "--k", "3"]
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=clean_env(), check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    remote = json.loads(done.stdout)
    local = api_listwise(QUESTION, CANDIDATES, k=3)
    assert remote["candidates"] == local["candidates"] and remote["winners"] == local["winners"]
    table = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), check=False, timeout=120)
    assert table.returncode == 0 and len(table_rows(table.stdout)) == 3
    bad = subprocess.run([*argv[:-2], "--k", "99"], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: k: ") and "99" in bad.stderr
