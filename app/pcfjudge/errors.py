"""The service's answers instead of a judgment, raised below the HTTP layer (a leaf: nothing of ours imported, no
FastAPI); ``http.error_handlers`` is the one place that turns them, and ``engine.failures.JudgingFailed`` and
``judging.waves.BudgetError``, into the JSON error body.

Both carry an error kind, never an HTTP status: ``http.error_handlers.STATUS`` is the one table that turns a kind
into a status (as text-embeddings-inference's ``ErrorType`` does).

``Refusal``: the service declines a request before (or instead of) spending on it, as one of its reasons
(``OverLimit``, ``ModelNotAllowed``, ``QuotaExceeded``, ``Overloaded``, ``ShuttingDown``, ``Invalid``). Raised by the
guards (caps, quotas, model allowlist), by the runner when admission control will not take the calls, and by the
reward door when too many samples wait; its ``retry_after`` becomes a ``Retry-After`` header.

``ApiError``: a client mistake a front door found (``client_error`` for a 422 naming the field), or a door's own
verdict on backend trouble; only the HTTP layer gives one a ``status`` of its own (a verdict that carries the
judgment's 502/503/504).
"""

from __future__ import annotations

from typing import ClassVar


class Refusal(Exception):
    """The service declines a request; each reason is a subclass below, whose ``kind`` the HTTP edge's table turns
    into a status. ``retry_after``: seconds after which the same request may be taken (a ``Retry-After``)."""

    kind: ClassVar[str] = "refused"

    def __init__(self, detail: str, *, field: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.detail, self.field, self.retry_after = detail, field, retry_after

    def headers(self) -> dict[str, str] | None:
        if self.retry_after is None:
            return None
        return {"Retry-After": str(max(1, round(self.retry_after + 0.499)))}


class Invalid(Refusal):
    """What the request asks cannot be done as asked (the field says what to change)."""

    kind = "validation_error"


class OverLimit(Refusal):
    """Past a per-request cap: calls, input tokens, price, reward calls."""

    kind = "over_limit"


class ModelNotAllowed(Refusal):
    """A model outside PCFJ_ALLOWED_MODELS."""

    kind = "model_not_allowed"


class QuotaExceeded(Refusal):
    """The calling key's quota is spent for now (or can never pay for the request)."""

    kind = "quota_exceeded"


class Overloaded(Refusal):
    """Admission control or a key's waiting members: not now."""

    kind = "overloaded"


class ShuttingDown(Refusal):
    """This replica is stopping: retry on another."""

    kind = "shutting_down"


class ApiError(Exception):
    def __init__(
        self,
        kind: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        field: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.headers, self.field, self.status = kind, detail, headers, field, status


def client_error(field: str, detail: str) -> ApiError:
    """A 422 naming the field and the fix."""
    return ApiError("validation_error", f"{field}: {detail}", field=field)
