"""`pcfjudge bench flight`, short form: two cold starts of two replicas, a burst each on busy CPUs, K calls each;
the report counts them and what fail-open cost, and the command exits 0 only when every run made exactly K calls."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.basics import ROOT
from tests.support.processes import clean_env
from tests.support.redis_server import require_redis

pytestmark = pytest.mark.slow


def test_short_flight_bench_makes_k_calls_per_cold_start(tmp_path: Path) -> None:
    require_redis()
    argv = [sys.executable, "-m", "pcfjudge.cli.main", "bench", "flight", "--runs", "2", "--replicas", "2"]
    argv += ["--requests", "8", "--k", "3", "--latency-ms", "200", "--workdir", str(tmp_path / "logs")]
    done = subprocess.run(argv, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = [line for line in done.stderr.splitlines() if line.startswith("run ")]
    assert len(runs) == 2 and all("calls=3 answered=8 agree=True keys=3 alone=0 duplicates=0" in r for r in runs)
    assert "calls = 3 (single flight held, all answers agree, K keys and no lock left) in 2/2 runs" in done.stdout
    assert (tmp_path / "logs" / "run-1" / "replica-1.log").exists()  # each replica's log kept with --workdir
