"""``pcfjudge bench tracing`` runs end to end (the app in process, the receiver in another process) and reports
consistent figures: every span made with all sampled is exported and counted, a share of them in the sampled
rounds (counts asserted, never timings)."""

from __future__ import annotations

import pytest
from pcfjudge_lab.bench.tracing_bench import MODES, TracingBench, format_report, run


@pytest.mark.slow
def test_the_tracing_bench_exports_every_span_it_makes_and_reports_each_mode() -> None:
    bench = TracingBench(rounds=2, warm_requests=60, cold_requests=10, concurrency=4, ratio=0.5)
    measured = run(bench)
    assert measured.spans_made == 2 * (60 + 10 * 9)  # a warm request: its span; a cold one: 2 + K
    assert measured.spans_received == measured.spans_made
    assert 0 < measured.sampled_received < measured.spans_made
    for mode in MODES:
        assert len(measured.warm_rps[mode]) == 2 and all(rate > 0 for rate in measured.warm_rps[mode])
    report = format_report(bench, measured)
    assert "warm requests/s (cache hits)" in report and f"{measured.spans_made:,} made" in report
