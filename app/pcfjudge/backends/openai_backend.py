"""``openai:<model>``: OpenAI Chat Completions through the official SDK, also for OpenAI-compatible servers.

Chat Completions is the protocol vLLM, SGLang, llama.cpp, Ollama, TGI, LiteLLM and friends share, so one backend
serves them all through ``PCFJ_OPENAI_BASE_URL``. The answer's JSON schema goes out in the engine's structured-output
dialect (``dialects``: learned from the engine's first refusal under ``PCFJ_OPENAI_OUTPUT_MODE=auto``, or pinned);
the judging layer validates the answer the same way in every dialect. The output cap goes out as
``max_completion_tokens`` to OpenAI itself (its reasoning models refuse ``max_tokens``) and as ``max_tokens`` to any
other engine (Ollama and llama-cpp-python ignore ``max_completion_tokens``; TGI refuses the two together).

Outcomes: ``finish_reason`` "length" → Truncated; a ``refusal`` or ``finish_reason`` "content_filter" → Refused;
SDK errors → RateLimited / BackendTimeout / ProviderError (see ``sdkerrors``). SDK retries are off: the runner
owns the one retry policy.

Transport (``PCFJ_OPENAI_TRANSPORT``): ``wire`` (default) sends each call as one POST on a pooled aiohttp session
(``chat_wire``), with the key, headers, base URL and timeouts of the injected ``AsyncOpenAI`` client, at a fraction
of the SDK's CPU per call (README "Performance"); ``sdk`` calls ``chat.completions.create`` on that client (built with
the SDK's aiohttp transport). Both send the same request body and raise the same errors.
"""

from __future__ import annotations

import base64
import logging
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import openai
import orjson
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
from pcfjudge.backends.chat_wire import ChatWire, Timeouts
from pcfjudge.backends.dialects import Dialect, Dialects, OutputMode, format_fields, refuses_format
from pcfjudge.backends.hosts import is_openai
from pcfjudge.backends.sdk_http import sdk_http_client
from pcfjudge.backends.sdkerrors import public_url, scrub, status_error
from pcfjudge.settings import Settings
from pcfjudge.telemetry import tracing
from pcfjudge.types import Usage

log = logging.getLogger("pcfjudge")

Transport = Literal["wire", "sdk"]
KEY_ENV = "OPENAI_API_KEY"


