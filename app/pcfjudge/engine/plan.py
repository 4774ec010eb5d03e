"""A judgment as a value: what it will do and may spend (calls, input tokens, price), built once from a task (``Judge.plan``), checked once
(``Judge.check``: the model allowlist, the per-request call, token and cost caps) and run by ``Judge.run``.

Every front door builds its plan at intake, before it answers anything, so a request is refused the same way
whether it is answered now, streamed or run as a job; a job runs the plan checked at intake (another replica, or a
resumed job, plans its stored request again).

Its ``strategy`` is an object that runs it (``engine.strategies``), for one model or every juror of a jury
(``jurors`` holds more than one model):

* ``Prompt``: one listwise prompt over K orders (× executions): its calls are the planned runs, within the
  request's budget (``max_calls``);
* ``Windows``: more candidates than one prompt shows (PCFJ_MAX_CANDIDATES): rounds of windows fitted onto one
  scale; its calls are every round's budget;
* ``Pairwise``: APOCJudge's passes (both orders, and the keyed pass where it may run);
* ``Chat``: a caller's own judge prompt in each order of its candidates (``engine.chat_runs``), by every juror.

How a plan is run — by when the caller wants its answer (``AnswerBy``) and who listens to its events — is not
part of it: the same plan runs now, streamed or as a job (``Judge.run``'s arguments).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pcfjudge.backends.registry import Jury, ResolvedModel
from pcfjudge.engine.chat_values import ChatTask
from pcfjudge.engine.listwise_runs import ListwiseTask, RunPlan
from pcfjudge.engine.pairwise_passes import PairwiseTask
from pcfjudge.engine.strategies import Strategy

T = TypeVar("T", ListwiseTask, PairwiseTask, ChatTask)


@dataclass(frozen=True, slots=True)
class Plan(Generic[T]):
    """One judgment's task, strategy, models and the most it may spend (``calls``: every juror's together)."""

    task: T
    strategy: Strategy
    jurors: tuple[ResolvedModel, ...]
    jury: Jury | None
    calls: int
    texts: tuple[str, ...]  # the question first, then every text the prompts show (the token estimate)
    field: str  # the request field a cap names when this plan is refused
    window: int | None = None  # ``windows``: the most candidates one call shows
    runs: RunPlan | None = None  # ``prompt`` by one model: its runs and cache keys, planned once
    price_usd: float | None = None  # the most it may cost at PCFJ_PRICES (``Judge.plan``); None: a juror is unpriced
    output_tokens: int | None = None  # the most one call may answer when the task asks less than PCFJ_MAX_OUTPUT_TOKENS

    @property
    def model(self) -> str:
        """The model string, or the jury's name."""
        return self.jury.name if self.jury is not None else self.jurors[0].string
