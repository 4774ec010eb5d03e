"""OpenAIBackend: the official SDK over real HTTP to the fake provider — request shape, outcomes, error mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import pytest
from openai import AsyncOpenAI
from pcfjudge.backends.base import (
    BackendError,
    BackendTimeout,
    ProviderError,
    RateLimited,
    Refused,
    Truncated,
)
from pcfjudge.backends.openai_backend import OpenAIBackend, OutputMode, build_openai
from pcfjudge.judging.parse import OutputError, load_json_object, parse_listwise
from pcfjudge.settings import Settings
from pcfjudge.types import DecodingParams

from tests.support.basics import CANDIDATES, OPENAI_KEY
from tests.support.inprocess import FakeProvider, listwise_call
from tests.support.waits import free_port


def _backend(fake: FakeProvider, mode: OutputMode = "json_schema", **client: Any) -> OpenAIBackend:
    options: dict[str, Any] = {"api_key": OPENAI_KEY, "base_url": f"{fake.url}/v1", "max_retries": 0} | client
    return OpenAIBackend(AsyncOpenAI(**options), output_mode=mode)


@pytest.fixture
async def backend(fake: FakeProvider) -> AsyncIterator[OpenAIBackend]:
    async with aclosing(_backend(fake)) as b:
        yield b


async def test_request_carries_strict_schema_and_decoding_params(fake: FakeProvider, backend: OpenAIBackend) -> None:
    call = listwise_call(params=DecodingParams(temperature=0.0, max_output_tokens=512))
    completion = await backend.complete(call)

    run = parse_listwise(completion.text, ["A", "B", "C"], ["a", "b", "c"])
    assert set(run.judgments) == {"a", "b", "c"}
    body = fake.last_body()
    assert body["model"] == "judge-x"
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 512 and "max_completion_tokens" not in body  # a local URL: another engine
    # (OpenAI itself gets max_completion_tokens: tests/backends/test_dialects.py)
    assert "reasoning_effort" not in body
    assert body["messages"] == [
        {"role": "system", "content": call.system},
        {"role": "user", "content": f"{call.prefix}\n\n{call.body}"},
    ]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "listwise_judgment"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]["candidates"]["properties"]) == ["A", "B", "C"]  # every label required
    assert schema["properties"]["candidates"]["required"] == ["A", "B", "C"]
    assert schema["properties"]["ranking"]["items"]["enum"] == ["A", "B", "C"]
    assert schema["properties"]["ranking"]["minItems"] == schema["properties"]["ranking"]["maxItems"] == 3
    assert completion.usage.input_tokens > 0 and completion.usage.output_tokens > 0


async def test_reasoning_effort_replaces_temperature(fake: FakeProvider, backend: OpenAIBackend) -> None:
    await backend.complete(listwise_call(params=DecodingParams(temperature=None, reasoning_effort="low")))
    body = fake.last_body()
    assert body["reasoning_effort"] == "low"
    assert "temperature" not in body


@pytest.mark.parametrize(("mode", "expected"), [("json_object", {"type": "json_object"}), ("prompt", None)])
async def test_fallback_output_modes(fake: FakeProvider, mode: OutputMode, expected: dict[str, str] | None) -> None:
    """Servers without JSON-schema support: JSON mode or prompt-only JSON, validated the same way downstream."""
    async with aclosing(_backend(fake, mode)) as backend:
        completion = await backend.complete(listwise_call())
    assert fake.last_body().get("response_format") == expected
    parse_listwise(completion.text, ["A", "B", "C"], ["a", "b", "c"])


async def test_shared_prefix_reports_cached_tokens(backend: OpenAIBackend) -> None:
    first = await backend.complete(listwise_call(nonce="00000000000000aa"))
    second = await backend.complete(listwise_call(list(reversed(CANDIDATES)), nonce="00000000000000aa"))
    assert first.usage.cached_tokens == 0
    assert 0 < second.usage.cached_tokens < second.usage.input_tokens


@pytest.mark.parametrize(
    ("fault", "error", "says"),
    [
        ("429", RateLimited, "rate limit (429)"),
        ("500", ProviderError, "server error (500)"),
        ("503", RateLimited, "overloaded (503)"),
        ("529", RateLimited, "overloaded (503)"),  # OpenAI has no 529: the fake answers 503
        ("truncated", Truncated, "finish_reason length"),
        ("refusal", Refused, "refused"),
        ("content_filter", Refused, "content filter"),
    ],
)
async def test_faults_become_typed_errors(
    fake: FakeProvider, backend: OpenAIBackend, fault: str, error: type[BackendError], says: str
) -> None:
    fake.faults([fault], retry_after=0.25)
    with pytest.raises(error) as caught:
        await backend.complete(listwise_call())
    assert says in caught.value.detail
    assert caught.value.retryable
    if error is RateLimited and fault == "429":
        assert caught.value.retry_after == pytest.approx(0.25)


async def test_bad_json_is_left_to_validation(fake: FakeProvider, backend: OpenAIBackend) -> None:
    fake.faults(["bad_json"])
    completion = await backend.complete(listwise_call())
    with pytest.raises(OutputError) as caught:
        load_json_object(completion.text)
    assert caught.value.kind == "invalid_json"


async def test_sdk_timeout_is_backend_timeout(fake: FakeProvider) -> None:
    fake.faults(["slow"], slow_seconds=5)
    async with aclosing(_backend(fake, timeout=0.3)) as backend:
        with pytest.raises(BackendTimeout):
            await backend.complete(listwise_call())


async def test_unreachable_server_is_provider_error() -> None:
    client = AsyncOpenAI(api_key=OPENAI_KEY, base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    async with aclosing(OpenAIBackend(client)) as backend:
        with pytest.raises(ProviderError, match="cannot reach"):
            await backend.complete(listwise_call())


async def test_rejected_key_is_scrubbed_and_not_retryable(fake: FakeProvider) -> None:
    """The fake echoes a wrong key in its 401 body, as OpenAI does; the error we raise never carries it."""
    fake.faults(expect_key="sk-the-right-key-000000")
    async with aclosing(_backend(fake, api_key="sk-wrong-key-but-secret-123456")) as backend:
        with pytest.raises(ProviderError) as caught:
            await backend.complete(listwise_call())
    assert "sk-wrong-key-but-secret-123456" not in str(caught.value)
    assert "OPENAI_API_KEY" in caught.value.detail
    assert not caught.value.retryable


def test_factory_turns_sdk_retries_off(fake: FakeProvider) -> None:
    assert build_openai(Settings(openai_api_key=None)) is None
    backend = build_openai(Settings(openai_api_key=OPENAI_KEY, openai_base_url=f"{fake.url}/v1"))
    assert backend is not None
    assert backend.client.max_retries == 0
    assert backend.base_url.rstrip("/") == f"{fake.url}/v1"
    assert OPENAI_KEY not in backend.base_url
