"""``pcfjudge bench safety`` runs through a real ``pcfjudge serve`` and an endpoint whose body never ends, with a small
burst of reranks, and reports what it measured (the figures themselves are for a quiet machine, not asserted here)."""

from __future__ import annotations

import pytest
from pcfjudge.backends.chat_wire import MAX_ANSWER_BYTES
from pcfjudge_lab.bench.burst_memory import allocator_plans
from pcfjudge_lab.bench.safety_bench import format_report, run

pytestmark = pytest.mark.slow


def test_the_safety_bench_measures_the_stall_and_the_endless_body() -> None:
    small = allocator_plans(reranks=3, docs=200, front_ttl_s=2.0, rest_after_s=1.0)
    assert [p.label for p in small] == ["default", "PYTHONMALLOC=malloc", "jemalloc, as the image"]
    stalled, bodies, bursts = run(timeout_s=20.0, transports=("sdk",), bursts=small)
    assert stalled.status == 200 and stalled.polls >= 1 and stalled.longest_wait_ms > 0
    (body,) = bodies
    assert body.transport == "sdk" and body.status == 502  # the bounded read failed every run: no made-up verdict
    assert body.peak_mb - body.rest_mb < 4 * MAX_ANSWER_BYTES / 2**20 * 3 + 64  # three calls' bounded reads at most
    for burst in bursts:
        assert 0 < burst.rest_mb <= burst.peak_mb and burst.end_mb <= burst.peak_mb and burst.after_mb > 0
    report = format_report(stalled, bodies, bursts)
    assert "144 KB chat message: 200" in report and "endless provider body (sdk)" in report
    assert "burst (jemalloc, as the image): 3 reranks of 200 documents" in report
