"""Which endpoint a base URL names (no SDK imports: decoding parameters read it too)."""

from __future__ import annotations

from urllib.parse import urlsplit


def is_openai(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own API (unset, api.openai.com or Azure OpenAI), not another engine."""
    if not base_url:
        return True
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith((".openai.com", ".openai.azure.com"))
