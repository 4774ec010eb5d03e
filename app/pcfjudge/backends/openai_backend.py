"""``openai:<model>``: OpenAI Chat Completions through the official SDK, also for OpenAI-compatible servers.

Chat Completions is the protocol vLLM, Ollama, LiteLLM and friends share, so one backend serves them all through
``PCFJ_OPENAI_BASE_URL``. The answer's JSON schema goes out as a strict ``response_format`` (the displayed labels
are an enum); ``PCFJ_OPENAI_OUTPUT_MODE`` falls back to JSON mode or prompt-only JSON for servers without schema
support (the judging layer validates the answer the same way in every mode).

Outcomes: ``finish_reason`` "length" → Truncated; a ``refusal`` or ``finish_reason`` "content_filter" → Refused;
SDK errors → RateLimited / BackendTimeout / ProviderError (see ``sdkerrors``). SDK retries are off: the runner
owns the one retry policy.
"""

from __future__ import annotations

from typing import Any, Literal

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from pcfjudge.backends.base import (
    BackendError,
    BackendTimeout,
    Completion,
    JudgeCall,
    ProviderError,
    Refused,
    Truncated,
)
from pcfjudge.backends.sdkerrors import public_url, scrub, status_error
from pcfjudge.settings import Settings
from pcfjudge.types import Usage

OutputMode = Literal["json_schema", "json_object", "prompt"]
KEY_ENV = "OPENAI_API_KEY"


class OpenAIBackend:
    """Judge calls as Chat Completions on an injected ``AsyncOpenAI`` client."""

    provider = "openai"

    def __init__(self, client: AsyncOpenAI, *, output_mode: OutputMode = "json_schema") -> None:
        self.client = client
        self.output_mode = output_mode

    @property
    def base_url(self) -> str:
        return public_url(str(self.client.base_url))

    def request(self, call: JudgeCall) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``call``."""
        p = call.params
        kwargs: dict[str, Any] = {
            "model": call.model,
            "messages": [
                {"role": "system", "content": call.system},
                {"role": "user", "content": call.user},
            ],
            "max_completion_tokens": p.max_output_tokens,
        }
        if p.reasoning_effort is not None:
            kwargs["reasoning_effort"] = p.reasoning_effort  # reasoning models refuse temperature
        elif p.temperature is not None:
            kwargs["temperature"] = p.temperature
        if self.output_mode == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": call.schema_name, "schema": call.schema, "strict": True},
            }
        elif self.output_mode == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    async def complete(self, call: JudgeCall) -> Completion:
        try:
            response = await self.client.chat.completions.create(**self.request(call))
        except openai.OpenAIError as exc:
            raise self._error(exc) from None
        return self._completion(response)

    def _completion(self, response: ChatCompletion) -> Completion:
        if not response.choices:
            raise ProviderError("openai returned no choices")
        choice = response.choices[0]
        message = choice.message
        if message.refusal:
            raise Refused(f"the model refused: {scrub(message.refusal, self._secrets())}")
        if choice.finish_reason == "content_filter":
            raise Refused("the provider's content filter stopped the answer (finish_reason content_filter)")
        if choice.finish_reason == "length":
            raise Truncated(
                "the answer hit the output-token limit (finish_reason length); raise PCFJ_MAX_OUTPUT_TOKENS"
            )
        return Completion(text=message.content or "", usage=_usage(response))

    def _error(self, exc: openai.OpenAIError) -> BackendError:
        if isinstance(exc, openai.APITimeoutError):
            return BackendTimeout("openai request timed out")
        if isinstance(exc, openai.APIConnectionError):
            return ProviderError(f"cannot reach the openai endpoint at {self.base_url}")
        if isinstance(exc, openai.APIStatusError):
            message = exc.body.get("message", "") if isinstance(exc.body, dict) else str(exc.body or "")
            return status_error(
                "openai", exc.status_code, str(message), exc.response.headers, key_env=KEY_ENV, secrets=self._secrets()
            )
        return ProviderError(f"openai client error: {scrub(type(exc).__name__ + ': ' + str(exc), self._secrets())}")

    def _secrets(self) -> tuple[str, ...]:
        return (self.client.api_key,) if self.client.api_key else ()

    async def aclose(self) -> None:
        await self.client.close()


def _usage(response: ChatCompletion) -> Usage:
    usage = response.usage
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cached = details.cached_tokens if details is not None and details.cached_tokens is not None else 0
    return Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens, cached_tokens=cached)


def build_openai(settings: Settings) -> OpenAIBackend | None:
    """The OpenAI backend when a key is configured (SDK retries off; the SDK timeout caps one attempt)."""
    if settings.openai_api_key is None:
        return None
    client = AsyncOpenAI(
        api_key=settings.openai_api_key.get_secret_value(),
        base_url=settings.openai_base_url,
        max_retries=0,
        timeout=settings.request_timeout_s,
    )
    return OpenAIBackend(client, output_mode=settings.openai_output_mode)
