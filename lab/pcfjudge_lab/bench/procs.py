"""Local processes for ``pcfjudge bench soak`` and ``flight``: replicas, the fake provider, a private
``redis-server``, and busy loops that keep every core busy (``busy_cores``).

Every process listens on 127.0.0.1 only, logs to a file in the bench's work directory, and is stopped by
``Fleet.close()``; ``kill()`` is SIGKILL (a crash), ``stop()`` is SIGTERM (a graceful stop, as Kubernetes does).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

SCRUBBED = ("OPENAI_", "ANTHROPIC_", "PCFJ_", "PROMETHEUS_MULTIPROC_DIR")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http_ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float) -> None:
    give_up = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > give_up:
            raise TimeoutError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(0.05)


class Proc:
    """One restartable subprocess; ``ready`` says when it serves."""

    def __init__(
        self, name: str, argv: Sequence[str], log: Path, ready: Callable[[], bool], env: Mapping[str, str] | None = None
    ) -> None:
        self.name, self.argv, self.log, self.ready = name, list(argv), log, ready
        base = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
        self.env = base | dict(env or {})
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> None:
        self.launch()
        self.wait_ready(timeout_s)

    def launch(self) -> None:
        """Start the process without waiting for it (``wait_ready``): several start at once."""
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        def up() -> bool:
            if self.popen is not None and self.popen.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{self.name} exited with {self.popen.returncode}: {tail}")
            return self.ready()

        wait_for(up, f"{self.name} to be ready", timeout_s)

    def kill(self) -> None:
        """SIGKILL: gone mid-request, as in a crash or an OOM kill."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(30)

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM and wait (SIGKILL after ``timeout_s``); the exit code, or None if it was not running."""
        if self.popen is None or self.popen.poll() is not None:
            return None
        self.popen.terminate()
        try:
            return self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(30)
            return None


def listens(port: int) -> bool:
    """Whether something on this machine accepts connections on ``port``."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def redis_answers(port: int) -> bool:
    """Whether the Redis on ``port`` answers PING."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def rss_mb(pid: int) -> float:
    """A process's resident memory (Linux's /proc), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pcfjudge(*args: str) -> list[str]:
    return [sys.executable, "-m", "pcfjudge.cli.main", *args]


class Fleet:
    """The soak's processes: ``replicas`` × ``pcfjudge serve``, a fake provider and a private Redis."""

    def __init__(self, workdir: Path, replicas: int, replica_env: Mapping[str, str], fake_args: Sequence[str]) -> None:
        redis_binary = shutil.which("redis-server")
        if redis_binary is None:
            raise RuntimeError("redis-server not found: install it (apt-get install redis-server)")
        self.workdir = workdir
        self.redis_port, self.fake_port = free_port(), free_port()
        self.fake_url = f"http://127.0.0.1:{self.fake_port}"
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        redis_argv = [redis_binary, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--dir", str(workdir)]
        redis_argv += ["--save", "", "--appendonly", "no", "--maxmemory", "256mb", "--maxmemory-policy", "allkeys-lru"]
        self.redis = Proc("redis-server", redis_argv, workdir / "redis.log", lambda: redis_answers(self.redis_port))
        self.fake = Proc(
            "fake-provider",
            pcfjudge("fake-provider", "--port", str(self.fake_port), *fake_args),
            workdir / "fake.log",
            lambda: http_ok(f"{self.fake_url}/healthz"),
        )
        env = {
            "OPENAI_API_KEY": "soak-key",
            "PCFJ_OPENAI_BASE_URL": f"{self.fake_url}/v1",
            "PCFJ_DEFAULT_MODEL": "openai:soak-judge",
            "PCFJ_REDIS_URL": self.redis_url,
            **replica_env,
        }
        self.replicas: list[Proc] = []
        self.urls: list[str] = []
        for i in range(replicas):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            argv = pcfjudge("serve", "--port", str(port), "--log-level", "warning")
            ready = _ready_check(url)
            self.replicas.append(Proc(f"replica-{i}", argv, workdir / f"replica-{i}.log", ready, env))
            self.urls.append(url)

    def start(self) -> None:
        self.redis.start()
        self.fake.start()
        for replica in self.replicas:
            replica.start()

    def close(self) -> None:
        for proc in [*self.replicas, self.fake, self.redis]:
            with contextlib.suppress(Exception):
                proc.stop(timeout_s=30)


@contextmanager
def busy_cores(count: int | None = None) -> Iterator[int]:
    """One busy-loop process per core (or ``count``) while the block runs: a burst on a machine with no spare CPU.
    Yields how many run; each is killed (by its own process) afterwards."""
    count = (os.cpu_count() or 1) if count is None else count
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield count
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait(30)


def _ready_check(url: str) -> Callable[[], bool]:
    return lambda: http_ok(f"{url}/healthz")
