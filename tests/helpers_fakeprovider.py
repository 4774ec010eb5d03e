"""Test helpers: the fake provider on a free port (uvicorn in a background thread), its control API, app clients.

Imported explicitly by the backend tests; every server started here is stopped by its context manager.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import IO, Any

import httpx
import uvicorn
from asgi_lifespan import LifespanManager
from pcfjudge.api.app import create_app
from pcfjudge.backends.base import DecodingParams, JudgeCall
from pcfjudge.fakeprovider.server import create_fake_app
from pcfjudge.fakeprovider.state import FakeConfig
from pcfjudge.judging.prompts import new_nonce, render_listwise
from pcfjudge.settings import Settings

OPENAI_KEY = "sk-test-openai-0123456789abcdefSECRET"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdefSECRET"
QUESTION = "In which year did the Berlin Wall fall?"
CANDIDATES = ["1989.", "It fell in 1991, on 3 October.", "I am not sure; possibly the late 1980s."]


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
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake provider did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.control.close()
        self._server.should_exit = True
        self._thread.join(timeout=15)
        self._sock.close()

    def faults(self, faults: Sequence[str | dict[str, Any]] | None = None, **knobs: Any) -> dict[str, Any]:
        """Plan faults (see ``pcfjudge.fakeprovider.server``); returns the fake's summary."""
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


@contextmanager
def running_fake(config: FakeConfig | None = None) -> Iterator[FakeProvider]:
    server = FakeProvider(config).start()
    try:
        yield server
    finally:
        server.stop()


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


@asynccontextmanager
async def app_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client talking to a fresh app (lifespan run) over ASGI; the app's SDKs use real HTTP."""
    app = create_app(settings)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as client:
            yield client


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def cli_process(args: Sequence[str], env: dict[str, str], port: int) -> Iterator[str]:
    """``python -m pcfjudge.cli <args>`` as a subprocess, yielded once ``/healthz`` answers; stopped afterwards."""
    full_env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))} | env
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pcfjudge.cli", *args], env=full_env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            yield _wait_healthy(proc, f"http://127.0.0.1:{port}", log, args[0])
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log: IO[bytes], name: str) -> str:
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"{name} exited early: {log.read().decode(errors='replace')}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not become healthy at {url}")
        time.sleep(0.05)
