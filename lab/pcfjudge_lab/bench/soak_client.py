"""The soak's client: what the README tells users to do, plus what a load balancer does in front of replicas.

- Round-robin across replicas; a connection that fails (refused, reset, closed mid-answer) is tried again at once on
  the next replica, as a load balancer would (judging is idempotent: the same request gives the same answer, served
  from the cache when it was already judged).
- 429 and 502/503/504 are retried on the next replica after ``Retry-After`` (capped), else a short backoff.
- Anything else that is not a 200 (another 4xx, a 500) is final: the request is lost. So is one still failing after
  ``give_up_s``.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

RETRIABLE = frozenset({429, 502, 503, 504})


@dataclass(slots=True)
class Outcome:
    """One logical request: its final status (None: never answered), whether it was lost, and its cost."""

    item: int
    status: int | None
    seconds: float
    attempts: int
    lost: bool
    degraded: bool = False
    replica: int | None = None
    backend_calls: int = 0
    cache_hits: int = 0


@dataclass
class Tally:
    """Every attempt by outcome (HTTP status or transport error) and every logical request's outcome."""

    attempts: Counter[str] = field(default_factory=Counter)
    outcomes: list[Outcome] = field(default_factory=list)


def error_kind(response: httpx.Response) -> str:
    """The ``error`` of a JSON error body (``rate_limited``, ``overloaded``, …), or ``non_json``."""
    try:
        body = response.json()
    except ValueError:
        return "non_json"
    kind = body.get("error") if isinstance(body, dict) else None
    return str(kind) if kind else "non_json"


def retry_after(response: httpx.Response, default: float) -> float:
    value = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return default


class LoadClient:
    """Sends judging requests to ``urls`` round-robin, retrying as described above, recording into ``tally``."""

    def __init__(self, urls: list[str], *, give_up_s: float, max_wait_s: float = 5.0, timeout_s: float = 60.0) -> None:
        self.urls = urls
        self.give_up_s, self.max_wait_s = give_up_s, max_wait_s
        self.tally = Tally()
        self._next = itertools.cycle(range(len(urls)))
        self._http = httpx.AsyncClient(timeout=timeout_s, limits=httpx.Limits(max_connections=256))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def judge(self, item: int, body: dict[str, Any]) -> Outcome:
        started = time.monotonic()
        attempts, failures_in_a_row = 0, 0
        status: int | None = None
        while time.monotonic() - started < self.give_up_s:
            replica = next(self._next)
            attempts += 1
            try:
                response = await self._http.post(f"{self.urls[replica]}/judge/listwise", json=body)
            except httpx.TransportError as exc:
                self.tally.attempts[type(exc).__name__] += 1
                failures_in_a_row += 1
                if failures_in_a_row >= len(self.urls):  # every replica refused: back off a little
                    await asyncio.sleep(min(2.0, 0.05 * 2 ** (failures_in_a_row - len(self.urls))))
                continue
            failures_in_a_row = 0
            status = response.status_code
            self.tally.attempts[str(status) if status == 200 else f"{status} {error_kind(response)}"] += 1
            if status == 200:
                return self._record(self._success(item, response, started, attempts, replica))
            if status not in RETRIABLE:
                break
            await asyncio.sleep(min(self.max_wait_s, retry_after(response, 0.5)))
        lost = Outcome(item, status, time.monotonic() - started, attempts, lost=True)
        return self._record(lost)

    def _success(self, item: int, response: httpx.Response, started: float, attempts: int, replica: int) -> Outcome:
        body = response.json()
        usage = body.get("usage") or {}
        return Outcome(
            item,
            200,
            time.monotonic() - started,
            attempts,
            lost=False,
            degraded=bool(body.get("degraded")),
            replica=replica,
            backend_calls=int(usage.get("backend_calls", 0)),
            cache_hits=int(usage.get("cache_hits", 0)),
        )

    def _record(self, outcome: Outcome) -> Outcome:
        self.tally.outcomes.append(outcome)
        return outcome


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of ``values``; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
