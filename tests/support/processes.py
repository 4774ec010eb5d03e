"""Subprocesses: pcfjudge serve, the fake provider, anything with a readiness URL; stopped afterwards."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.basics import NO_CALIBRATION, ROOT, SCRUBBED_ENV_PREFIXES
from tests.support.waits import free_port, wait_until

# ── subprocesses ─────────────────────────────────────────────────────────────────────────────────────────────────


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without provider keys/URLs or PCFJ_ settings (but no calibration file of the
    developer's: ``NO_CALIBRATION``), plus ``extra``."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_ENV_PREFIXES)}
    return kept | NO_CALIBRATION | dict(extra or {})


def answers_ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False


class ProcessExited(RuntimeError):
    """A background process ended before it answered its readiness URL; ``log`` is what it printed."""

    def __init__(self, name: str, returncode: int, log: str) -> None:
        super().__init__(f"{name} exited early ({returncode}): {log}")
        self.name, self.returncode, self.log = name, returncode, log


@contextmanager
def background_process(
    argv: Sequence[str],
    *,
    ready_url: str,
    env: Mapping[str, str] | None = None,
    name: str | None = None,
    timeout_s: float = 30.0,
    log_path: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` as a subprocess (environment: ``clean_env(env)``, cwd: the repo), yielded once ``ready_url``
    answers 200; terminated (then killed) afterwards. Its output goes to a temp file (or ``log_path``, to be read
    afterwards), quoted if it exits early."""
    name = name or Path(argv[0]).name
    with tempfile.TemporaryFile() if log_path is None else log_path.open("w+b") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, env=clean_env(env), stdout=log, stderr=subprocess.STDOUT)
        try:

            def ready() -> bool:
                if proc.poll() is not None:
                    log.seek(0)
                    raise ProcessExited(name, proc.returncode, log.read().decode(errors="replace"))
                return answers_ok(ready_url)

            wait_until(ready, what=f"{name} to answer {ready_url}", timeout_s=timeout_s, interval_s=0.05)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def pcfjudge_process(
    command: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    ready_path: str = "/healthz",
) -> Iterator[str]:
    """``pcfjudge <command> --port <free port> <args>`` as a subprocess; yields its base URL once ``ready_path``
    answers 200 (``/readyz``: ready for traffic, e.g. connected to Redis)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "pcfjudge.cli.main", command, "--port", str(port), *args]
    name = f"pcfjudge {command}"
    with background_process(argv, ready_url=f"{url}{ready_path}", env=env, name=name, log_path=log_path):
        yield url


def serve_process(
    *args: str, env: Mapping[str, str] | None = None, log_path: Path | None = None, ready_path: str = "/healthz"
) -> contextlib.AbstractContextManager[str]:
    """``pcfjudge serve`` (warnings only) on a free port: its base URL, e.g. ``serve_process("--workers", "2")``;
    its output is written to ``log_path`` when given (``"--log-level", "info"`` in ``args`` for the access log)."""
    return pcfjudge_process("serve", "--log-level", "warning", *args, env=env, log_path=log_path, ready_path=ready_path)


def fake_provider_process(*args: str) -> contextlib.AbstractContextManager[str]:
    """``pcfjudge fake-provider`` on a free port: its base URL, e.g. ``fake_provider_process("--seed", "3")``."""
    return pcfjudge_process("fake-provider", *args)
