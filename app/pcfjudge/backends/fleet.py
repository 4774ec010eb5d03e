"""``fleet:<model_name>``: one judge model served by several endpoints (``PCFJ_MODELS_FILE``, LiteLLM's model_list).

Each call goes to one endpoint, chosen per attempt:

* **fewest outstanding calls** among the healthy endpoints, relative to each one's ``max_parallel_requests`` (ties
  taken in turn), counted in this process;
* **budget first** (``budget``): the endpoint's rpm, tpm and calls at once, in Redis for every replica with
  PCFJ_REDIS_URL. An endpoint out of budget is passed over; when every endpoint is, the call waits for the soonest
  budget within its deadline (``until``, the runner's), or is shed at once (``Shed``: 503 with Retry-After) before it
  spends anything. Waiting calls take budget highest class first, as call slots are given (``JudgeCall.priority``:
  the class of the work the call serves): while a call of a higher class waits for budget, a lower class's call takes
  none;
* **cooldown**: after ``allowed_fails`` consecutive failures (connection errors, 5xx, 429/503/529, timeouts) an
  endpoint is left alone for ``cooldown_s`` (PCFJ_FLEET_ALLOWED_FAILS, PCFJ_FLEET_COOLDOWN_S), then one call probes
  it: an answer brings it back, a failure cools it down again;
* **a retry goes elsewhere**: the runner's retry calls ``complete`` again in the same call task; the endpoint that
  failed last in it (``_LAST_FAILED``) goes to the back of the line, and a 429's ``retry-after`` blocks that endpoint
  (for every replica) instead of holding the retry back while another endpoint is free.

The model's cache key is the fleet's (``fleet:<model_name>``): an answer made on any endpoint serves every replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import os
import time
from collections.abc import Coroutine, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from pcfjudge.backends.base import (
    Backend,
    BackendError,
    BackendTimeout,
    Completion,
    JudgeCall,
    ProviderError,
    RateLimited,
)
from pcfjudge.backends.budget import Ask, Budget
from pcfjudge.backends.models_file import EndpointSpec, FleetSpec
from pcfjudge.backends.slots import PRIORITIES, Priority, Shed
from pcfjudge.telemetry import metrics

log = logging.getLogger(__name__)

_LAST_FAILED: ContextVar[str | None] = ContextVar("pcfj_fleet_last_failed", default=None)
CHARS_PER_TOKEN = 4  # the input estimate charged to tpm before a call (what it really spent is added after)
MAX_WAIT_STEP_S = 1.0  # a call waiting for budget looks again at least this often (other replicas spend it too)
_leases = itertools.count()


class Endpoint:
    """One endpoint of a fleet and what this process knows of it."""

    def __init__(self, fleet: str, spec: EndpointSpec, backend: Backend, capacity: int) -> None:
        self.fleet, self.spec, self.backend, self.capacity = fleet, spec, backend, capacity
        self.outstanding = 0
        self.failures = 0  # consecutive
        self.cooled = False
        self.cooled_until = 0.0
        self.blocked_until = 0.0  # a rate limit this process saw (the budget shares it with the other replicas)
        self.probing = False

    @property
    def id(self) -> str:
        return self.spec.id

    def open(self, now: float) -> bool:
        """Whether a call may go here now: healthy, or cooled down long enough to be probed (one call at a time)."""
        return not self.cooled or (now >= self.cooled_until and not self.probing)


class FleetBackend:
    provider = "fleet"

    def __init__(
        self,
        spec: FleetSpec,
        backends: Sequence[Backend],
        budget: Budget,
        *,
        capacity: int,
        allowed_fails: int = 3,
        cooldown_s: float = 30.0,
        max_block_s: float = 300.0,
    ) -> None:
        self.name = spec.name
        self.endpoints = [
            Endpoint(spec.name, e, b, e.max_parallel_requests or capacity)
            for e, b in zip(spec.endpoints, backends, strict=True)
        ]
        self.budget = budget
        self.allowed_fails, self.cooldown_s, self.max_block_s = allowed_fails, cooldown_s, max_block_s
        self._turn = 0
        self._replica = f"{os.getpid()}-{id(self):x}"
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiting: dict[Priority, int] = dict.fromkeys(PRIORITIES, 0)  # calls waiting for budget, per class
        self._left = asyncio.Event()  # set (and replaced) whenever a call stops waiting for budget
        for endpoint in self.endpoints:
            metrics.fleet_healthy(self.name, endpoint.id, True)
            wire = getattr(endpoint.backend, "wire", None)
            if wire is not None and hasattr(wire, "observe"):
                wire.observe = lambda headers, e=endpoint: self._headers(e, headers)

    @property
    def capacity(self) -> int:
        return sum(e.capacity for e in self.endpoints)

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        endpoint, lease = await self._admit(call, until)
        loop = asyncio.get_running_loop()
        endpoint.outstanding += 1
        metrics.fleet_outstanding(self.name, endpoint.id, 1)
        started = loop.time()
        outcome = "cancelled"
        try:
            completion = await endpoint.backend.complete(replace(call, model=endpoint.spec.model), until)
        except BackendError as exc:
            outcome = exc.kind
            self._failed(endpoint, exc, loop.time())
            exc.detail = f"fleet {self.name}, endpoint {endpoint.id}: {exc.detail}"  # by its id, never its address
            exc.args = (exc.detail,)
            raise
        else:
            outcome = "ok"
            self._answered(endpoint)
            spent = completion.usage.input_tokens + completion.usage.output_tokens - _estimate(call)
            if endpoint.spec.tpm and spent > 0:
                self._later(self.budget.spend(endpoint.id, spent))
            return completion
        finally:
            endpoint.outstanding -= 1
            if endpoint.probing and outcome == "cancelled":
                endpoint.probing = False  # no verdict: another call may probe
            metrics.fleet_outstanding(self.name, endpoint.id, -1)
            metrics.fleet_call(self.name, endpoint.id, outcome, loop.time() - started)
            if endpoint.spec.max_parallel_requests:
                self._later(self.budget.release(endpoint.id, lease))

    # ── choosing an endpoint ─────────────────────────────────────────────────────────────────────────────────

    def order(self, now: float) -> list[Endpoint]:
        """The endpoints a call may go to now, best first: fewest outstanding (relative to capacity), the endpoint
        that failed last in this call task last, ties in turn."""
        n = len(self.endpoints)
        avoid = _LAST_FAILED.get()
        turn = self._turn
        self._turn = (turn + 1) % n
        ranked = sorted(
            (e for e in self.endpoints if e.open(now)),
            key=lambda e: (e.id == avoid, e.outstanding / e.capacity, (self.endpoints.index(e) - turn) % n),
        )
        return ranked

    async def _admit(self, call: JudgeCall, deadline: float | None) -> tuple[Endpoint, str]:
        """An endpoint with budget for ``call`` (its lease taken), waiting for one until ``deadline``, behind the
        calls of higher classes waiting too."""
        loop = asyncio.get_running_loop()
        tokens = _estimate(call)
        lease = f"{self._replica}-{next(_leases)}"
        priority = call.priority
        above = PRIORITIES[: PRIORITIES.index(priority)]
        waited_from: float | None = None
        counted = False  # in ``_waiting`` (from its first wait for budget)
        try:
            while True:
                now = loop.time()
                left = (deadline - now) if deadline is not None else math.inf
                if any(self._waiting[p] for p in above):  # the budget that frees up is theirs first
                    waited_from = now if waited_from is None else waited_from
                    await self._behind(priority, left)
                    continue
                ttl = (left if deadline is not None else 600.0) + 5.0
                candidates = self.order(now)
                if not candidates:
                    soonest = min(e.cooled_until for e in self.endpoints) - now
                    raise ProviderError(
                        f"every endpoint of fleet {self.name} is cooling down after repeated failures",
                        retry_after=max(0.0, soonest),
                    )
                best: tuple[float, str, Endpoint] | None = None
                for endpoint in candidates:
                    spec = endpoint.spec
                    ask = Ask(endpoint.id, spec.rpm, spec.tpm, spec.max_parallel_requests, tokens, lease, ttl)
                    grant = await self.budget.take(ask)
                    if grant.ok:
                        if endpoint.cooled:
                            endpoint.probing = True
                        if waited_from is not None:
                            metrics.fleet_waited(self.name, loop.time() - waited_from)
                        return endpoint, lease
                    if best is None or grant.wait_s < best[0]:
                        best = (grant.wait_s, grant.reason, endpoint)
                assert best is not None
                wait, reason, endpoint = best
                left = (deadline - loop.time()) if deadline is not None else math.inf
                if wait >= left:
                    metrics.fleet_shed(self.name, reason)
                    detail = "never" if math.isinf(wait) else f"in {wait:.1f}s"
                    raise Shed(
                        f"fleet {self.name}: no endpoint has {reason} budget for this call before its deadline (the "
                        f"soonest: {detail}); retry later",
                        retry_after=wait if math.isfinite(wait) else 60.0,
                        retryable=False,
                    )
                metrics.fleet_wait(self.name, endpoint.id, reason)
                waited_from = loop.time() if waited_from is None else waited_from
                if not counted:
                    self._waiting[priority] += 1
                    counted = True
                await asyncio.sleep(min(wait, MAX_WAIT_STEP_S))
        finally:
            if counted:
                self._waiting[priority] -= 1
                self._left.set()  # the calls behind it look again
                self._left = asyncio.Event()

    async def _behind(self, priority: Priority, left: float) -> None:
        """Wait while calls of a higher class wait for budget (looking again at least every ``MAX_WAIT_STEP_S``:
        their wait may end in another way); ``Shed`` when the deadline passes first."""
        if left <= 0:
            metrics.fleet_shed(self.name, "priority")
            raise Shed(
                f"fleet {self.name}: calls of a higher class than {priority} took the budget until this call's "
                "deadline; retry later",
                retry_after=MAX_WAIT_STEP_S,
                retryable=False,
            )
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(left, MAX_WAIT_STEP_S)):
                await self._left.wait()

    # ── health ───────────────────────────────────────────────────────────────────────────────────────────────

    def _answered(self, endpoint: Endpoint) -> None:
        endpoint.failures = 0
        if endpoint.cooled:
            endpoint.cooled, endpoint.probing = False, False
            metrics.fleet_healthy(self.name, endpoint.id, True)
            log.info("fleet %s: endpoint %s answers again", self.name, endpoint.id)

    def _failed(self, endpoint: Endpoint, exc: BackendError, now: float) -> None:
        if not _endpoint_fault(exc):
            self._answered(endpoint)  # it answered (a refusal, a 4xx): the endpoint itself is fine
            return
        _LAST_FAILED.set(endpoint.id)
        endpoint.failures += 1
        if isinstance(exc, RateLimited) and exc.retry_after:
            self._block(endpoint, exc.retry_after, now)
        if endpoint.cooled and not endpoint.probing:
            pass  # a call sent before it cooled down: it is cooling down already
        elif endpoint.probing or endpoint.failures >= self.allowed_fails:
            endpoint.cooled, endpoint.probing, endpoint.failures = True, False, 0
            endpoint.cooled_until = now + self.cooldown_s
            metrics.fleet_cooldown(self.name, endpoint.id)
            log.warning(
                "fleet %s: endpoint %s cooled down for %.0fs after repeated failures (%s)",
                self.name,
                endpoint.id,
                self.cooldown_s,
                exc.kind,
            )
        if any(e.open(now) for e in self.endpoints if e is not endpoint):
            exc.retry_after = None  # another endpoint can take the retry now; this one's wait is its own (blocked)

    def _headers(self, endpoint: Endpoint, headers: Mapping[str, str]) -> None:
        """A response said the endpoint's requests or tokens are spent: blocked until they reset."""
        for kind in ("requests", "tokens"):
            if headers.get(f"x-ratelimit-remaining-{kind}") == "0":
                seconds = reset_seconds(headers.get(f"x-ratelimit-reset-{kind}"))
                self._block(endpoint, seconds, asyncio.get_running_loop().time())

    def _block(self, endpoint: Endpoint, seconds: float, now: float) -> None:
        """Block the endpoint (on every replica, through the budget) for what it asked, at most ``max_block_s``
        (PCFJ_FLEET_MAX_BLOCK_S): one ``Retry-After: 3600`` does not take it away for an hour."""
        seconds = min(seconds, self.max_block_s)
        endpoint.blocked_until = max(endpoint.blocked_until, now + seconds)
        metrics.fleet_blocked(self.name, endpoint.id, time.time() + endpoint.blocked_until - now)
        self._later(self.budget.block(endpoint.id, seconds))

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run bookkeeping (budget updates) without holding the call up."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def status(self, now: float) -> dict[str, dict[str, object]]:
        """Per endpoint (for /readyz, by its id: no address), its health, outstanding calls, cooldown left and how long
        a rate limit this process saw still blocks it."""
        return {
            e.id: {
                "healthy": not e.cooled,
                "outstanding": e.outstanding,
                "cooldown_left_s": round(max(0.0, e.cooled_until - now), 1) if e.cooled else 0.0,
                "blocked_left_s": round(max(0.0, e.blocked_until - now), 1),
            }
            for e in self.endpoints
        }

    async def aclose(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for endpoint in self.endpoints:
            await endpoint.backend.aclose()


def _endpoint_fault(exc: BackendError) -> bool:
    """A failure that says the endpoint is unwell (not the request): 429/503/529, 5xx, no connection, a timeout."""
    if isinstance(exc, RateLimited | BackendTimeout):
        return True
    return isinstance(exc, ProviderError) and exc.retryable


def _estimate(call: JudgeCall) -> int:
    return (len(call.system) + len(call.prefix) + len(call.body)) // CHARS_PER_TOKEN + 1


def reset_seconds(value: str | None) -> float:
    """OpenAI's ``x-ratelimit-reset-*``: "1s", "6m0s", "250ms", "1h2m3.5s" (1 s when absent or unreadable)."""
    if not value:
        return 1.0
    total, number = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    i = 0
    while i < len(value):
        ch = value[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = "ms" if value.startswith("ms", i) else ch
        if unit not in units or not number:
            return 1.0
        total += float(number) * units[unit]
        number, i = "", i + len(unit)
    if number:  # a bare number: seconds
        total += float(number)
    return total if total > 0 else 1.0
