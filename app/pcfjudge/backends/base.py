"""The one small interface every judge backend implements, and the typed failures it may raise.

    BackendError                     a call failed; ``kind`` is the run error and the metrics outcome
    ├── RateLimited   (rate_limited)   429 / overloaded; ``retry_after`` seconds when the provider said
    ├── BackendTimeout (timeout)       no answer within the deadline
    ├── ProviderError (provider_error) 5xx, connection trouble, or a 4xx the provider gave us
    ├── Truncated     (truncated)      the answer hit the output-token limit
    └── Refused       (refusal)        the model refused, or a content filter stopped it

Backends turn one ``JudgeCall`` into one ``Completion`` (the answer's JSON text plus usage; a ``chat`` call's: the
model's own text, its messages sent as the caller wrote them). They know nothing
of permutations, consensus or HTTP; parsing and validation happen in the judging layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pcfjudge.types import CallKind, DecodingParams, Failure, Priority, Usage

ORACLE_ABSENT = -1
"""``JudgeCall.oracle_position`` of a window that does not show the truly best candidate (sim:oracle)."""


class VerdictFormat(Protocol):
    """How a recognised judge prompt (``judging.templates``) wants its verdict written: what the simulated judge
    answers a ``chat`` call in. A pair's verdict is an int (+ first shown better, 0 tie), a list's the ranks."""

    @property
    def pairwise(self) -> bool: ...
    @property
    def tie(self) -> bool: ...
    @property
    def scale(self) -> int: ...
    @property
    def write(self) -> Callable[[Any, tuple[str, ...]], str]: ...


@dataclass(frozen=True, slots=True)
class ChatPayload:
    """A ``chat`` call's own request: the messages as the caller wrote them (in one order of its candidates), and
    the caller's seed and ``response_format`` (JSON text), sent on as they are; no schema, no structured output.
    ``verdicts`` and ``labels``: the recognised prompt's verdict format and labels (None: not recognised)."""

    messages: tuple[tuple[str, str], ...]
    seed: int | None = None
    response_format: str | None = None
    verdicts: VerdictFormat | None = field(default=None, compare=False)
    labels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JudgeCall:
    """One backend call: the rendered prompt plus the structured task it encodes (for the simulated judge)."""

    kind: CallKind
    model: str  # the model name without provider prefix
    system: str
    prefix: str
    body: str
    schema_name: str
    schema: dict[str, Any]
    question: str
    displayed: tuple[str, ...]  # candidate texts in displayed order (labels A, B, … by position)
    sample: int = 0
    params: DecodingParams = field(default_factory=DecodingParams)
    oracle_position: int | None = (
        None  # displayed position of the truly best candidate (sim:oracle only; -1: not shown)
    )
    reference: str | None = None  # the gold answer a reference-aware prompt grades against
    chat: ChatPayload | None = None  # kind "chat": the messages to send instead of system + user
    priority: Priority = "interactive"  # the class of the work it serves (the runner's; a fleet's budget reads it)

    @property
    def user(self) -> str:
        return f"{self.prefix}\n\n{self.body}"


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    usage: Usage = field(default_factory=Usage)


class BackendError(Exception):
    kind = "provider_error"
    failure: Failure = "backend_error"

    def __init__(
        self,
        detail: str,
        *,
        retry_after: float | None = None,
        retryable: bool = True,
        status_code: int | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.retry_after = retry_after
        self.retryable = retryable  # False: retrying cannot help (a 4xx such as a bad key or unknown model)
        self.status_code = status_code  # the provider's HTTP status, when it answered with one
        self.usage = usage or Usage()  # tokens the failed attempt still spent (a truncated answer's)


class RateLimited(BackendError):
    kind = "rate_limited"
    failure: Failure = "backend_overloaded"


class BackendTimeout(BackendError):
    kind = "timeout"
    failure: Failure = "backend_timeout"


class ProviderError(BackendError):
    kind = "provider_error"


class Truncated(BackendError):
    kind = "truncated"


class Refused(BackendError):
    kind = "refusal"


class Backend(Protocol):
    """A judge model reachable by ``provider:model`` strings."""

    provider: str

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        """Answer one call or raise a ``BackendError``. ``until``: the ``loop.time()`` instant the call must be done
        by (the runner's, for each attempt; None: unknown), for a backend that may wait before it calls (a fleet
        waiting for an endpoint's rate budget waits no longer, or refuses at once)."""
        ...

    async def aclose(self) -> None:
        """Release clients and pools."""
        ...
