"""AnthropicBackend: the official SDK over real HTTP to the fake provider — forced tool, prompt caching, errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import pytest
from anthropic import AsyncAnthropic
from pcfjudge.backends.anthropic_backend import AnthropicBackend, build_anthropic
from pcfjudge.backends.base import BackendError, ProviderError, RateLimited, Refused, Truncated
from pcfjudge.judging.parse import OutputError, load_json_object, parse_listwise
from pcfjudge.settings import Settings
from pcfjudge.types import DecodingParams

from tests.support.basics import ANTHROPIC_KEY, CANDIDATES, OPENAI_KEY
from tests.support.inprocess import FakeProvider, listwise_call
from tests.support.processes import clean_env


def _backend(fake: FakeProvider, **client: Any) -> AnthropicBackend:
    options: dict[str, Any] = {"api_key": ANTHROPIC_KEY, "base_url": fake.url, "max_retries": 0} | client
    return AnthropicBackend(AsyncAnthropic(**options))


@pytest.fixture
async def backend(fake: FakeProvider) -> AsyncIterator[AnthropicBackend]:
    async with aclosing(_backend(fake)) as b:
        yield b


async def test_request_forces_the_tool_and_marks_the_prefix_for_caching(
    fake: FakeProvider, backend: AnthropicBackend
) -> None:
    call = listwise_call(model="judge-y", params=DecodingParams(temperature=0.0, max_output_tokens=700))
    completion = await backend.complete(call)

    parse_listwise(completion.text, ["A", "B", "C"], ["a", "b", "c"])
    body = fake.last_body()
    assert body["model"] == "judge-y"
    assert body["max_tokens"] == 700
    assert "temperature" not in body  # this SDK's Messages API has no temperature parameter
    assert "output_config" not in body
    assert body["system"] == [{"type": "text", "text": call.system}]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": call.prefix, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": call.body},
            ],
        }
    ]
    (tool,) = body["tools"]
    assert tool["name"] == "listwise_judgment"
    assert tool["input_schema"] == call.schema
    assert tool["input_schema"]["properties"]["ranking"]["items"]["enum"] == ["A", "B", "C"]
    assert body["tool_choice"] == {"type": "tool", "name": "listwise_judgment", "disable_parallel_tool_use": True}


@pytest.mark.parametrize(("effort", "sent"), [("high", {"effort": "high"}), ("minimal", None)])
async def test_reasoning_effort_goes_out_as_output_config(
    fake: FakeProvider, backend: AnthropicBackend, effort: str, sent: dict[str, str] | None
) -> None:
    await backend.complete(listwise_call(params=DecodingParams(temperature=None, reasoning_effort=effort)))
    assert fake.last_body().get("output_config") == sent


async def test_permutations_of_one_item_read_the_cached_prefix(backend: AnthropicBackend) -> None:
    first = await backend.complete(listwise_call(nonce="00000000000000bb"))
    second = await backend.complete(listwise_call(list(reversed(CANDIDATES)), nonce="00000000000000bb"))
    assert first.usage.cached_tokens == 0
    assert 0 < second.usage.cached_tokens < second.usage.input_tokens
    # input_tokens is the whole prompt, cached or not, so both runs report the same prompt size.
    assert first.usage.input_tokens == second.usage.input_tokens


@pytest.mark.parametrize(
    ("fault", "error", "says"),
    [
        ("429", RateLimited, "rate limit (429)"),
        ("529", RateLimited, "overloaded (529)"),
        ("503", RateLimited, "overloaded (503)"),
        ("500", ProviderError, "server error (500)"),
        ("truncated", Truncated, "stop_reason max_tokens"),
        ("refusal", Refused, "refused"),
        ("content_filter", Refused, "general_harms"),
    ],
)
async def test_faults_become_typed_errors(
    fake: FakeProvider, backend: AnthropicBackend, fault: str, error: type[BackendError], says: str
) -> None:
    fake.faults([fault], retry_after=1.5)
    with pytest.raises(error) as caught:
        await backend.complete(listwise_call())
    assert says in caught.value.detail
    if fault in ("429", "529"):
        assert caught.value.retry_after == pytest.approx(1.5)


async def test_answer_without_the_tool_is_left_to_validation(fake: FakeProvider, backend: AnthropicBackend) -> None:
    fake.faults(["bad_json"])
    completion = await backend.complete(listwise_call())
    with pytest.raises(OutputError) as caught:
        load_json_object(completion.text)
    assert caught.value.kind == "invalid_json"


async def test_rejected_key_is_scrubbed_and_not_retryable(fake: FakeProvider) -> None:
    fake.faults(expect_key="sk-ant-right-000000")
    async with aclosing(_backend(fake, api_key="sk-ant-wrong-but-secret-99999")) as backend:
        with pytest.raises(ProviderError) as caught:
            await backend.complete(listwise_call())
    assert "sk-ant-wrong-but-secret-99999" not in str(caught.value)
    assert "ANTHROPIC_API_KEY" in caught.value.detail
    assert not caught.value.retryable


def test_factory_turns_sdk_retries_off(fake: FakeProvider) -> None:
    assert build_anthropic(Settings(anthropic_api_key=None)) is None
    backend = build_anthropic(Settings(anthropic_api_key=ANTHROPIC_KEY, anthropic_base_url=fake.url))
    assert backend is not None
    assert backend.client.max_retries == 0
    assert backend.base_url.rstrip("/") == fake.url


def test_the_sdk_loads_with_the_first_anthropic_backend() -> None:
    """In a fresh interpreter: the app and the backends of a service whose provider is OpenAI's (on the SDK's
    transport too) are built without importing the Anthropic SDK (two thirds of the modules the service would load,
    over a second of its start); the first Anthropic backend built loads it."""
    script = textwrap.dedent(
        f"""
        import json, sys
        from pcfjudge.api.app import create_app
        from pcfjudge.backends.factory import build_backends
        from pcfjudge.settings import Settings

        create_app()
        served = sorted(build_backends(Settings()))
        before = "anthropic" in sys.modules
        built = sorted(build_backends(Settings(anthropic_api_key={ANTHROPIC_KEY!r})))
        print(json.dumps({{"served": served, "before": before, "built": built, "after": "anthropic" in sys.modules}}))
        """
    )
    env = clean_env() | {
        "PCFJ_OPENAI_API_KEY": OPENAI_KEY,
        "PCFJ_OPENAI_TRANSPORT": "sdk",
        "PCFJ_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"served": ["openai"], "before": False, "built": ["anthropic", "openai"], "after": True}
