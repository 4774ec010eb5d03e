"""A chat judgment's task and result (``engine.chat_runs`` judges it): values only, so the judge, the plan and the
metrics can name them without importing the templates (a served process that never judges a chat prompt loads
none of them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pcfjudge.backends.registry import Jury, ResolvedModel
from pcfjudge.judging.permutations import schedule
from pcfjudge.judging.templates.chat_consensus import Decision
from pcfjudge.judging.templates.template_base import Found, Message
from pcfjudge.judging.templates.template_verdicts import Verdict
from pcfjudge.types import CacheMode, Usage


@dataclass(frozen=True, slots=True)
class ChatOptions:
    """What the caller asked of the judge beyond its messages (None: the server's default)."""

    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    response_format: str | None = None  # JSON text, sent on as it is


@dataclass(frozen=True, slots=True)
class ChatTask:
    messages: tuple[Message, ...]
    found: Found | None  # the recognised template (None: passed through as one call)
    options: ChatOptions = ChatOptions()
    k: int = 4  # a list's orders
    cache_mode: CacheMode = "use"
    model: ResolvedModel | Jury | str | None = None

    @property
    def orders(self) -> list[tuple[int, ...]]:
        """The orders judged: none to permute (one call, as sent), a pair's two, or a list's ``k``."""
        if self.found is None:
            return [()]
        n = len(self.found.spans)
        if n == 2:
            return [(0, 1), (1, 0)]
        orders = [tuple(range(n))]
        orders += [p for p in schedule(n, self.k + 1) if p != orders[0]]
        return orders[: self.k]

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(text for _, text in self.messages)


@dataclass(slots=True)
class ChatRun:
    """One order and what became of it: the judge's answer, its verdict as shown and in the caller's order."""

    order: tuple[int, ...]
    model: str
    content: str | None = None
    shown: Verdict | None = None
    verdict: Verdict | None = None
    cached: bool = False
    latency_ms: float = 0.0
    usage: Usage = field(default_factory=Usage)
    error: str | None = None


@dataclass(slots=True)
class ChatResult:
    model: str
    template: str | None
    runs: list[ChatRun]
    decision: Decision | None
    content: str
    chosen: int | None  # the run whose answer is the reply (None: the template's own wording)
    backend_calls: int
    cache_hits: int
    usage: Usage
    cost_usd: float | None = None
    degraded: bool = False  # an order failed: the consensus is over the others
    stopped: Literal["deadline"] | None = None  # the caller's deadline cut an order (the others' verdict stands)
    jury: None = None  # the jury report the other doors give (the chat door reports jurors per run)

    def stopped_event(self) -> dict[str, Any]:
        """Its ``stopped`` event (docs/streaming.md): why it ended and the orders made (every juror's)."""
        return {"judgment": "chat", "reason": self.stopped or "planned", "runs": len(self.runs)}

    def usage_of(self, model: str) -> Usage:
        """The tokens of the orders ``model`` judged (a jury's juror)."""
        return sum((r.usage for r in self.runs if r.model == model), Usage())
