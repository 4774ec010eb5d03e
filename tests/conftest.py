"""Shared fixtures: an in-process app client on embedded defaults (sim judge, in-process cache)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import httpx
import pytest
from asgi_lifespan import LifespanManager
from pcfjudge.api.app import create_app
from pcfjudge.settings import Settings

ClientFactory = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]

pytest_plugins = ["tests.redis_server"]  # the ``redis_server`` fixture: a private redis-server per test


@asynccontextmanager
async def app_client(settings: Settings | None = None) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client talking to a fresh app (lifespan run) over ASGI."""
    app = create_app(settings or Settings())
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client


@pytest.fixture(autouse=True)
def _no_real_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real provider: drop any provider keys/URLs or PCFJ_ settings from the environment."""
    import os

    for name in list(os.environ):
        if name.startswith(("OPENAI_", "ANTHROPIC_", "PCFJ_")):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def make_client() -> ClientFactory:
    return app_client


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with app_client() as c:
        yield c
