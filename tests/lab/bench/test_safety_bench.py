"""``pcfjudge bench safety`` runs through a real ``pcfjudge serve`` and an endpoint whose body never ends, and
reports what it measured (the figures themselves are for a quiet machine, not asserted here)."""

from __future__ import annotations

import pytest
from pcfjudge.backends.chat_wire import MAX_ANSWER_BYTES
from pcfjudge_lab.bench.safety_bench import format_report, run

pytestmark = pytest.mark.slow


def test_the_safety_bench_measures_the_stall_and_the_endless_body() -> None:
    stalled, bodies = run(timeout_s=10.0, transports=("sdk",))
    assert stalled.status == 200 and stalled.polls >= 1 and stalled.longest_wait_ms > 0
    (body,) = bodies
    assert body.transport == "sdk" and body.status == 502  # the bounded read failed every run: no made-up verdict
    assert body.peak_mb - body.rest_mb < 4 * MAX_ANSWER_BYTES / 2**20 * 3 + 64  # three calls' bounded reads at most
    report = format_report(stalled, bodies)
    assert "144 KB chat message: 200" in report and "endless provider body (sdk)" in report
