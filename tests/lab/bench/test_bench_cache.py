"""``pcfjudge bench cache`` runs end to end and reports what each phase cost (counts asserted, never timings)."""

from __future__ import annotations

import pytest
from pcfjudge.cli.main import main
from pcfjudge_lab.bench.cache_bench import CacheBench, format_report, run

from tests.support.redis_server import RedisServer


async def test_bench_counts_backend_calls_per_phase_with_redis(redis_server: RedisServer) -> None:
    bench = CacheBench(items=3, k=3, sim_latency_ms=0, redis_url=redis_server.url)
    phases = await run(bench)
    assert [p.name for p in phases] == ["cold", "warm", "warm, other replica"]
    assert [(p.backend_calls, p.cache_hits) for p in phases] == [(9, 0), (0, 9), (0, 9)]
    assert all(len(p.latencies_ms) == 3 for p in phases)
    report = format_report(bench, phases)
    assert "cold/warm: p50" in report and "backend calls 9 → 0" in report


def test_bench_cache_command_prints_the_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "cache", "--items", "2", "--k", "2", "--sim-latency-ms", "0"]) == 0
    out = capsys.readouterr().out
    assert "cache memory" in out and "backend calls 4 → 0" in out
