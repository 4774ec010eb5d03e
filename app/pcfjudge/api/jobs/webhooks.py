"""Job webhooks (docs/api/jobs.md#webhooks): where one may point, how it is signed, how it is delivered.

* ``check_url``: http(s) only, and not this service itself: not the host and port the submitting request was sent to
  (its Host header), nor this replica's own port on its own address, a loopback name or address (``localhost``,
  127.0.0.0/8, ::1) or the unspecified address. Webhooks are off (422) unless ``PCFJ_WEBHOOK_SECRET`` is set.
* ``signature``: ``X-Pcfjudge-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`` (Stripe's
  scheme): the receiver recomputes it over the raw body and rejects a stale ``t`` (replays).
* ``deliver``: POST the final job JSON, at most ``ATTEMPTS`` times (waits ``WAITS``, ``TIMEOUT_S`` per try, no
  redirects followed); any 2xx is delivered. The secret and the URL's credentials or path are never logged.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import logging
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr

from pcfjudge._version import __version__
from pcfjudge.errors import client_error

log = logging.getLogger("pcfjudge.jobs")
SIGNATURE_HEADER = "X-Pcfjudge-Signature"
JOB_HEADER = "X-Pcfjudge-Job"
ATTEMPTS = 4
WAITS = (1.0, 5.0, 25.0)  # before the 2nd, 3rd and 4th try
TIMEOUT_S = 10.0


def signature(secret: str, body: bytes, timestamp: int) -> str:
    """The ``X-Pcfjudge-Signature`` value for ``body`` sent at ``timestamp`` (unix seconds)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def _host_port(netloc: str, default: int) -> tuple[str, int]:
    """(host, port) of a Host header's value."""
    parts = urlsplit(f"//{netloc}")
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.hostname or "").lower().rstrip("."), port or default


def _local(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def points_at_self(url: str, request_host: str | None, scheme: str, server: tuple[str, int | None] | None) -> bool:
    """Whether ``url`` would reach this service (see the module docstring)."""
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    host, port = (parts.hostname or "").lower().rstrip("."), parts.port or default
    own_default = 443 if scheme == "https" else 80
    if request_host and (host, port) == _host_port(request_host, own_default):
        return True
    if server is not None:
        own_host, own_port = str(server[0]).lower(), server[1] or own_default
        return port == own_port and (host == own_host or _local(host))
    return False


def check_url(
    url: str | None,
    secret: SecretStr | None,
    *,
    request_host: str | None,
    scheme: str,
    server: tuple[str, int | None] | None,
    field: str,
) -> None:
    """Refuse (422 naming ``field``) a webhook this service will not call."""
    if url is None:
        return
    if secret is None:
        raise client_error(field, "webhooks are off on this server (PCFJ_WEBHOOK_SECRET is unset); poll the job")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):
        raise client_error(field, "not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise client_error(field, "must be an http:// or https:// URL with a host")
    if points_at_self(url, request_host, scheme, server):
        raise client_error(field, "points at this service itself; give a receiver of your own")


def where(url: str) -> str:
    """The URL without credentials, path or query: what a log line may show."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"


def outcome(url: str) -> dict[str, Any]:
    """A delivery not yet made, as ``Job.webhook`` shows it."""
    return {"url": url, "delivered": False, "attempts": 0, "status": None, "error": None}


async def deliver(
    client: httpx.AsyncClient, url: str, body: bytes, secret: SecretStr, job_id: str, outcome: dict[str, Any]
) -> dict[str, Any]:
    """POST ``body`` to ``url`` until a 2xx or ``ATTEMPTS`` tries, keeping ``outcome`` (``outcome()``) up to date."""
    for attempt in range(ATTEMPTS):
        if attempt:
            await asyncio.sleep(WAITS[min(attempt, len(WAITS)) - 1])
        outcome["attempts"] = attempt + 1
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"pcfjudge/{__version__}",
            SIGNATURE_HEADER: signature(secret.get_secret_value(), body, int(time.time())),
            JOB_HEADER: job_id,
        }
        try:
            answer = await client.post(url, content=body, headers=headers, timeout=TIMEOUT_S, follow_redirects=False)
        except httpx.HTTPError as exc:
            outcome["status"], outcome["error"] = None, f"{type(exc).__name__}: could not deliver"
        else:
            outcome["status"] = answer.status_code
            if answer.is_success:
                outcome["delivered"], outcome["error"] = True, None
                return outcome
            outcome["error"] = f"the receiver answered {answer.status_code}"
        log.info("webhook of job %s to %s, try %d: %s", job_id, where(url), attempt + 1, outcome["error"])
    return outcome
