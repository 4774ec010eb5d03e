"""Decoding parameters per provider: exactly what each backend sends, since all of it is in the cache key."""

from __future__ import annotations

from pcfjudge.backends.hosts import is_openai
from pcfjudge.settings import ProviderSettings
from pcfjudge.types import DecodingParams

# Effort levels Anthropic's ``output_config.effort`` accepts; OpenAI's "none"/"minimal" have no Anthropic twin.
ANTHROPIC_EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})


def decoding_params(settings: ProviderSettings, provider: str) -> DecodingParams:
    """OpenAI (and sim): temperature unless a reasoning effort is set for OpenAI itself (its reasoning models refuse
    temperature; other engines get both, or Ollama would sample at its default 1.0). Anthropic: no temperature (the
    SDK no longer has the parameter); effort only when Anthropic accepts it."""
    effort = settings.reasoning_effort
    if provider == "anthropic":
        return DecodingParams(
            temperature=None,
            max_output_tokens=settings.max_output_tokens,
            reasoning_effort=effort if effort in ANTHROPIC_EFFORTS else None,
        )
    return DecodingParams(
        temperature=settings.temperature if effort is None or not is_openai(settings.openai_base_url) else None,
        max_output_tokens=settings.max_output_tokens,
        reasoning_effort=effort,
    )
