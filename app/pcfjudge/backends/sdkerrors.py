"""Shared by the SDK backends: turn a provider's HTTP failure into our typed ``BackendError``, keys scrubbed.

    429                       → RateLimited (retry_after from ``retry-after-ms`` / ``retry-after``)
    503, 529 (overloaded)     → RateLimited (the provider asks us to back off)
    408                       → BackendTimeout
    other 5xx                 → ProviderError (retryable)
    401, 403                  → ProviderError naming the key variable, not retried, provider text dropped
    other 4xx                 → ProviderError with the provider's message, not retried (retrying cannot help)

Every detail passes through ``scrub``: the configured key and anything shaped like an API key are masked, so a
provider that echoes the key (OpenAI's "Incorrect API key provided: sk-…") cannot leak it into responses or logs.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from pcfjudge.backends.base import BackendError, BackendTimeout, ProviderError, RateLimited

_KEYLIKE = re.compile(r"\b(?:sk|pk|rk|key|sess)-[A-Za-z0-9_\-*.]{6,}")
_MAX_DETAIL = 300


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret and every key-shaped token replaced by ``***``, cut to a readable length."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = _KEYLIKE.sub("***", text)
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds the provider asked us to wait: ``retry-after-ms``, else ``retry-after`` (seconds or an HTTP date)."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    value = headers.get("retry-after")
    if value:
        parsed = email.utils.parsedate_tz(value)
        if parsed is not None:
            return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


def status_error(
    provider: str,
    status: int,
    message: str,
    headers: Mapping[str, str],
    *,
    key_env: str,
    secrets: Iterable[str] = (),
) -> BackendError:
    """The typed error for an HTTP error status from ``provider`` (see the module docstring for the mapping)."""
    said = scrub(message, secrets)
    if status == 429:
        return RateLimited(f"{provider} rate limit (429): {said}", retry_after=retry_after_seconds(headers))
    if status in (503, 529):
        return RateLimited(f"{provider} overloaded ({status}): {said}", retry_after=retry_after_seconds(headers))
    if status == 408:
        return BackendTimeout(f"{provider} request timeout (408): {said}")
    if status >= 500:
        return ProviderError(f"{provider} server error ({status}): {said}", status_code=status)
    if status in (401, 403):
        return ProviderError(
            f"{provider} rejected the credentials ({status}); check {key_env} on the server", retryable=False
        )
    return ProviderError(f"{provider} refused the request ({status}): {said}", retryable=False, status_code=status)


def public_url(url: str) -> str:
    """``url`` without credentials, query string or fragment (any may hold a key), safe for /readyz and errors."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
