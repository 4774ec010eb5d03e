"""The fake provider's knobs and memory: fault plan, seeded random failures, served calls, prompt-cache hashes.

Faults are consumed one per incoming call, in this order of precedence:
  1. a *sticky* fault: a queued fault taken with ``times`` > 1 stays on the same request body (same prompt,
     same permutation) for its next ``times - 1`` calls, so one run's retries see it too, whatever the concurrency;
  2. the next queued fault (``"ok"`` is a queued non-fault, for positioning);
  3. the ``always`` fault, if set;
  4. a seeded random 500 or 429 at ``fail_rate``.
Everything runs on one event loop with no await inside these methods, so no lock is needed.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pcfjudge_lab.fakeprovider.batch_state import BatchBook

Fault = Literal[
    "ok",
    "429",
    "500",
    "503",
    "529",
    "slow",
    "truncated",
    "refusal",
    "content_filter",
    "bad_json",
    "wrong_labels",
    "missing_label",
]
HTTP_FAULTS = frozenset({"429", "500", "503", "529"})


@dataclass(frozen=True, slots=True)
class FakeConfig:
    """Startup settings (``pcfjudge fake-provider`` flags); ``/_control/reset`` returns to them."""

    seed: int = 0
    latency_ms: float = 0.0
    fail_rate: float = 0.0
    slow_seconds: float = 30.0
    retry_after: float = 1.0
    history: int = 50
    expect_key: str | None = None  # when set, any other key gets a 401 that echoes it (as OpenAI's does)
    rpm_limit: int | None = None  # when set, a request past this many in the last ``rpm_window_s`` gets a 429
    rpm_window_s: float = 60.0


@dataclass(slots=True)
class Served:
    endpoint: str
    fault: str | None
    body: dict[str, Any]
    traceparent: str | None = None  # the W3C trace context header the caller sent (tracing tests)


@dataclass
class FakeState:
    config: FakeConfig
    live: FakeConfig = field(init=False)
    queue: deque[tuple[Fault, int]] = field(default_factory=deque)
    always: Fault | None = None
    sticky: dict[str, tuple[Fault, int]] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    completions: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    served: deque[Served] = field(default_factory=deque)
    prefixes: set[str] = field(default_factory=set)
    batches: BatchBook = field(default_factory=BatchBook)  # files and batch jobs (``batch_state``)
    rng: random.Random = field(init=False)
    ids: int = 0
    admitted: deque[float] = field(default_factory=deque)  # when the requests ``rpm_limit`` counts came in

    def over_rate(self, now: float) -> float | None:
        """Under ``rpm_limit``: count a request that came in at ``now`` and return None, or the seconds until one
        more fits in the window (the request is refused and not counted, as providers count only what they serve)."""
        limit = self.live.rpm_limit
        if limit is None:
            return None
        window = self.live.rpm_window_s
        while self.admitted and self.admitted[0] <= now - window:
            self.admitted.popleft()
        if len(self.admitted) >= limit:
            return self.admitted[0] + window - now
        self.admitted.append(now)
        return None

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.live = self.config
        self.queue.clear()
        self.always = None
        self.sticky.clear()
        self.calls.clear()
        self.completions.clear()
        self.faults.clear()
        self.served = deque(maxlen=self.config.history)
        self.prefixes.clear()
        self.admitted.clear()
        self.batches.reset(self.config.seed)
        self.rng = random.Random(self.config.seed)

    def configure(self, **changes: Any) -> None:
        """Change live knobs (fail_rate, latency_ms, slow_seconds, retry_after, expect_key, rpm_limit, rpm_window_s)."""
        self.live = replace(self.live, **changes)

    def next_fault(self, signature: str) -> Fault | None:
        """The fault for one incoming call whose request body hashes to ``signature``."""
        fault: Fault | None = None
        if signature in self.sticky:
            fault, left = self.sticky.pop(signature)
            if left > 1:
                self.sticky[signature] = (fault, left - 1)
        elif self.queue:
            fault, times = self.queue.popleft()
            if times > 1:
                self.sticky[signature] = (fault, times - 1)
        elif self.always is not None:
            fault = self.always
        elif self.live.fail_rate > 0 and self.rng.random() < self.live.fail_rate:
            fault = "500" if self.rng.random() < 0.5 else "429"
        return None if fault == "ok" else fault

    def record(self, endpoint: str, body: dict[str, Any], fault: str | None, traceparent: str | None = None) -> None:
        """Remember a parsed request (``calls`` already counts every request, rejected ones included)."""
        if fault is not None:
            self.faults[fault] += 1
        self.served.append(Served(endpoint, fault, body, traceparent))

    def seen_prefix(self, digest: str) -> bool:
        """Whether a cacheable prefix was seen before (and remember it from now on)."""
        seen = digest in self.prefixes
        self.prefixes.add(digest)
        return seen

    def new_id(self) -> str:
        self.ids += 1
        return f"{self.ids:024x}"
