"""The errors a front door answers with, raised anywhere below the routes (no FastAPI here; ``api.errors`` turns them
into the JSON error body).

``Refusal``: the service declines a request before (or instead of) spending on it. Raised by the guards (caps,
quotas, model allowlist, admission control) wherever they sit; every front door turns it into its JSON error with
``status`` and, for 429/503, a ``Retry-After`` header.

``ApiError``: a client mistake (4xx, ``client_error`` for a 422 naming the field) or backend trouble (5xx,
``backend_failure`` for too few successful runs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the guards below the judging core raise Refusal: no import of it at run time
    from pcfjudge.engine.failures import JudgingFailed


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


def backend_failure(exc: JudgingFailed) -> ApiError:
    """Too few judge runs succeeded: 502/503/504 JSON; a 503 always says when to retry."""
    if exc.retry_after is not None:
        headers: dict[str, str] | None = {"Retry-After": str(max(1, round(exc.retry_after)))}
    else:
        headers = {"Retry-After": "5"} if exc.status == 503 else None
    return ApiError(exc.status, exc.kind, exc.detail, headers=headers)
