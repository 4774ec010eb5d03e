"""Anthropic Messages on the wire: ``POST /v1/messages`` request, response and error shapes.

The cacheable prefix is everything up to and including the last block marked ``cache_control`` (tools, then
system, then message blocks), as Anthropic's prompt caching defines it.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from pcfjudge_lab.fakeprovider.fake_task import broken_json, tokens
from pcfjudge_lab.fakeprovider.wire import Parsed, Reply, retry_headers

_ERRORS = {
    "rate_limit": "rate_limit_error",
    "server": "api_error",
    "overloaded": "overloaded_error",
    "auth": "authentication_error",
    "invalid": "invalid_request_error",
}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _prompt_parts(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The prompt as (text, marked for caching) pieces in cache order: tools, system, message blocks."""
    parts = [
        (json.dumps({k: v for k, v in t.items() if k != "cache_control"}, sort_keys=True), bool(t.get("cache_control")))
        for t in body.get("tools") or []
        if isinstance(t, dict)
    ]
    blocks = _blocks(body.get("system"))
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            blocks += _blocks(message.get("content"))
    parts += [(str(b.get("text", "")), bool(b.get("cache_control"))) for b in blocks]
    return parts


def _cache_prefix(parts: list[tuple[str, bool]]) -> str | None:
    marked = [i for i, (_, mark) in enumerate(parts) if mark]
    return "".join(text for text, _ in parts[: marked[-1] + 1]) if marked else None


class AnthropicWire:
    name = "anthropic"

    def key(self, request: Request) -> str | None:
        # Older SDKs send x-api-key; anthropic 2.x sends the key as a bearer token.
        auth = request.headers.get("authorization", "")
        bearer = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
        return request.headers.get("x-api-key") or bearer or None

    def parse(self, body: dict[str, Any]) -> Parsed | str:
        model, messages = body.get("model"), body.get("messages")
        if not isinstance(model, str) or not model:
            return "model: Field required"
        if not isinstance(body.get("max_tokens"), int):
            return "max_tokens: Field required"
        if not isinstance(messages, list) or not messages:
            return "messages: Field required"
        system = "".join(b.get("text", "") for b in _blocks(body.get("system")) if b.get("type") == "text")
        user = "\n\n".join(
            b.get("text", "")
            for m in messages
            if isinstance(m, dict) and m.get("role") == "user"
            for b in _blocks(m.get("content"))
            if b.get("type") == "text"
        )
        choice = body.get("tool_choice")
        tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
        name = choice.get("name") if isinstance(choice, dict) else (tools[0].get("name") if tools else None)
        parts = _prompt_parts(body)
        prompt = "".join(text for text, _ in parts)
        schema = next((t.get("input_schema") for t in tools if t.get("name") == name), None)
        sent = [("system", system)] if system else []
        for m in messages:
            if isinstance(m, dict) and m.get("role") in ("user", "assistant"):
                text = "".join(b.get("text", "") for b in _blocks(m.get("content")) if b.get("type") == "text")
                sent.append((str(m["role"]), text))
        return Parsed(
            model,
            system,
            user,
            name if isinstance(name, str) else None,
            prompt,
            _cache_prefix(parts),
            schema if isinstance(schema, dict) else None,
            tuple(sent),
        )

    def error(
        self, status: int, kind: str, message: str, *, retry_after: float | None = None, ident: str = ""
    ) -> JSONResponse:
        body = {
            "type": "error",
            "error": {"type": _ERRORS.get(kind, "api_error"), "message": message},
            "request_id": f"req_{ident}",
        }
        return JSONResponse(body, status, headers={"request-id": f"req_{ident}", **retry_headers(retry_after)})

    def reply(self, reply: Reply) -> JSONResponse:
        tool = reply.parsed.schema_name
        stop_details: dict[str, Any] | None = None
        content: list[dict[str, Any]]
        if tool:
            content = [{"type": "tool_use", "id": f"toolu_{reply.ident}", "name": tool, "input": reply.answer}]
            stop = "tool_use"
        else:
            text = reply.text if reply.text is not None else json.dumps(reply.answer)
            content, stop = [{"type": "text", "text": text}], "end_turn"
        if reply.fault == "truncated" and tool:
            content, stop = (
                [{"type": "tool_use", "id": f"toolu_{reply.ident}", "name": tool, "input": {}}],
                "max_tokens",
            )
        elif reply.fault == "truncated":
            text = reply.text if reply.text is not None else json.dumps(reply.answer)
            content, stop = [{"type": "text", "text": text[:40]}], "max_tokens"
        elif reply.fault in ("refusal", "content_filter"):
            category = "general_harms" if reply.fault == "content_filter" else None
            content, stop = [], "refusal"
            stop_details = {"type": "refusal", "category": category, "explanation": "Declined by the fake provider."}
        elif reply.fault == "bad_json":
            text = broken_json(reply.answer) if reply.text is None else "I cannot decide between them."
            content, stop = [{"type": "text", "text": text}], "end_turn"
        prefix = reply.prefix_tokens
        body = {
            "id": f"msg_{reply.ident}",
            "type": "message",
            "role": "assistant",
            "model": reply.parsed.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "stop_details": stop_details,
            "usage": {
                "input_tokens": reply.prompt_tokens - prefix,
                "output_tokens": tokens(json.dumps(content)),
                "cache_read_input_tokens": prefix if reply.prefix_seen else 0,
                "cache_creation_input_tokens": 0 if reply.prefix_seen else prefix,
            },
        }
        return JSONResponse(body, headers={"request-id": f"req_{reply.ident}"})
