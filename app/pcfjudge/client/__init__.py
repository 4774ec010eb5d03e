"""Clients for a running pcfjudge service (httpx and pydantic only: no FastAPI, Redis or provider SDK).

``Client`` / ``AsyncClient`` (typed calls, ``pcfjudge.client.typed``) over ``pcfjudge.client.http`` (JSON POST with
retries on 429/503 and dropped connections, honouring Retry-After; ``ServiceError`` carrying the server's JSON).
"""

from typing import TYPE_CHECKING, Any

from pcfjudge.client.http import RetryPolicy, ServiceError

if TYPE_CHECKING:
    from pcfjudge.client.events import StreamEvent
    from pcfjudge.client.typed import AsyncClient, Client

__all__ = ["AsyncClient", "Client", "RetryPolicy", "ServiceError", "StreamEvent"]


def __getattr__(name: str) -> Any:
    """``Client`` / ``AsyncClient`` (pydantic models) on first use: ``pcfjudge.client.http`` alone, as the trainer
    integrations use it, loads only httpx and the standard library."""
    if name in ("AsyncClient", "Client"):
        from pcfjudge.client import typed  # on first use (http alone: no pydantic)

        return getattr(typed, name)
    if name == "StreamEvent":
        from pcfjudge.client import events  # on first use (http alone: no pydantic)

        return events.StreamEvent
    raise AttributeError(f"module 'pcfjudge.client' has no attribute {name!r}")
