"""Admission at the door: POST requests in flight per process, and per API key, so one key cannot crowd out the rest.

* at most ``total`` (``PCFJ_MAX_PENDING_REQUESTS``) requests in flight per process;
* with API keys on, at most ``per_key`` (``PCFJ_MAX_PENDING_PER_KEY``, default three quarters of the total) of them
  from one key, so one key's flood always leaves room for the others;
* a key with nothing in flight is admitted even when the others have filled the total, up to ``ceiling`` (an
  eighth more): one key's (or several keys') flood never refuses another key's first request.

Without API keys every client is the same tenant and only the total applies. Checked before the body is read;
a refusal is a 503 with Retry-After.
"""

from __future__ import annotations


class Door:
    def __init__(self, total: int, per_key: int) -> None:
        self.total, self.per_key = total, min(per_key, total)
        self.ceiling = total + max(1, total // 8)
        self.pending = 0
        self.by_key: dict[str, int] = {}

    def enter(self, key: str | None) -> str | None:
        """Admit one request of ``key`` (None: keys are off) or say why not (the detail of a 503)."""
        mine = self.by_key.get(key, 0) if key is not None else 0
        if key is not None and mine >= self.per_key:
            return (
                f"this API key has {mine} requests in flight on this replica; at most {self.per_key} per key "
                "(PCFJ_MAX_PENDING_PER_KEY); retry later"
            )
        limit = self.ceiling if key is not None and mine == 0 else self.total
        if self.pending >= limit:
            return f"this replica has {self.pending} requests in flight (PCFJ_MAX_PENDING_REQUESTS); retry later"
        self.pending += 1
        if key is not None:
            self.by_key[key] = mine + 1
        return None

    def leave(self, key: str | None) -> None:
        self.pending -= 1
        if key is not None:
            left = self.by_key[key] - 1
            if left:
                self.by_key[key] = left
            else:
                del self.by_key[key]
