"""Build a ``redis.asyncio`` client from ``PCFJ_REDIS_URL``: single node, Cluster or Sentinel; warm its pool.

    redis://[user:pass@]host:6379/0            one server (``rediss://`` for TLS, ``unix:///path.sock`` too)
    redis+cluster://[user:pass@]h1:7000,h2:7001    Redis Cluster, any reachable nodes as seeds (``rediss+cluster``)
    redis+sentinel://[user:pass@]s1:26379,s2:26379/mymaster[/db]    the master of a Sentinel-managed service
                                               (``rediss+sentinel``; ``?sentinel_password=`` if Sentinel has its own)

Query parameters of redis-py's ``from_url`` (``ssl_cert_reqs``, ``ssl_ca_certs``, ``client_name`` …) pass through.
Every client gets short socket timeouts and exactly one client retry, on a connection error only: a pooled
connection that went stale when Redis restarted is replaced at once instead of failing the operation (and pooled
connections idle for ``HEALTH_CHECK_S`` are pinged before use). Timeouts are not retried by the client: the cache
retries them within a budget and the request deadline, and its circuit breaker decides when to stop trying
(``redis_link``). A single node's pool holds ``max_connections`` and, when all are busy, waits up to
``pool_timeout_s`` for one instead of failing. ``warm_up`` opens pooled connections ahead of the first requests.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from redis.asyncio import BlockingConnectionPool, Redis, RedisCluster, Sentinel
from redis.asyncio.cluster import ClusterNode
from redis.asyncio.connection import SSLConnection, parse_url
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

RedisClient = Redis | RedisCluster
HEALTH_CHECK_S = 5
SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel")


def reconnect_once() -> Retry:
    """One immediate retry on a broken connection (stale after a restart); timeouts are not retried."""
    return Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))


def connect(
    url: str,
    *,
    timeout_s: float,
    connect_timeout_s: float,
    max_connections: int = 64,
    pool_timeout_s: float = 0.5,
) -> RedisClient:
    """A client for ``url`` (see the module docstring); raises ``ValueError`` naming the fix for a bad URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError(f"PCFJ_REDIS_URL scheme {scheme!r} is not supported; use one of: {', '.join(SCHEMES)}")
    timeouts: dict[str, Any] = {
        "socket_timeout": timeout_s,
        "socket_connect_timeout": connect_timeout_s,
        "retry": reconnect_once(),
        "health_check_interval": HEALTH_CHECK_S,
        # no CLIENT SETINFO on connect: Redis 7.0 does not know it, and its error could surface in place of a
        # cancellation (issue 49); the library name is of no use to an operator
        "driver_info": None,
    }
    if scheme in ("redis", "rediss", "unix"):
        pool = BlockingConnectionPool.from_url(url, max_connections=max_connections, timeout=pool_timeout_s, **timeouts)
        single = Redis(connection_pool=pool)
        single.auto_close_connection_pool = True  # aclose() closes the pool we made
        return single
    base, _, topology = scheme.partition("+")
    userinfo, at, hostlist = parts.netloc.rpartition("@")
    hosts = _hosts(hostlist, 26379 if topology == "sentinel" else 6379)
    query = parse_qs(parts.query)
    sentinel_password = query.pop("sentinel_password", [None])[0]
    # Let redis-py read credentials, TLS and query options from the URL rewritten to its plain form.
    plain = urlunsplit((base, userinfo + at + hostlist.split(",")[0], "", urlencode(query, doseq=True), ""))
    options: dict[str, Any] = dict(parse_url(plain))
    options.pop("host", None), options.pop("port", None)
    ssl = options.pop("connection_class", None) is SSLConnection
    if topology == "cluster":
        if parts.path.strip("/"):
            raise ValueError("PCFJ_REDIS_URL: Redis Cluster has no databases; drop the path from the URL")
        nodes = [ClusterNode(host, port) for host, port in hosts]
        return RedisCluster(startup_nodes=nodes, ssl=ssl, max_connections=max_connections, **options, **timeouts)
    service, _, db = parts.path.strip("/").partition("/")
    if not service:
        raise ValueError("PCFJ_REDIS_URL: name the Sentinel service, e.g. redis+sentinel://host:26379/mymaster")
    if db:
        options["db"] = int(db)
    sentinel_kwargs: dict[str, Any] = dict(timeouts)
    if sentinel_password:
        sentinel_kwargs["password"] = sentinel_password
    sentinel = Sentinel(hosts, sentinel_kwargs=sentinel_kwargs, ssl=ssl, **options, **timeouts)  # type: ignore[no-untyped-call]
    client: Redis = sentinel.master_for(service)
    return client


async def warm_up(client: RedisClient, connections: int) -> None:
    """Open ``connections`` pooled connections (connected, handshaken, each answering PING) and leave them in the
    pool; a Cluster learns its slots and is pinged. Raises what the client raises while Redis does not answer."""
    if isinstance(client, RedisCluster):
        await client.initialize()
        await client.ping()
        return
    pool = client.connection_pool
    held: list[Any] = []
    try:
        for _ in range(max(1, min(connections, pool.max_connections))):
            connection = await pool.get_connection()  # type: ignore[no-untyped-call]
            held.append(connection)
            await connection.send_command("PING")
            await connection.read_response()
    finally:
        for connection in held:
            await pool.release(connection)


async def close(client: RedisClient) -> None:
    """Close the client's pool and, behind a Sentinel URL, the connections to the sentinels as well."""
    await client.aclose()
    manager = getattr(getattr(client, "connection_pool", None), "sentinel_manager", None)
    for sentinel in getattr(manager, "sentinels", ()):
        await sentinel.aclose()


def _hosts(netloc: str, default_port: int) -> list[tuple[str, int]]:
    out = []
    for part in netloc.split(","):
        host, sep, port = part.rpartition(":") if not part.endswith("]") else (part, "", "")
        if not sep:
            host, port = part, str(default_port)
        host = host.strip("[]")
        if not host or not port.isdigit():
            raise ValueError(f"PCFJ_REDIS_URL: cannot read host:port from {part!r}")
        out.append((host, int(port)))
    return out
