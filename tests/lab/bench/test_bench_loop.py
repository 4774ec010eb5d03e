"""``pcfjudge bench loop`` runs end to end against ``pcfjudge serve`` and the fake provider and reports consistent
figures (counts and shares asserted, never timings); a served app freezes its start-up objects out of the
collector's passes and runs BLAS on one thread."""

from __future__ import annotations

import gc

import pytest
from asgi_lifespan import LifespanManager
from pcfjudge.api.app import GC_THRESHOLDS, create_app, serve_app
from pcfjudge.cli.main import main
from pcfjudge.engine.window_runs import BLAS_THREADS
from pcfjudge_lab.bench.loop_bench import LoopBench, format_report, rerank_body, run, stage_of
from threadpoolctl import threadpool_info, threadpool_limits


@pytest.mark.slow
def test_the_loop_bench_probes_healthz_alone_and_under_reranks_and_says_where_the_cpu_goes() -> None:
    bench = LoopBench(
        documents=40, concurrent=2, latency_ms=20, probe_ms=5, alone_probes=10, queued_jobs=8, job_workers=2
    )
    measured = run(bench)
    assert len(measured.alone_ms) == 10 and measured.loaded_ms and len(measured.rerank_s) == 2
    assert measured.cpu_per_rerank_s > 0 and measured.profiled_s > 0
    assert sum(measured.stages.values()) == pytest.approx(1.0)
    report = format_report(bench, measured)
    assert "/healthz alone" in report and "during 2 reranks of 40" in report and "server CPU per rerank" in report
    assert measured.fair_wait_s > 0 and 0 <= measured.fair_still_queued <= 8 and "key B's first job" in report


def test_the_loop_bench_command_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "loop", "--help"])
    assert exited.value.code == 0 and "--documents" in capsys.readouterr().out


def test_code_is_grouped_by_stage() -> None:
    assert stage_of("/x/app/pcfjudge/judging/window_fit.py") == "fitting the scale"
    assert stage_of("/x/site-packages/aiohttp/client.py") == "provider client"
    assert stage_of("/x/app/pcfjudge/doors/rerank/rerank_routes.py") == "shaping the response"
    assert stage_of("/usr/lib/python3.11/asyncio/events.py") == "event loop"


async def test_a_served_app_freezes_its_start_up_objects_and_collects_less_often() -> None:
    before = gc.get_threshold()
    try:
        async with LifespanManager(create_app(freeze_gc=True)):
            assert gc.get_freeze_count() > 10_000 and gc.get_threshold() == GC_THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
    async with LifespanManager(create_app()):  # tests' apps (many in one process) leave the collector as it is
        assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


def test_a_served_process_runs_blas_on_one_thread() -> None:
    """``serve_app`` limits numpy's BLAS to ``BLAS_THREADS`` for the process (its threads spun on the cores the event
    loop needs); the limit is restored after the test."""
    with threadpool_limits(limits=None):  # restores the process's limits on exit
        serve_app()
        blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
        assert blas and all(pool["num_threads"] == BLAS_THREADS == 1 for pool in blas)


def test_the_loop_benchs_reranks_ask_for_top_n_only_when_given() -> None:
    assert rerank_body("q", 3, top_n=2)["top_n"] == 2 and len(rerank_body("q", 3, top_n=2)["documents"]) == 3
    assert "top_n" not in rerank_body("q", 3)
