"""A private, throw-away redis-server that a test can kill, pause and restart."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import redis

from tests.support.waits import free_port, wait_until

# ── a private redis-server ───────────────────────────────────────────────────────────────────────────────────────

REDIS_BINARY = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None
)


def require_redis() -> None:
    """Skip with a clear message only when the ``redis-server`` binary is missing (``.ci/run`` installs it)."""
    if REDIS_BINARY is None:
        pytest.skip("redis-server binary not found: install it (apt-get install -y redis-server) to run Redis tests")


class RedisServer:
    """One ``redis-server`` process on ``port`` (free port, temp dir, no persistence); ``kill()`` (SIGKILL) and
    ``start()`` again on the same port. Tests use the ``redis_server`` fixture (``tests/conftest.py``)."""

    def __init__(
        self, directory: Path, port: int | None = None, extra: tuple[str, ...] = (), config: str | None = None
    ) -> None:
        if REDIS_BINARY is None:
            raise RuntimeError("redis-server not installed")
        self.directory = directory
        self.port = port or free_port()
        self.extra = extra  # more command-line options, e.g. ("--cluster-enabled", "yes") or ("--sentinel",)
        self.config = config  # config file text (Sentinel needs one it can rewrite)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        """A plain synchronous client for inspecting the server from a test."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2, socket_connect_timeout=2)

    def start(self, timeout_s: float = 10.0) -> None:
        assert REDIS_BINARY is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [REDIS_BINARY]
        if self.config is not None:
            conf = self.directory / "redis.conf"
            conf.write_text(self.config)
            args.append(str(conf))
        args += ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--dir", str(self.directory), "--logfile", str(self.directory / "redis.log"), *self.extra]
        proc = self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with self.client() as client:

            def answers() -> bool:
                if proc.poll() is not None:
                    log = (self.directory / "redis.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"redis-server exited with {proc.returncode}: {log}")
                try:
                    return bool(client.ping())
                except redis.RedisError:
                    return False

            wait_until(answers, what=f"redis-server on port {self.port} to answer PING", timeout_s=timeout_s)

    def kill(self) -> None:
        """SIGKILL: the process vanishes mid-flight, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def pause(self) -> None:
        """SIGSTOP: connections are accepted by the kernel but nothing answers (a hung Redis)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
