"""``pcfjudge bench imports``: a served judgment's loaded modules, reported (item 7 of issue 47: a figure to read,
not a cap)."""

from __future__ import annotations

import subprocess
import sys

from pcfjudge_lab.bench.imports_bench import format_report, run


def test_the_report_counts_what_a_served_judgment_loaded() -> None:
    loaded = run()
    lines = loaded.lines
    assert "pcfjudge.engine.listwise_runs" in lines  # it did judge
    assert "pcfjudge.doors.door_list" in lines  # through the doors the app mounts
    assert sum(lines.values()) > 5_000  # the app, the engine, the judging core
    assert loaded.packages["pcfjudge"] >= len(lines) and loaded.packages["fastapi"] > 0
    assert "anthropic" not in loaded.packages  # no Anthropic backend on the defaults: its SDK is not loaded
    report = format_report(loaded, top=3)
    assert f"{len(lines)} modules, {sum(lines.values())} lines" in report
    assert f"modules in all: {loaded.packages.total()}; by package: " in report
    assert len(report.splitlines()) == 5


def test_the_command_prints_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pcfjudge.cli.main", "bench", "imports", "--top", "2"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert "a served judgment loaded" in done.stdout
