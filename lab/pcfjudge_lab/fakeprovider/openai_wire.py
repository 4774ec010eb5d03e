"""OpenAI Chat Completions on the wire: ``POST /v1/chat/completions`` request, response and error shapes."""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from pcfjudge_lab.fakeprovider.fake_task import broken_json, question_prefix, tokens
from pcfjudge_lab.fakeprovider.wire import Parsed, Reply, retry_headers

# generic kind -> (type, code) as OpenAI sends them
_ERRORS = {
    "rate_limit": ("requests", "rate_limit_exceeded"),
    "server": ("server_error", None),
    "overloaded": ("server_error", None),
    "auth": ("invalid_request_error", "invalid_api_key"),
    "invalid": ("invalid_request_error", None),
}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def sent_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The answer schema in any structured-output dialect an OpenAI-compatible engine takes (see
    ``pcfjudge.backends.dialects``): json_schema, json_object + schema, TGI's json value, vLLM's structured_outputs
    or guided_json, Ollama's format."""
    fmt = body.get("response_format")
    found: object = None
    if isinstance(fmt, dict):
        named = fmt.get("json_schema")
        found = named.get("schema") if isinstance(named, dict) else fmt.get("schema", fmt.get("value"))
    structured = body.get("structured_outputs")
    if found is None and isinstance(structured, dict):
        found = structured.get("json")
    if found is None:
        found = body.get("guided_json", body.get("format"))
    return found if isinstance(found, dict) else None


class OpenAIWire:
    name = "openai"

    def key(self, request: Request) -> str | None:
        auth = request.headers.get("authorization", "")
        return auth.removeprefix("Bearer ").strip() or None if auth.startswith("Bearer ") else None

    def parse(self, body: dict[str, Any]) -> Parsed | str:
        model, messages = body.get("model"), body.get("messages")
        if not isinstance(model, str) or not model:
            return "you must provide a model parameter"
        if not isinstance(messages, list) or not messages:
            return "'messages' must be a non-empty array"
        roles: dict[str, list[str]] = {"system": [], "user": []}
        sent: list[tuple[str, str]] = []
        for message in messages:
            if isinstance(message, dict):
                role = "system" if message.get("role") in ("system", "developer") else message.get("role")
                if role in roles:
                    roles[role].append(_text(message.get("content")))
                if isinstance(role, str):
                    sent.append((role, _text(message.get("content"))))
        system, user = "\n\n".join(roles["system"]), "\n\n".join(roles["user"])
        fmt = body.get("response_format")
        named = fmt.get("json_schema") if isinstance(fmt, dict) else None
        name = named.get("name") if isinstance(named, dict) else None
        prefix = question_prefix(user)
        cacheable = system + prefix if prefix else None  # OpenAI caches shared prompt prefixes automatically
        schema = sent_schema(body)
        named_schema = name if isinstance(name, str) else None
        return Parsed(model, system, user, named_schema, system + user, cacheable, schema, tuple(sent))

    def error(
        self, status: int, kind: str, message: str, *, retry_after: float | None = None, ident: str = ""
    ) -> JSONResponse:
        type_, code = _ERRORS.get(kind, ("server_error", None))
        body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
        headers = {"x-request-id": f"req_{ident}", **retry_headers(retry_after)}
        return JSONResponse(body, status, headers=headers)

    def reply(self, reply: Reply) -> JSONResponse:
        full = reply.text if reply.text is not None else json.dumps(reply.answer)
        content: str | None = full
        refusal: str | None = None
        finish = "stop"
        if reply.fault == "truncated":
            content, finish = full[: len(full) // 2], "length"
        elif reply.fault == "refusal":
            content, refusal = None, "I'm sorry, but I can't help with that request."
        elif reply.fault == "content_filter":
            content, finish = None, "content_filter"
        elif reply.fault == "bad_json":
            content = broken_json(reply.answer) if reply.text is None else "I cannot decide between them."
        completion_tokens = tokens(content or refusal or "")
        cached = reply.prefix_tokens if reply.prefix_seen else 0
        body = {
            "id": f"chatcmpl-{reply.ident}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.parsed.model,
            "system_fingerprint": "fp_pcfjudge_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal, "annotations": []},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": reply.prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
            },
        }
        return JSONResponse(body, headers={"x-request-id": f"req_{reply.ident}"})
