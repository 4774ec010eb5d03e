"""``anthropic:<model>``: Anthropic Messages through the official SDK, answering through a forced tool.

The answer's JSON schema is the ``input_schema`` of one tool the model must call; its ``input`` is the answer.
The shared prefix (instructions + question) is a separate text block marked ``cache_control: ephemeral``, so the
K permutations of one item reuse the cached prefix (tools → system → prefix); ``cache_read_input_tokens`` is
recorded as cached tokens. ``input_tokens`` reported upward is the total prompt size (uncached + cache read +
cache write), like OpenAI's ``prompt_tokens``.

Decoding: this SDK's ``messages.create`` has no ``temperature`` parameter any more, so none is sent (the decoding
parameters for this provider record ``temperature=None``, keeping the cache key honest). A configured reasoning
effort the API accepts (low … max) goes out as ``output_config.effort``.

Outcomes: ``stop_reason`` "max_tokens" / "model_context_window_exceeded" → Truncated; "refusal" → Refused. When the
model answers without calling the tool, its text is handed on unchanged: the judging layer's validation then
records the run as ``invalid_json`` (retried once), like any other unusable answer, rather than as a provider fault.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anthropic
from anthropic import AsyncAnthropic
from anthropic.types import Message, TextBlock, ToolUseBlock

from pcfjudge.backends.base import (
    BackendError,
    BackendTimeout,
    Completion,
    JudgeCall,
    ProviderError,
    Refused,
    Truncated,
)
from pcfjudge.backends.models_file import EndpointSpec
from pcfjudge.backends.params import ANTHROPIC_EFFORTS
from pcfjudge.backends.sdk_http import answer_too_large, sdk_http_client
from pcfjudge.backends.sdkerrors import public_url, scrub, status_error
from pcfjudge.settings import Settings
from pcfjudge.telemetry import tracing
from pcfjudge.types import Usage

log = logging.getLogger("pcfjudge")

KEY_ENV = "ANTHROPIC_API_KEY"
_TOOL_DESCRIPTION = "Record your judgment. Call this exactly once with the complete judgment as its input."


class AnthropicBackend:
    """Judge calls as Messages with one forced tool, on an injected ``AsyncAnthropic`` client."""

    provider = "anthropic"

    def __init__(self, client: AsyncAnthropic) -> None:
        self.client = client

    @property
    def base_url(self) -> str:
        return public_url(str(self.client.base_url))

    def request(self, call: JudgeCall) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``call`` (a ``chat`` call: ``chat_request``)."""
        if call.chat is not None:
            return chat_request(call)
        kwargs: dict[str, Any] = {
            "model": call.model,
            "max_tokens": call.params.max_output_tokens,
            "system": [{"type": "text", "text": call.system}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": call.prefix, "cache_control": {"type": "ephemeral"}},
                        {"type": "text", "text": call.body},
                    ],
                }
            ],
            "tools": [{"name": call.schema_name, "description": _TOOL_DESCRIPTION, "input_schema": call.schema}],
            "tool_choice": {"type": "tool", "name": call.schema_name, "disable_parallel_tool_use": True},
        }
        if call.params.reasoning_effort in ANTHROPIC_EFFORTS:
            kwargs["output_config"] = {"effort": call.params.reasoning_effort}
        return kwargs

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        try:
            # With tracing on, the call span's traceparent (this SDK also sends the current one by itself).
            message = await self.client.messages.create(**self.request(call), extra_headers=tracing.outgoing_headers())
        except anthropic.AnthropicError as exc:
            raise self._error(exc) from None
        return self.completion(message, call.schema_name)

    def completion(self, message: Message, tool: str) -> Completion:
        if message.stop_reason == "refusal":
            details = message.stop_details
            why = ", ".join(filter(None, [details.category, details.explanation])) if details is not None else ""
            raise Refused(f"the model refused{f' ({scrub(why)})' if why else ''}")
        if message.stop_reason in ("max_tokens", "model_context_window_exceeded"):
            raise Truncated(
                f"the answer hit the output-token limit (stop_reason {message.stop_reason}); raise PCFJ_MAX_OUTPUT_TOKENS"
            )
        usage = _usage(message)
        for block in message.content:
            if isinstance(block, ToolUseBlock) and block.name == tool:
                return Completion(text=json.dumps(block.input, ensure_ascii=False), usage=usage)
        text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
        return Completion(text=text, usage=usage)

    def _error(self, exc: anthropic.AnthropicError) -> BackendError:
        if isinstance(exc, anthropic.APITimeoutError):
            return BackendTimeout("anthropic request timed out")
        if (bounded := answer_too_large(exc)) is not None:
            return bounded
        if isinstance(exc, anthropic.APIConnectionError):
            log.warning("cannot reach the anthropic endpoint at %s", self.base_url)  # its address: for operators only
            return ProviderError("cannot reach the anthropic endpoint (connection failed)")
        if isinstance(exc, anthropic.APIStatusError):
            message = exc.api_message or (exc.type or "")
            return status_error(
                "anthropic", exc.status_code, message, exc.response.headers, key_env=KEY_ENV, secrets=self._secrets()
            )
        return ProviderError(f"anthropic client error: {scrub(type(exc).__name__ + ': ' + str(exc), self._secrets())}")

    def _secrets(self) -> tuple[str, ...]:
        return (self.client.api_key,) if self.client.api_key else ()

    async def aclose(self) -> None:
        await self.client.close()


