"""Clients for a running pcfjudge service (httpx and pydantic only: no FastAPI, Redis or provider SDK).

``Client`` / ``AsyncClient`` (typed calls, ``pcfjudge.client.typed``) over ``pcfjudge.client.http`` (JSON POST with
retries on 429/503 and dropped connections, honouring Retry-After; ``ServiceError`` carrying the server's JSON).
"""

from pcfjudge.client.http import RetryPolicy, ServiceError
from pcfjudge.client.typed import AsyncClient, Client

__all__ = ["AsyncClient", "Client", "RetryPolicy", "ServiceError"]
