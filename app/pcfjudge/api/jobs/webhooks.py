"""Job webhooks (docs/api/jobs.md#webhooks): where one may point, how it is signed, how it is delivered.

* ``check_url``: http(s) only, not this service itself (the host and port the submitting request was sent to, or this
  replica's own port on its own address or a loopback one), and not an address webhooks may not reach: loopback,
  private, link-local, multicast, reserved or unspecified, in any form (``webhook_address``), unless the operator
  allows it (``PCFJ_WEBHOOK_ALLOW``). Webhooks are off (422) unless ``PCFJ_WEBHOOK_SECRET`` is set.
* ``signature``: ``X-Pcfjudge-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`` (Stripe's
  scheme): the receiver recomputes it over the raw body and rejects a stale ``t`` (replays).
* ``deliver``: POST the final job JSON, at most ``ATTEMPTS`` times (waits ``WAITS``, ``TIMEOUT_S`` per try, no
  redirects followed); any 2xx is delivered. Each try resolves the host again, checks every address, and connects to
  the address it checked (the Host header and TLS name stay the URL's), so DNS rebinding cannot reach inside. A
  failure says only its class (the receiver answered 4xx or 5xx, or gave no answer): never what answered, so
  webhooks are no port scanner. One API key's tries hold at most ``PER_KEY`` connections at once (its ``slot``),
  so a key whose receiver never answers delays only its own webhooks. The secret and the URL's credentials or path
  are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr

from pcfjudge._version import __version__
from pcfjudge.api.jobs import webhook_address
from pcfjudge.api.jobs.webhook_address import Policy, Refused
from pcfjudge.errors import client_error

log = logging.getLogger("pcfjudge.jobs")
SIGNATURE_HEADER = "X-Pcfjudge-Signature"
JOB_HEADER = "X-Pcfjudge-Job"
ATTEMPTS = 4
WAITS = (1.0, 5.0, 25.0)  # before the 2nd, 3rd and 4th try
TIMEOUT_S = 5.0
PER_KEY = 4
"""Connections one API key's webhook tries may hold at once (per process)."""
NO_ANSWER = "delivery failed: no answer (the receiver could not be reached, did not answer in time, or not in HTTP)"


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
    address = webhook_address.literal(host)
    return address is not None and (address.is_loopback or address.is_unspecified)


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


async def check_url(
    url: str | None,
    secret: SecretStr | None,
    *,
    request_host: str | None,
    scheme: str,
    server: tuple[str, int | None] | None,
    field: str,
    policy: Policy | None = None,
) -> None:
    """Refuse (422 naming ``field``) a webhook this service will not call. A host name is resolved now as well (a
    name that does not resolve yet is left to the delivery, which checks again)."""
    if url is None:
        return
    if secret is None:
        raise client_error(field, "webhooks are off on this server (PCFJ_WEBHOOK_SECRET is unset); poll the job")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):
        raise client_error(field, "not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise client_error(field, "must be an http:// or https:// URL with a host")
    if points_at_self(url, request_host, scheme, server):
        raise client_error(field, "points at this service itself; give a receiver of your own")
    try:
        await webhook_address.resolve(parts.hostname, port, policy or Policy())
    except Refused as exc:
        raise client_error(field, refused(exc)) from None
    except (OSError, TimeoutError, UnicodeError):
        return


def refused(exc: Refused) -> str:
    return (
        f"its host is an address webhooks may not reach ({exc}); give a public receiver (the operator may allow a "
        "network or host: PCFJ_WEBHOOK_ALLOW)"
    )


def where(url: str) -> str:
    """The URL without credentials, path or query: what a log line may show."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"


def outcome(url: str) -> dict[str, Any]:
    """A delivery not yet made, as ``Job.webhook`` shows it."""
    return {"url": url, "delivered": False, "attempts": 0, "status": None, "error": None}


async def deliver(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    secret: SecretStr,
    job_id: str,
    outcome: dict[str, Any],
    *,
    policy: Policy | None = None,
    slot: asyncio.Semaphore | None = None,
) -> dict[str, Any]:
    """POST ``body`` to ``url`` until a 2xx or ``ATTEMPTS`` tries, keeping ``outcome`` (``outcome()``) up to date;
    each try within ``slot`` (the owner's connections) and to an address checked against ``policy``."""
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
            async with slot or contextlib.nullcontext():
                status = await _try(client, url, body, headers, policy or Policy())
        except Refused as exc:
            outcome["status"], outcome["error"] = None, f"delivery refused: {refused(exc)}"
            log.info("webhook of job %s to %s refused: an address webhooks may not reach (%s)", job_id, where(url), exc)
            return outcome  # not tried again: the URL points inside
        if status is not None and 200 <= status < 300:
            outcome["status"], outcome["delivered"], outcome["error"] = status, True, None
            return outcome
        outcome["status"] = None
        outcome["error"] = NO_ANSWER if status is None else f"delivery failed: the receiver answered {status // 100}xx"
        log.info("webhook of job %s to %s, try %d: %s", job_id, where(url), attempt + 1, outcome["error"])
    return outcome


async def _try(client: httpx.AsyncClient, url: str, body: bytes, headers: dict[str, str], policy: Policy) -> int | None:
    """One POST: the receiver's status, or None (no answer). ``Refused`` if the host resolves inside."""
    target = httpx.URL(url)
    try:
        async with asyncio.timeout(TIMEOUT_S):
            where_to = await webhook_address.resolve(target.host, target.port or _default_port(target), policy)
            extensions: dict[str, Any] = {}
            if where_to.address is not None:  # connect to the address checked; Host and TLS name stay the URL's
                headers = {**headers, "Host": target.netloc.decode("ascii")}
                extensions = {"sni_hostname": target.host}
                target = target.copy_with(host=str(where_to.address))
            answer = await client.post(
                target, content=body, headers=headers, timeout=TIMEOUT_S, follow_redirects=False, extensions=extensions
            )
    except (httpx.HTTPError, OSError, TimeoutError, UnicodeError):
        return None
    return answer.status_code


def _default_port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80
