"""One Redis client behind a circuit breaker: every operation of the shared cache, the quotas and the job store.

``run(op)`` is refused at once while the breaker is open; otherwise each try is bounded by the socket timeouts (and
an overall ``asyncio.timeout`` as a backstop). ``retried(op, deadline)``, for idempotent operations only (reads,
writes of a whole value, the token-guarded lock scripts; the quota's token take and the job store's scripts try
once), tries again after a transient error (a timeout, a refused or broken connection) up to ``retries`` times, after
a short jittered backoff (10 ms doubling to 200 ms), never past the request's deadline. The tries are counted, not
timed: a busy event loop that stalls past a timeout (the loop, not Redis, was late) must not also use up the time a
retry had. The breaker hears each operation's final outcome, so a transient error that a retry got past is not a
failure (``breaker``).

Ready means connected: ``start(warm)`` opens ``warm`` pooled connections (each connected, handshaken and checked)
before the replica reports ready, retrying in the background until Redis answers (``connected``; ``/readyz`` is
503 until then), so neither a balancer's first burst nor the replica's own first requests pay for connecting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.exceptions import AuthenticationError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from pcfjudge.cache.breaker import CircuitBreaker
from pcfjudge.cache.redis_client import RedisClient, close, warm_up

log = logging.getLogger(__name__)
T = TypeVar("T")
BACKOFF_S = (0.01, 0.2)  # retry backoff: first, most
CONNECT_BACKOFF_S = (0.1, 2.0)  # background connection attempts while Redis does not answer: first, most


class RedisUnavailable(Exception):
    """Redis failed, timed out, or the breaker is open: the caller treats it as a miss / skips the write."""


def transient(exc: BaseException) -> bool:
    """An error another try may not meet: a timeout, a refused, reset or broken connection (not a wrong password)."""
    if isinstance(exc, AuthenticationError):
        return False
    return isinstance(exc, RedisConnectionError | RedisTimeoutError | TimeoutError | OSError)


class RedisLink:
    """The client, its breaker and what they did: ``attempts`` (tries sent), ``failures`` (tries that failed),
    ``retries``, ``skipped`` (refused by the open breaker), ``last_error``; ``connected`` once Redis answered."""

    def __init__(self, client: RedisClient, breaker: CircuitBreaker, *, op_timeout_s: float, retries: int) -> None:
        self.client = client
        self.breaker = breaker
        self.op_timeout_s = op_timeout_s
        self.max_retries = retries
        self.attempts = 0
        self.failures = 0
        self.retries = 0
        self.skipped = 0
        self.last_error: str | None = None
        self.connected = False
        self._connecting: asyncio.Task[None] | None = None

    async def run(self, op: Callable[[RedisClient], Awaitable[T]]) -> T:
        """One try of ``op``."""
        return await self._run(op, 0, None)

    async def retried(self, op: Callable[[RedisClient], Awaitable[T]], deadline: float | None = None) -> T:
        """``op``, tried again after a transient error up to ``retries`` times, never past ``deadline`` (a
        ``loop.time()`` instant): for idempotent ``op`` only."""
        return await self._run(op, self.max_retries, deadline)

    async def _run(self, op: Callable[[RedisClient], Awaitable[T]], retries: int, deadline: float | None) -> T:
        if not self.breaker.allow():
            self.skipped += 1
            raise RedisUnavailable("circuit breaker open")
        probe = self.breaker.state == "half_open"
        try:
            result = await self._tries(op, 0 if probe else retries, deadline)
        except RedisUnavailable:
            self.breaker.failure()
            raise
        except BaseException:
            if probe:
                self.breaker.abandon()  # cancelled mid-probe: no verdict either way
            raise
        self.breaker.success()
        self.connected = True
        return result

    async def _tries(self, op: Callable[[RedisClient], Awaitable[T]], retries: int, deadline: float | None) -> T:
        loop = asyncio.get_running_loop()
        delay = BACKOFF_S[0]
        for tried in range(retries + 1):
            self.attempts += 1
            try:
                async with asyncio.timeout(self.op_timeout_s):
                    return await op(self.client)
            except Exception as exc:  # a cache never fails a request: anything Redis or the client raises fails open
                self.failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                expected = isinstance(exc, RedisError | OSError | TimeoutError)
                log.log(logging.DEBUG if expected else logging.WARNING, "redis operation failed: %s", self.last_error)
                pause = delay * random.uniform(0.5, 1.0)
                late = deadline is not None and loop.time() + pause >= deadline
                if tried == retries or late or not transient(exc):
                    raise RedisUnavailable(self.last_error) from exc
            if self.breaker.state != "closed":  # others found Redis down meanwhile: stop here
                raise RedisUnavailable(self.last_error or "circuit breaker open")
            self.retries += 1
            await asyncio.sleep(pause)
            delay = min(delay * 2, BACKOFF_S[1])
        raise AssertionError("unreachable: the last try returns or raises")

    async def start(self, warm: int) -> None:
        """Connect in the background until Redis answers (opening ``warm`` pooled connections); returns once the
        first attempt ended, so a replica whose Redis is up is connected before it serves."""
        first = asyncio.Event()
        self._connecting = asyncio.create_task(self._connect(warm, first), name="redis-connect")
        await first.wait()

    async def _connect(self, warm: int, first: asyncio.Event) -> None:
        delay = CONNECT_BACKOFF_S[0]
        try:
            while True:
                try:
                    async with asyncio.timeout(self.op_timeout_s * max(1, warm)):
                        await warm_up(self.client, warm)
                except Exception as exc:  # anything the client raises: not connected yet, tried again
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    if not first.is_set():
                        log.warning("redis not answering yet (%s); not ready until it does", self.last_error)
                else:
                    self.connected = True
                    return
                finally:
                    first.set()
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, CONNECT_BACKOFF_S[1])
        finally:
            first.set()

    async def aclose(self) -> None:
        if self._connecting is not None:
            self._connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._connecting
        await close(self.client)
