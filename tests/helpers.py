"""Shared test helpers: every launcher, port picker, waiter and client the tests use, in one place.

- ``free_port`` / ``free_cluster_port``: a free local TCP port (and one whose cluster bus port is free too).
- ``wait_until`` / ``eventually``: poll a condition with a generous timeout instead of sleeping a guessed time.
- ``FakeClock``: a monotonic clock the test moves by hand (the circuit breaker and the Redis cache take ``clock=``).
- ``app_client`` / ``app_with_services``: an httpx client on a fresh in-process app (lifespan run) over ASGI.
- ``FakeProvider`` / ``running_fake``: the fake OpenAI/Anthropic provider, uvicorn in a background thread.
- ``background_process`` / ``serve_process`` / ``fake_provider_process``: a subprocess (``pcfjudge serve``,
  ``pcfjudge fake-provider``, Prometheus …) yielded once it answers its readiness URL, stopped afterwards.
- ``RedisServer``: a private, throw-away ``redis-server`` that a test can kill, pause and restart.

The fixtures built on these (``client``, ``make_client``, ``fake``, ``serve_url``, ``redis_server``) live in
``tests/conftest.py``. Every server started here is stopped by its context manager or fixture.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import redis
import uvicorn
from asgi_lifespan import LifespanManager
from pcfjudge.api.app import create_app
from pcfjudge.backends.base import JudgeCall
from pcfjudge.judging.prompts import new_nonce, render_listwise
from pcfjudge.services import Services
from pcfjudge.settings import Settings
from pcfjudge.tooling.fakeprovider.fake_server import create_fake_app
from pcfjudge.tooling.fakeprovider.state import FakeConfig
from pcfjudge.types import DecodingParams

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
OPENAI_KEY = "sk-test-openai-0123456789abcdefSECRET"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdefSECRET"
QUESTION = "In which year did the Berlin Wall fall?"
CANDIDATES = ["1989.", "It fell in 1991, on 3 October.", "I am not sure; possibly the late 1980s."]
# Environment variables no test may pass on: real provider keys and URLs, and the service's own settings.
SCRUBBED_ENV_PREFIXES = ("OPENAI_", "ANTHROPIC_", "PCFJ_")


# ── waiting ──────────────────────────────────────────────────────────────────────────────────────────────────────


def wait_until(condition: Callable[[], T | None], *, what: str, timeout_s: float = 30.0, interval_s: float = 0.02) -> T:
    """Call ``condition`` until it returns something truthy and return that; fail after ``timeout_s``.

    The timeout is a generous upper bound for a slow machine, never an assumption of how fast things happen.
    """
    give_up = time.monotonic() + timeout_s
    while not (result := condition()):
        if time.monotonic() > give_up:
            pytest.fail(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(interval_s)
    return result


async def eventually(
    condition: Callable[[], T | None], *, what: str, timeout_s: float = 30.0, interval_s: float = 0.01
) -> T:
    """``wait_until`` for async tests: the event loop (and so the code under test) runs between the checks."""
    give_up = asyncio.get_running_loop().time() + timeout_s
    while not (result := condition()):
        if asyncio.get_running_loop().time() > give_up:
            pytest.fail(f"timed out after {timeout_s:g}s waiting for {what}")
        await asyncio.sleep(interval_s)
    return result


class FakeClock:
    """A monotonic clock that only moves when the test says so: ``clock.now += 31``."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# ── ports ────────────────────────────────────────────────────────────────────────────────────────────────────────


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
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


# ── the app in process ───────────────────────────────────────────────────────────────────────────────────────────

ClientFactory = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@asynccontextmanager
async def app_with_services(settings: Settings | None = None) -> AsyncIterator[tuple[httpx.AsyncClient, Services]]:
    """A fresh app (lifespan run) on ``settings`` (embedded defaults if None): an ASGI client and its services.

    The app's backends use real HTTP (to the fake provider, when ``provider_settings`` points them there).
    """
    app = create_app(settings or Settings())
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as client:
            yield client, app.state.services