class OpenAIBackend:
    """Judge calls as Chat Completions with the configuration of an injected ``AsyncOpenAI`` client."""

    provider = "openai"

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        output_mode: OutputMode = "auto",
        transport: Transport = "wire",
        connections: int = 100,
    ) -> None:
        self.client = client
        self.output_mode = output_mode
        self.dialects = Dialects(output_mode)
        self.openai = is_openai(str(client.base_url))
        self.transport = transport
        self.wire = ChatWire(
            f"{str(client.base_url).rstrip('/')}/chat/completions",
            _headers(client),
            _timeouts(client),
            connections,
            secrets=self._secrets(),
            public=self.base_url,
        )

    @property
    def base_url(self) -> str:
        return public_url(str(self.client.base_url))

    def request(self, call: JudgeCall, dialect: Dialect | None = None) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``call`` (in the backend's current dialect; a
        ``chat`` call: its own messages, seed and response_format, no structured-output dialect)."""
        p = call.params
        kwargs: dict[str, Any] = {
            "model": call.model,
            "messages": [
                {"role": "system", "content": call.system},
                {"role": "user", "content": call.user},
            ],
        }
        if call.chat is not None:
            kwargs["messages"] = [{"role": role, "content": text} for role, text in call.chat.messages]
            if call.chat.seed is not None:
                kwargs["seed"] = call.chat.seed
            if call.chat.response_format is not None:
                kwargs["response_format"] = orjson.loads(call.chat.response_format)
        # OpenAI's reasoning models refuse max_tokens; Ollama and llama-cpp-python read only max_tokens, and TGI
        # refuses both at once (an alias of one another): every other engine reads max_tokens.
        kwargs["max_completion_tokens" if self.openai else "max_tokens"] = p.max_output_tokens
        if p.reasoning_effort is not None:
            kwargs["reasoning_effort"] = p.reasoning_effort
        if p.temperature is not None:  # None with an effort on OpenAI (its reasoning models refuse temperature)
            kwargs["temperature"] = p.temperature
        if call.chat is not None:
            return kwargs
        return kwargs | format_fields(
            dialect or self.dialects.current, call.schema_name, call.schema, openai=self.openai
        )

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        """One answer; under ``auto``, a refused structured-output dialect is replaced by the next one at once."""
        if call.chat is not None:
            return await self._send(self.request(call))
        while True:
            dialect = self.dialects.current
            try:
                completion = await self._send(self.request(call, dialect))
            except ProviderError as exc:
                if exc.status_code is None or not refuses_format(exc.status_code, exc.detail):
                    raise
                if not self.dialects.refused(dialect):
                    raise
                continue
            self.dialects.accepted(dialect)
            return completion

    async def _send(self, request: dict[str, Any]) -> Completion:
        if self.transport == "wire":
            return self.completion_of(await self.wire.post(orjson.dumps(request)))
        try:
            response = await self.client.chat.completions.create(**request, extra_headers=tracing.outgoing_headers())
        except openai.OpenAIError as exc:
            raise self._error(exc) from None
        return self._completion(response)

    def completion_of(self, data: dict[str, Any]) -> Completion:
        """The answer of one Chat Completions response body (the wire path and batch results): the SDK path's checks
        (``_completion``), on the JSON."""
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderError("openai returned no choices")
        choice = choices[0]
        found = choice.get("message")
        message: dict[str, Any] = found if isinstance(found, dict) else {}
        if message.get("refusal"):
            raise Refused(f"the model refused: {scrub(str(message['refusal']), self._secrets())}")
        if choice.get("finish_reason") == "content_filter":
            raise Refused("the provider's content filter stopped the answer (finish_reason content_filter)")
        usage = _usage_of(data.get("usage"))
        if choice.get("finish_reason") == "length":
            raise _truncated(usage)
        content = message.get("content")
        return Completion(text=content if isinstance(content, str) else "", usage=usage)

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
            raise _truncated(_usage(response))
        return Completion(text=message.content or "", usage=_usage(response))

    def _error(self, exc: openai.OpenAIError) -> BackendError:
        if isinstance(exc, openai.APITimeoutError):
            return BackendTimeout("openai request timed out")
        if isinstance(exc, openai.APIConnectionError):
            log.warning("cannot reach the openai endpoint at %s", self.base_url)  # its address: for operators only
            return ProviderError("cannot reach the openai endpoint (connection failed)")
        if isinstance(exc, openai.APIStatusError):
            message = exc.body.get("message", "") if isinstance(exc.body, dict) else str(exc.body or "")
            return status_error(
                "openai", exc.status_code, str(message), exc.response.headers, key_env=KEY_ENV, secrets=self._secrets()
            )
        return ProviderError(f"openai client error: {scrub(type(exc).__name__ + ': ' + str(exc), self._secrets())}")

    def _secrets(self) -> tuple[str, ...]:
        return (self.client.api_key,) if self.client.api_key else ()

    async def aclose(self) -> None:
        await self.wire.aclose()
        await self.client.close()


def _truncated(usage: Usage) -> Truncated:
    return Truncated(
        f"the answer hit the output-token limit after {usage.output_tokens} tokens (finish_reason length); "
        "raise PCFJ_MAX_OUTPUT_TOKENS",
        usage=usage,
    )


def _usage(response: ChatCompletion) -> Usage:
    usage = response.usage
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cached = details.cached_tokens if details is not None and details.cached_tokens is not None else 0
    return Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens, cached_tokens=cached)


def _usage_of(usage: object) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=int(cached or 0),
    )


def _headers(client: AsyncOpenAI) -> dict[str, str]:
    """The headers the SDK sends on every request (its own, organization/project, the key; a custom
    ``Authorization``, such as a base URL's Basic credentials, replaces the key's)."""
    defaults = {name: value for name, value in client.default_headers.items() if isinstance(value, str)}
    return client.auth_headers | defaults  # merged in the SDK's own order


def _timeouts(client: AsyncOpenAI) -> Timeouts:
    timeout = client.timeout
    if timeout is None or isinstance(timeout, int | float):
        return timeout, timeout, timeout
    return timeout.connect, timeout.read, timeout.pool


def build_openai(settings: Settings, base_url: str | None = None) -> OpenAIBackend | None:
    """The OpenAI backend when a key or a base URL is configured (SDK retries off; the SDK timeout caps one
    attempt), with as many pooled connections as it has call slots.

    A local engine needs no key (the SDK is given a placeholder). Credentials in the base URL
    (``http://user:pass@host/v1``) go out as HTTP Basic instead of a key (``Settings`` refuses both at once)."""
    engine = base_url is not None  # one of PCFJ_ENGINES: no key, its own URL
    if not engine and settings.providers.openai_api_key is None and not settings.providers.openai_base_url:
        return None
    key = (
        settings.providers.openai_api_key.get_secret_value()
        if settings.providers.openai_api_key is not None and not engine
        else NO_KEY
    )
    url = base_url if engine else settings.providers.openai_base_url
    return openai_wire(settings, url, key, settings.fanout.backend_concurrency)


def openai_wire(settings: Settings, url: str | None, key: str, connections: int) -> OpenAIBackend:
    """A backend on the OpenAI wire at ``url`` (credentials in it go out as HTTP Basic) with ``key``: SDK retries
    off, the SDK timeout capping one attempt, ``connections`` pooled connections, the service's transport and output
    mode (the OpenAI backend, an engine of PCFJ_ENGINES, a fleet's endpoint)."""
    base_url, basic = split_credentials(url)
    sdk = settings.providers.openai_transport == "sdk"
    # the SDK's client bounded as the wire path bounds its own reads
    http_client = sdk_http_client(openai.DefaultAioHttpClient, "openai", connections) if sdk else None
    client = AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        max_retries=0,
        timeout=settings.fanout.request_timeout_s,
        http_client=http_client,
        default_headers={"Authorization": basic} if basic else None,
    )
    return OpenAIBackend(
        client,
        output_mode=settings.providers.openai_output_mode,
        transport=settings.providers.openai_transport,
        connections=connections,
    )


NO_KEY = "no-key"
"""The key the SDK is given for an engine that needs none (it refuses to start without one)."""


def split_credentials(url: str | None) -> tuple[str | None, str | None]:
    """``url`` without its ``user:pass@`` part, and that part as an HTTP Basic ``Authorization`` value (or None)."""
    if not url:
        return url, None
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port is not None else "")
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return urlunsplit(parts._replace(netloc=netloc)), "Basic " + base64.b64encode(pair.encode()).decode()
