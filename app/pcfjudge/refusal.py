"""``Refusal``: the service declines a request before (or instead of) spending on it.

Raised by the guards (caps, quotas, model allowlist, admission control) wherever they sit; every front door turns
it into its JSON error with ``status`` and, for 429/503, a ``Retry-After`` header.
"""

from __future__ import annotations


class Refusal(Exception):
    def __init__(
        self, status: int, kind: str, detail: str, *, field: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(detail)
        self.status, self.kind, self.detail, self.field, self.retry_after = status, kind, detail, field, retry_after

    def headers(self) -> dict[str, str] | None:
        if self.retry_after is None:
            return None
        return {"Retry-After": str(max(1, round(self.retry_after + 0.499)))}
