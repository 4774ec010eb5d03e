"""The app in process (an httpx client over ASGI, lifespan run) and the fake provider in a thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any

import httpx
import uvicorn
from asgi_lifespan import LifespanManager
from pcfjudge.api.app import create_app
from pcfjudge.backends.base import JudgeCall
from pcfjudge.judging.prompts import new_nonce, render_listwise
from pcfjudge.services import Services
from pcfjudge.settings import Settings
from pcfjudge.types import DecodingParams
from pcfjudge_lab.fakeprovider.fake_server import create_fake_app
from pcfjudge_lab.fakeprovider.state import FakeConfig

from tests.support.basics import ANTHROPIC_KEY, CANDIDATES, OPENAI_KEY, QUESTION
from tests.support.waits import wait_until

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
        """Plan faults (see ``pcfjudge_lab.fakeprovider.fake_server``); returns the fake's summary."""
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
