"""A private, throw-away ``redis-server`` for tests: free port, temp dir, no persistence; can be killed and restarted.

Use the ``redis_server`` fixture (``pytest_plugins = ["tests.redis_server"]`` in a test module). Tests skip with a
clear message only when the ``redis-server`` binary is missing (``.ci/run`` installs it with apt-get).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

BINARY = shutil.which("redis-server") or ("/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def free_cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free as well (and below 65536)."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20000, 55000)
        with socket.socket() as a, socket.socket() as b:
            try:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port pair for a cluster node")


class RedisServer:
    """One ``redis-server`` process on ``port``; ``kill()`` (SIGKILL) and ``start()`` again on the same port."""

    def __init__(
        self, directory: Path, port: int | None = None, extra: tuple[str, ...] = (), config: str | None = None
    ) -> None:
        if BINARY is None:
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
        assert BINARY is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [BINARY]
        if self.config is not None:
            conf = self.directory / "redis.conf"
            conf.write_text(self.config)
            args.append(str(conf))
        args += ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--dir", str(self.directory), "--logfile", str(self.directory / "redis.log"), *self.extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        give_up = time.monotonic() + timeout_s
        with self.client() as client:
            while True:
                if self.proc.poll() is not None:
                    log = (self.directory / "redis.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"redis-server exited with {self.proc.returncode}: {log}")
                try:
                    if client.ping():
                        return
                except redis.RedisError:
                    pass
                if time.monotonic() > give_up:
                    raise RuntimeError(f"redis-server on port {self.port} did not answer PING")
                time.sleep(0.02)

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


def require_binary() -> None:
    if BINARY is None:
        pytest.skip("redis-server binary not found: install it (apt-get install -y redis-server) to run Redis tests")


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh private Redis for one test, stopped afterwards."""
    require_binary()
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()