@asynccontextmanager
async def app_client(settings: Settings | None = None) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client talking to a fresh app over ASGI (see ``app_with_services``)."""
    async with app_with_services(settings) as (client, _):
        yield client


def provider_settings(provider: str, fake: FakeProvider, **overrides: Any) -> Settings:
    """Settings that route ``provider`` to the fake (fast retries, K=3) and make it the default model."""
    base: dict[str, Any] = {"retry_base_s": 0.001, "retry_max_s": 0.01, "default_k": 3, "request_timeout_s": 20.0}
    if provider == "openai":
        base |= {"openai_api_key": OPENAI_KEY, "openai_base_url": f"{fake.url}/v1", "default_model": "openai:judge-x"}
        base |= {"anthropic_api_key": None}  # whatever the test machine's environment holds
    else:
        base |= {
            "anthropic_api_key": ANTHROPIC_KEY,
            "anthropic_base_url": fake.url,
            "default_model": "anthropic:judge-y",
        }
        base |= {"openai_api_key": None}
    return Settings(**(base | overrides))


def listwise_call(
    displayed: Sequence[str] = tuple(CANDIDATES),
    *,
    model: str = "judge-x",
    nonce: str | None = None,
    params: DecodingParams | None = None,
) -> JudgeCall:
    """A listwise call as the judging layer builds it."""
    prompt = render_listwise(QUESTION, list(displayed), nonce or new_nonce())
    return JudgeCall(
        kind="listwise",
        model=model,
        system=prompt.system,
        prefix=prompt.prefix,
        body=prompt.body,
        schema_name=prompt.schema_name,
        schema=prompt.schema,
        question=QUESTION,
        displayed=tuple(displayed),
        params=params or DecodingParams(),
    )


# ── the fake provider in a thread ────────────────────────────────────────────────────────────────────────────────


class FakeProvider:
    """A running fake provider: ``url`` (no trailing slash) and its ``/_control`` API."""

    def __init__(self, config: FakeConfig | None = None) -> None:
        self.app = create_fake_app(config or FakeConfig())
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        cfg = uvicorn.Config(
            self.app, log_level="warning", lifespan="off", ws="none", timeout_graceful_shutdown=2, access_log=False
        )
        self._server = uvicorn.Server(cfg)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)
        self.control = httpx.Client(base_url=self.url, timeout=10)

    def start(self) -> FakeProvider:
        self._thread.start()

        def started() -> bool:
            if not self._thread.is_alive():
                raise RuntimeError("fake provider thread died while starting")
            return self._server.started

        wait_until(started, what="the fake provider to start", timeout_s=15, interval_s=0.01)
        return self

    def stop(self) -> None:
        self.control.close()
        self._server.should_exit = True
        self._thread.join(timeout=15)
        self._sock.close()

    def faults(self, faults: Sequence[str | dict[str, Any]] | None = None, **knobs: Any) -> dict[str, Any]:
        """Plan faults (see ``pcfjudge.tooling.fakeprovider.fake_server``); returns the fake's summary."""
        body = dict(knobs) if faults is None else {"faults": list(faults), **knobs}
        response = self.control.post("/_control/faults", json=body)
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def reset(self) -> None:
        self.control.post("/_control/reset").raise_for_status()

    def calls(self, last: int = 50) -> dict[str, Any]:
        response = self.control.get("/_control/calls", params={"last": last})
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def last_body(self) -> dict[str, Any]:
        """The JSON body of the last provider request the fake served."""
        body: dict[str, Any] = self.calls(last=1)["requests"][-1]["body"]
        return body


@contextmanager
def running_fake(config: FakeConfig | None = None) -> Iterator[FakeProvider]:
    server = FakeProvider(config).start()
    try:
        yield server
    finally:
        server.stop()


# ── subprocesses ─────────────────────────────────────────────────────────────────────────────────────────────────


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without provider keys/URLs or PCFJ_ settings, plus ``extra``."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_ENV_PREFIXES)}
    return kept | dict(extra or {})


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def background_process(
    argv: Sequence[str],
    *,
    ready_url: str,
    env: Mapping[str, str] | None = None,
    name: str | None = None,
    timeout_s: float = 30.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` as a subprocess (environment: ``clean_env(env)``, cwd: the repo), yielded once ``ready_url``
    answers 200; terminated (then killed) afterwards. Its output goes to a temp file, quoted if it exits early."""
    name = name or Path(argv[0]).name
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(argv, cwd=ROOT, env=clean_env(env), stdout=log, stderr=subprocess.STDOUT)
        try:

            def ready() -> bool:
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(
                        f"{name} exited early ({proc.returncode}): {log.read().decode(errors='replace')}"
                    )
                return _answers(ready_url)

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
def pcfjudge_process(command: str, *args: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """``pcfjudge <command> --port <free port> <args>`` as a subprocess; yields its base URL once /healthz answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "pcfjudge.cli.main", command, "--port", str(port), *args]
    with background_process(argv, ready_url=f"{url}/healthz", env=env, name=f"pcfjudge {command}"):
        yield url


def serve_process(*args: str, env: Mapping[str, str] | None = None) -> contextlib.AbstractContextManager[str]:
    """``pcfjudge serve`` (warnings only) on a free port: its base URL, e.g. ``serve_process("--workers", "2")``."""
    return pcfjudge_process("serve", "--log-level", "warning", *args, env=env)


def fake_provider_process(*args: str) -> contextlib.AbstractContextManager[str]:
    """``pcfjudge fake-provider`` on a free port: its base URL, e.g. ``fake_provider_process("--seed", "3")``."""
    return pcfjudge_process("fake-provider", *args)


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
