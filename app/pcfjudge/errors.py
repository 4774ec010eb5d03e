"""The service's answers instead of a judgment, raised below the HTTP layer (a leaf: nothing of ours imported, no
FastAPI); ``api.error_handlers`` is the one place that turns them, and ``engine.failures.JudgingFailed`` and
``judging.waves.BudgetError``, into the JSON error body.

``Refusal``: the service declines a request before (or instead of) spending on it. Raised by the guards (caps,
quotas, model allowlist) and by the runner when admission control will not take the calls; its ``status`` and, for
429/503, a ``Retry-After`` header go into the answer.

``ApiError``: a client mistake a front door found (4xx; ``client_error`` for a 422 naming the field), or a front
door's own verdict on backend trouble (5xx).
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


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        kind: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.status, self.kind, self.detail, self.headers, self.field = status, kind, detail, headers, field


def client_error(field: str, detail: str) -> ApiError:
    """A 422 naming the field and the fix."""
    return ApiError(422, "validation_error", f"{field}: {detail}", field=field)
