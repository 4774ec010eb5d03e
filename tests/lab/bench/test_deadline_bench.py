"""``pcfjudge bench deadline`` measures what it says: every answer cut by the deadline and certified has the winners
of the same judgment made without a deadline, and the report prints each figure."""

from __future__ import annotations

import asyncio

from pcfjudge_lab.bench.deadline_bench import format_report, run


def test_certified_cut_answers_keep_their_winners_and_the_report_prints_every_figure() -> None:
    anchor, cut = asyncio.run(run(24, 7, 400, 100.0, 1.0, 8))
    stopped = [(a, c) for a, c in zip(anchor.bodies, cut.bodies, strict=True) if c["diagnostics"]["stopped"]]
    assert stopped, "a 400 ms deadline against a 100 ms median with a long tail cuts some judgments"
    assert all(a["winners"] == c["winners"] for a, c in stopped if c["diagnostics"]["certified"])
    uncut = [(a, c) for a, c in zip(anchor.bodies, cut.bodies, strict=True) if not c["diagnostics"]["stopped"]]
    assert all(a["winners"] == c["winners"] and a["candidates"] == c["candidates"] for a, c in uncut)
    report = format_report([anchor, cut], 7, 400, 100.0, 1.0)
    for words in ("anchor, no deadline: latency p50", "lateness p50", "p99", "certified", "winners as without"):
        assert words in report
