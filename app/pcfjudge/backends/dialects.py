"""Structured-output dialects of OpenAI-compatible engines, and the safe automatic choice among them.

Every engine that serves Chat Completions constrains the answer to a JSON schema, but each spells the request its
own way (docs "Local open-weight judges"; each shape below was read in the engine's own source):

    json_schema         response_format {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}
                        OpenAI, vLLM, SGLang, llama.cpp's llama-server, Ollama's /v1 endpoint
    json_object_schema  response_format {"type": "json_object", "schema": …}    llama-cpp-python's server (and
                        llama-server, which takes both)
    structured_outputs  extra body {"structured_outputs": {"json": …}}           vLLM ≥ 0.10.2
    guided_json         extra body {"guided_json": …}                            vLLM before 0.12 (removed there)
    ollama_format       extra body {"format": …}                                 Ollama's native field, for proxies
                        that pass it on (its /v1 endpoint reads json_schema and ignores this)
    tgi_json            response_format {"type": "json", "value": …}             text-generation-inference
    json_object         response_format {"type": "json_object"}                  JSON mode, no schema
    prompt              nothing: the prompt's own answer template only

``auto`` (the default) starts with ``json_schema`` and, when the engine refuses the format (vLLM, SGLang and
llama-server: 400; TGI: 422; llama-cpp-python 0.3: a 500 naming ``response_format``), tries the next dialect of
``AUTO_CHAIN`` at once, then keeps the first one the engine accepts for the life of the process (``Dialects``).
Only dialects an engine refuses loudly are in the chain, never an extra body field it would ignore silently
(vLLM and Ollama accept unknown fields): those are chosen by setting ``PCFJ_OPENAI_OUTPUT_MODE``.
"""

from __future__ import annotations

import copy
from typing import Any

from pcfjudge.types import Dialect, OutputMode

__all__ = ["AUTO_CHAIN", "Dialect", "Dialects", "OutputMode", "format_fields", "refuses_format"]

AUTO_CHAIN: tuple[Dialect, ...] = ("json_schema", "json_object_schema", "tgi_json", "json_object", "prompt")
"""What ``auto`` tries, in order, each time the engine refuses the previous one's format."""

_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema", "unknown variant", "grammar", "format")


def format_fields(dialect: Dialect, name: str, schema: dict[str, Any], *, openai: bool = False) -> dict[str, Any]:
    """The request fields that ask ``dialect``'s engine for an answer matching ``schema``. ``openai``: the real
    OpenAI API, whose strict mode refuses ``maxLength`` (its outputs need no such bound), so it is dropped."""
    if dialect == "json_schema":
        sent = without_max_length(schema) if openai else schema
        return {
            "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": sent, "strict": True}}
        }
    if dialect == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if dialect == "structured_outputs":
        return {"structured_outputs": {"json": schema}}
    if dialect == "guided_json":
        return {"guided_json": schema}
    if dialect == "ollama_format":
        return {"format": schema}
    if dialect == "tgi_json":
        return {"response_format": {"type": "json", "value": schema}}
    if dialect == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def without_max_length(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``maxLength`` removed (a copy)."""
    out = copy.deepcopy(schema)
    stack: list[Any] = [out]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            node.pop("maxLength", None)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def refuses_format(status: int, message: str) -> bool:
    """Whether an engine's error is about the structured-output request (so another dialect may work), as the
    engines word it: pydantic's and serde's validation errors name the field or the unknown variant. A 400 or 422
    as most send it; a 500 naming ``response_format`` as llama-cpp-python 0.3 sends its validation errors."""
    text = message.lower()
    if status == 500:
        return "response_format" in text
    return status in (400, 422) and any(word in text for word in _FORMAT_WORDS)


class Dialects:
    """The dialect one backend sends: pinned by the setting, or learned once under ``auto``."""

    def __init__(self, mode: OutputMode) -> None:
        self.mode = mode
        self._chain: tuple[Dialect, ...] = AUTO_CHAIN if mode == "auto" else (mode,)
        self._at = 0
        self.learned = mode != "auto"  # True once the engine has accepted a dialect (or the setting pinned one)

    @property
    def current(self) -> Dialect:
        return self._chain[self._at]

    def refused(self, dialect: Dialect) -> bool:
        """The engine refused ``dialect``'s format: True to send the call again in ``current``. False when that
        cannot help: the dialect was pinned or already accepted (the refusal is about something else), or the
        chain is exhausted. Each call moves along the chain at most once per dialect, so retries are bounded."""
        if dialect != self.current:  # another call moved on meanwhile
            return True
        if self.learned or self._at + 1 >= len(self._chain):
            return False
        self._at += 1
        return True

    def accepted(self, dialect: Dialect) -> None:
        if dialect == self.current:
            self.learned = True
