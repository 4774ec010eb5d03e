"""Build the real-provider backends the settings have keys for (SDKs imported only when needed)."""

from __future__ import annotations

from pcfjudge.backends.base import Backend
from pcfjudge.settings import Settings


def build_backends(settings: Settings) -> dict[str, Backend]:
    """``openai`` when ``OPENAI_API_KEY`` or ``PCFJ_OPENAI_BASE_URL`` (a local engine needs no key) is set,
    ``anthropic`` when ``ANTHROPIC_API_KEY`` is set, and one OpenAI-compatible backend per ``PCFJ_ENGINES`` entry."""
    backends: dict[str, Backend] = {}
    if settings.openai_api_key is not None or settings.openai_base_url:
        from pcfjudge.backends.openai_backend import build_openai

        openai_backend = build_openai(settings)
        if openai_backend is not None:
            backends["openai"] = openai_backend
    if settings.anthropic_api_key is not None:
        from pcfjudge.backends.anthropic_backend import build_anthropic

        anthropic_backend = build_anthropic(settings)
        if anthropic_backend is not None:
            backends["anthropic"] = anthropic_backend
    if settings.engines:
        from pcfjudge.backends.openai_backend import build_openai

        for name, url in settings.engines.items():
            engine = build_openai(settings, base_url=url)
            if engine is not None:
                backends[name] = engine
    return backends
