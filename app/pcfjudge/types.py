"""Plain types and constants shared by every layer (judging, backends, cache, API, eval).

A leaf module: it imports nothing of ours, so any module may import it without creating a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MAX_K = 64
"""The most permutations (runs) one execution may have, for schedules and explicit permutation lists alike."""

SAMPLE_STRIDE = MAX_K
"""Executions are ``SAMPLE_STRIDE`` sample indices apart, so run indices (< MAX_K) never cross into the next one."""

LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""Displayed candidate labels by position (the prompt's A, B, …); at most 26 candidates."""

CallKind = Literal["listwise", "pairwise", "keyed", "chat"]
Priority = Literal["interactive", "stream", "background"]
"""The class of work a call serves: call slots and a fleet's rate budget go to the highest first."""
PRIORITIES: tuple[Priority, ...] = ("interactive", "stream", "background")
"""``chat``: a caller's own chat messages, sent as they are (the chat door, ``POST /v1/chat/completions``)."""
Dialect = Literal[
    "json_schema",
    "json_object_schema",
    "structured_outputs",
    "guided_json",
    "ollama_format",
    "tgi_json",
    "json_object",
    "prompt",
]
"""Structured-output dialects of OpenAI-compatible engines (``pcfjudge.backends.dialects``)."""
OutputMode = Literal["auto", Dialect]
"""``auto`` (learn the dialect from the engine) or one dialect pinned: ``PCFJ_OPENAI_OUTPUT_MODE``."""
CacheMode = Literal["use", "refresh", "bypass"]

Failure = Literal["backend_error", "backend_overloaded", "backend_timeout"]
"""What a failed backend call (and a judgment that failed with it) was: the backend erred (or answered what could not
be used), it was overloaded or rate limited, or it ran out of time. The HTTP edge's table gives each its status."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of backend calls; ``cached_tokens`` counts prompt tokens served from a provider cache."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
        }

    @classmethod
    def from_dict(cls, data: object) -> Usage:
        """From ``as_dict()`` output or a response's per-run token fields; missing or null counts are 0."""
        get = data.get if isinstance(data, dict) else (lambda _key: None)
        return cls(*(int(get(key) or 0) for key in ("input_tokens", "output_tokens", "cached_tokens")))

    def cost_usd(self, price: tuple[float, float] | None) -> float | None:
        """Cost at ``price`` = USD per million (input, output) tokens; None when the price is unknown."""
        if price is None:
            return None
        return round(usd(self.input_tokens, self.output_tokens, price), 6)


def usd(input_tokens: int, output_tokens: int, price: tuple[float, float]) -> float:
    """USD for token counts at ``price`` = USD per million (input, output) tokens (unrounded)."""
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


@dataclass(frozen=True, slots=True)
class DecodingParams:
    """Decoding parameters; all of them are part of the cache key."""

    temperature: float | None = 0.0
    max_output_tokens: int = 2048
    reasoning_effort: str | None = None

    def key(self) -> str:
        return f"t={self.temperature}|max={self.max_output_tokens}|re={self.reasoning_effort}"
