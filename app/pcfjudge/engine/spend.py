"""What a request's backend calls actually cost: every attempt counted (retries included), each charged once.

A ``Meter`` counts the backend attempts made on behalf of one judgment (``Judge`` opens one per judgment) and,
through its ``parent``, of the whole request (a reward request opens one for all of its groups). ``Runner`` asks
``try_call()`` before every attempt (first tries, provider-error retries, retries of unusable or truncated answers);
once a meter or its parent has spent its ``limit`` (PCFJ_MAX_CALLS_PER_REQUEST for a judgment,
PCFJ_MAX_REWARD_CALLS_PER_REQUEST for a reward request), no further attempt is made and the run fails with
``over_limit``.

The meter travels in the judgment's ``Watch`` (``engine.progress``) to the runner, which hands it to the call task
it starts: a call counts against the request that started it, and a request that joins another one's call in flight
(single flight) is charged nothing for it. Outside a request (eval, the benches) there is no meter above the
judgment's own.
"""

from __future__ import annotations


class Meter:
    """Backend attempts of one judgment or request: at most ``limit`` (None: unlimited), also within ``parent``."""

    __slots__ = ("limit", "made", "parent", "setting")

    def __init__(self, limit: int | None, setting: str, parent: Meter | None = None) -> None:
        self.limit, self.setting, self.parent = limit, setting, parent
        self.made = 0

    def try_call(self) -> str | None:
        """Count one attempt; None when allowed, else the setting that forbids it (and nothing is counted)."""
        meter: Meter | None = self
        while meter is not None:
            if meter.limit is not None and meter.made >= meter.limit:
                return meter.setting
            meter = meter.parent
        meter = self
        while meter is not None:
            meter.made += 1
            meter = meter.parent
        return None