def chat_request(call: JudgeCall) -> dict[str, Any]:
    """A ``chat`` call as Messages: its system messages joined as the system prompt, the rest as they are, no tool
    (the answer is the model's text); the caller's seed and response_format have no Messages equivalent."""
    assert call.chat is not None
    system = "\n\n".join(text for role, text in call.chat.messages if role in ("system", "developer"))
    turns = [
        {"role": "assistant" if role == "assistant" else "user", "content": text}
        for role, text in call.chat.messages
        if role not in ("system", "developer")
    ]
    kwargs: dict[str, Any] = {"model": call.model, "max_tokens": call.params.max_output_tokens, "messages": turns}
    if system:
        kwargs["system"] = system
    if call.params.reasoning_effort in ANTHROPIC_EFFORTS:
        kwargs["output_config"] = {"effort": call.params.reasoning_effort}
    return kwargs


def _usage(message: Message) -> Usage:
    u = message.usage
    read = u.cache_read_input_tokens or 0
    written = u.cache_creation_input_tokens or 0
    return Usage(input_tokens=u.input_tokens + read + written, output_tokens=u.output_tokens, cached_tokens=read)


def build_anthropic(settings: Settings) -> AnthropicBackend | None:
    """The Anthropic backend when a key is configured (SDK retries off; the SDK timeout caps one attempt), on the
    SDK's aiohttp transport (about two thirds of the CPU per call of its default one, README "Performance") with as
    many pooled connections as the backend has call slots."""
    if settings.providers.anthropic_api_key is None:
        return None
    slots = settings.fanout.backend_concurrency
    client = AsyncAnthropic(
        api_key=settings.providers.anthropic_api_key.get_secret_value(),
        base_url=settings.providers.anthropic_base_url,
        max_retries=0,
        timeout=settings.fanout.request_timeout_s,
        http_client=sdk_http_client(anthropic.DefaultAioHttpClient, "anthropic", slots),
    )
    return AnthropicBackend(client)


def anthropic_endpoint(settings: Settings, spec: EndpointSpec, connections: int) -> AnthropicBackend:
    """The backend of a fleet endpoint on Anthropic's wire: its own client, key and URL, the service's timeout."""
    client = AsyncAnthropic(
        api_key=spec.api_key,
        base_url=spec.api_base,
        max_retries=0,
        timeout=settings.fanout.request_timeout_s,
        http_client=sdk_http_client(anthropic.DefaultAioHttpClient, "anthropic", connections),
    )
    return AnthropicBackend(client)
