"""Shared fixtures, built on ``tests/support/``:

- ``client`` / ``make_client``: an in-process app client on embedded defaults (sim judge, in-process cache), or a
  factory taking ``Settings``;
- ``fake``: the fake provider (one per module, uvicorn in a thread), reset before each test; a module changes its
  configuration by overriding the module-scoped ``fake_config`` fixture;
- ``serve_url``: ``pcfjudge serve`` on embedded defaults as a subprocess (one per module), its base URL;
- ``judge_url``: ``pcfjudge serve`` judging through the fake provider over the OpenAI wire protocol (one per module, K
  orders per group): the reward adapters' and the trainer integrations' service;
- ``redis_server``: a fresh private redis-server per test.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from pcfjudge_lab.fakeprovider.state import FakeConfig

from tests.support.basics import NO_CALIBRATION, SCRUBBED_ENV_PREFIXES
from tests.support.inprocess import ClientFactory, FakeProvider, app_client, running_fake
from tests.support.processes import serve_process
from tests.support.redis_server import RedisServer, require_redis


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The heaviest files first: those that judge on a real engine, then the other slow ones, then the rest, each file's
    tests in their own order. ``scripts/test.sh`` runs the files in this order (``--dist loadfile
    --no-loadscope-reorder``: xdist's default would put the files with the most tests first, and so the engine files,
    few tests of minutes each, last), so the long files start at once and the quick ones fill in at the end."""
    weight: dict[Path, int] = {}
    for item in items:
        heavy = 0 if item.get_closest_marker("engine") else 1 if item.get_closest_marker("slow") else 2
        weight[item.path] = min(weight.get(item.path, heavy), heavy)
    items.sort(key=lambda item: weight[item.path])  # stable: a file's tests stay together, in order


@pytest.fixture(autouse=True)
def _no_real_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real provider: drop any provider keys/URLs or PCFJ_ settings from the environment. Nor do
    they read the developer's calibration records (``NO_CALIBRATION``; a test sets its own file)."""
    for name in list(os.environ):
        if name.startswith(SCRUBBED_ENV_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    for name, value in NO_CALIBRATION.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def make_client() -> ClientFactory:
    return app_client


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with app_client() as c:
        yield c


@pytest.fixture(scope="module")
def fake_config() -> FakeConfig:
    """The fake provider's startup configuration; override it in a module to change the seed or knobs."""
    return FakeConfig()


@pytest.fixture(scope="module")
def fake_server(fake_config: FakeConfig) -> Iterator[FakeProvider]:
    with running_fake(fake_config) as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeProvider) -> FakeProvider:
    """The module's fake provider, back to its startup settings (no faults, no calls, no cached prefixes)."""
    fake_server.reset()
    return fake_server


@pytest.fixture(scope="module")
def serve_url() -> Iterator[str]:
    """``pcfjudge serve`` on embedded defaults as a subprocess, shared by the tests of a module: its base URL."""
    with serve_process() as url:
        yield url


K = 3
"""PCFJ_DEFAULT_K of the service ``judge_url`` starts (each group is judged in K orders)."""


@pytest.fixture(scope="module")
def judge_url(fake_server: FakeProvider) -> Iterator[str]:
    env = {
        "PCFJ_OPENAI_API_KEY": "test",
        "PCFJ_OPENAI_BASE_URL": f"{fake_server.url}/v1",
        "PCFJ_DEFAULT_MODEL": "openai:judge-x",
        "PCFJ_DEFAULT_K": str(K),
        "PCFJ_MAX_RETRIES": "0",
    }
    with serve_process(env=env) as url:
        yield url


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh private Redis for one test, stopped afterwards; skips only when redis-server is not installed."""
    require_redis()
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()
