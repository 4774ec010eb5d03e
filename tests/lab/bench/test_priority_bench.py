"""``pcfjudge bench priority`` measures what it says, run small: every interactive request answered in every pass, the
idle pass with no background call, the loaded passes with job calls waiting for a slot as each interactive request
started (the backend saturated) and job calls served meanwhile, and a report printing each figure. Timings are not
asserted (shared machines)."""

from __future__ import annotations

import asyncio

from pcfjudge_lab.bench.priority_bench import PriorityBench, format_report, quantile, run


def test_the_passes_are_what_they_say_and_the_report_prints_every_figure() -> None:
    bench = PriorityBench(
        requests=6, k=2, clients=2, latency_ms=20.0, concurrency=4, job_k=4, job_workers=4, one_class=True
    )
    idle, loaded, one_class = passes = asyncio.run(run(bench))
    for p in passes:
        assert len(p.seconds) == len(p.statuses) == bench.requests and set(p.statuses) == {200}, p
        assert p.served["interactive"] == bench.requests * bench.k  # each run once: the cache is bypassed
    assert idle.jobs == 0 and idle.served["background"] == 0 and set(idle.background_waiting) == {0}
    for p in (loaded, one_class):
        assert p.jobs > 0 and p.served["background"] > 0
        assert min(p.background_waiting) >= 1  # job calls waiting for a slot as each interactive request started
    report = format_report(bench, passes)
    for words in ("idle backend", "jobs saturating it", "one class (FIFO)", "p50 ms", "p99 ms", "/ idle:"):
        assert words in report
    assert f"{quantile([s * 1000 for s in loaded.seconds], 0.99):.0f}" in report


def test_the_quantile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert quantile(values, 0.5) == 50.0 and quantile(values, 0.99) == 99.0 and quantile(values, 1.0) == 100.0
    assert quantile([3.0], 0.99) == 3.0
