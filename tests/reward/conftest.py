"""The reward tests' service: ``pcfjudge serve`` judging through the fake provider over the OpenAI wire protocol."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.inprocess import FakeProvider
from tests.support.processes import serve_process

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
