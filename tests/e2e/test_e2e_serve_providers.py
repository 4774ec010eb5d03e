"""As a new user would: ``pcfjudge fake-provider`` and ``pcfjudge serve`` as processes, keys in the environment.

The SDKs' own variable names are used for keys (OPENAI_API_KEY, ANTHROPIC_API_KEY); the base URL comes from
PCFJ_OPENAI_BASE_URL for OpenAI and from the SDK's own ANTHROPIC_BASE_URL for Anthropic. No model is named, so
the provider's default model is used.
"""

from __future__ import annotations

import httpx
import pytest

from tests.support.basics import ANTHROPIC_KEY, CANDIDATES, OPENAI_KEY
from tests.support.processes import fake_provider_process, serve_process

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_serve_judges_through_the_fake_provider(provider: str) -> None:
    with fake_provider_process("--seed", "3") as fake_url:
        if provider == "openai":
            env = {"OPENAI_API_KEY": OPENAI_KEY, "PCFJ_OPENAI_BASE_URL": f"{fake_url}/v1"}
            key, model = OPENAI_KEY, "openai:gpt-5.4"
        else:
            env = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "ANTHROPIC_BASE_URL": fake_url}
            key, model = ANTHROPIC_KEY, "anthropic:claude-sonnet-4-6"
        with serve_process(env=env | {"PCFJ_RETRY_BASE_S": "0.01"}) as url:
            response = httpx.post(
                f"{url}/judge/listwise",
                json={"question": "Largest planet?", "candidates": CANDIDATES, "k": 3},
                timeout=60,
            )
            ready = httpx.get(f"{url}/readyz")
        calls = httpx.get(f"{fake_url}/_control/calls", params={"last": 1}).json()

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == model
    assert body["degraded"] is False and body["diagnostics"]["runs_ok"] == 3
    assert calls["calls"] == {provider: 3}
    assert calls["requests"][0]["body"]["model"] == model.split(":", 1)[1]
    assert ready.json()["backends"] == sorted([provider, "sim"])
    assert ready.json()["endpoints"][provider].startswith(fake_url)
    assert key not in response.text + ready.text
