"""SIGTERM on `pcfjudge serve`: stop accepting, let in-flight requests finish (200), exit 0 — a real subprocess.

Kubernetes sends SIGTERM when it stops a pod (after the preStop hook); the deployment's grace period is sized from
``PCFJ_SHUTDOWN_GRACE_S`` (see tests/deploy/test_deploy_k8s.py). Slow requests come from the simulated judge's latency.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor

import httpx
import pytest

from tests.support.basics import CANDIDATES, QUESTION
from tests.support.processes import background_process
from tests.support.waits import free_port, wait_until

pytestmark = pytest.mark.slow

SLOW_MS = 4000  # the simulated judge sleeps 0.5-1.5x this per call: the requests are in flight when SIGTERM comes
IN_FLIGHT = 4


def _serve(port: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pcfjudge.cli.main", "serve", "--port", str(port), "--log-level", "warning", *extra]


def _judge(url: str, i: int) -> httpx.Response:
    body = {"question": f"{QUESTION} ({i})", "candidates": CANDIDATES, "k": 1, "include_runs": False}
    return httpx.post(f"{url}/judge/listwise", json=body, timeout=120)


def _in_flight(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = re.search(r'^pcfjudge_requests_in_flight\{endpoint="/judge/listwise"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def _refused(url: str) -> bool:
    """A new connection is refused. (One the kernel accepted just before the listener closed is dropped unanswered:
    that race is why Kubernetes' preStop hook waits for the pod to leave the Service before the SIGTERM.)"""
    try:
        httpx.get(f"{url}/healthz", timeout=2)
    except httpx.ConnectError:
        return True
    except httpx.TransportError:
        return False
    return False


def _drain(proc: subprocess.Popen[bytes], url: str, pool: ThreadPoolExecutor) -> list[Future[httpx.Response]]:
    """Start IN_FLIGHT slow requests, wait until the service holds them all, then SIGTERM it."""
    futures = [pool.submit(_judge, url, i) for i in range(IN_FLIGHT)]
    wait_until(lambda: _in_flight(url) >= IN_FLIGHT, what="the slow requests to be in flight", timeout_s=60)
    proc.send_signal(signal.SIGTERM)
    return futures


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_finishes_in_flight_requests_and_exits_0(workers: str) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"PCFJ_SIM_LATENCY_MS": str(SLOW_MS), "PCFJ_SHUTDOWN_GRACE_S": "60", "PCFJ_WORKERS": workers}
    with (
        background_process(_serve(port), ready_url=f"{url}/healthz", env=env, name="pcfjudge serve") as proc,
        ThreadPoolExecutor(IN_FLIGHT) as pool,
    ):
        futures = _drain(proc, url, pool)
        responses = [f.result(timeout=120) for f in futures]
        assert [r.status_code for r in responses] == [200] * IN_FLIGHT
        assert all(r.json()["diagnostics"]["runs_ok"] == 1 for r in responses)
        assert proc.wait(timeout=60) == 0
        assert _refused(url)


def test_new_connections_are_refused_while_draining() -> None:
    """With one worker the listening socket closes at once: a new client is refused, the old ones still finish."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"PCFJ_SIM_LATENCY_MS": str(SLOW_MS * 2), "PCFJ_SHUTDOWN_GRACE_S": "60"}
    with (
        background_process(_serve(port), ready_url=f"{url}/healthz", env=env, name="pcfjudge serve") as proc,
        ThreadPoolExecutor(IN_FLIGHT) as pool,
    ):
        futures = _drain(proc, url, pool)
        wait_until(lambda: _refused(url), what="the listening socket to close", timeout_s=30)
        assert not any(f.done() for f in futures), "the in-flight requests were cut instead of drained"
        assert [f.result(timeout=120).status_code for f in futures] == [200] * IN_FLIGHT
        assert proc.wait(timeout=60) == 0


def test_grace_period_bounds_the_drain() -> None:
    """Past PCFJ_SHUTDOWN_GRACE_S the remaining work is cancelled, each such request is answered 503 shutting_down
    (retriable, not a bare 500), and the process still exits 0, promptly."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"PCFJ_SIM_LATENCY_MS": "60000", "PCFJ_SHUTDOWN_GRACE_S": "1", "PCFJ_REQUEST_TIMEOUT_S": "300"}
    with (
        background_process(_serve(port), ready_url=f"{url}/healthz", env=env, name="pcfjudge serve") as proc,
        ThreadPoolExecutor(IN_FLIGHT) as pool,
    ):
        futures = _drain(proc, url, pool)
        signalled = time.monotonic()
        assert proc.wait(timeout=60) == 0
        assert time.monotonic() - signalled < 25  # far below the 30-90 s the simulated calls would have taken
        for response in (f.result(timeout=30) for f in futures):
            assert response.status_code == 503 and response.headers["retry-after"] == "1"
            assert response.json()["error"] == "shutting_down"
