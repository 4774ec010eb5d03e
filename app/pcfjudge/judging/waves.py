"""Which runs a listwise request makes, wave by wave. Pure: the judge asks for a wave, makes it, reports the outcomes.

Schedule order is run index first, then execution: (run 0, exec 0), (run 0, exec 1), …, (run 1, exec 0), …, so a
request cut short keeps its executions balanced and its runs a prefix of every execution's schedule (the cache
entries of a fixed-K request are the same). Every wave is the next stretch of that order:

* fixed K, no budget: one wave of every run (the service's behaviour before adaptive K);
* adaptive K (``"k": "auto"``): first k_min runs per execution, then after each wave ``adaptive.decide`` says
  whether to stop; if not, the next wave reaches the first point at which a stop is possible at all
  (``adaptive.next_left``: points skipped could not have stopped whatever their runs said);
* budgets cut a wave to what is left: ``max_calls`` counts backend calls (cache hits are free), ``max_cost_usd``
  prices each call at the dearest call the request has made so far (before the first: the prompt's characters / 4
  input tokens and ``max_output_tokens`` output tokens). When a budget leaves no run for a wave the request stops
  with ``budget``; a budget too small for its first run is a ``BudgetError`` (the client's mistake, a 422).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pcfjudge.judging import adaptive
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import RunJudgments
from pcfjudge.types import Usage, usd

Position = tuple[int, int]  # (execution, run index)
Price = tuple[float, float]  # USD per million input, output tokens
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class Adaptive:
    """``"k": "auto"``: at least ``k_min`` runs per execution, at most the task's k, stopping by ``stop``."""

    k_min: int = 3
    stop: adaptive.StopRule = "certified"


@dataclass(frozen=True, slots=True)
class Budget:
    """Spending limits of one request (None: unlimited)."""

    max_calls: int | None = None
    max_cost_usd: float | None = None

    def cap(self, calls: int) -> int:
        """The most backend calls a request planning ``calls`` can make under this budget."""
        return calls if self.max_calls is None else min(calls, self.max_calls)


class BudgetError(ValueError):
    """The budget cannot pay for the request's first run; ``field`` names the request field to raise."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field, self.detail = field, detail


class Waves:
    """The runs of ``executions`` × ``k`` in schedule order, handed out wave by wave (see the module docstring).

    ``price`` (needed for ``max_cost_usd``), ``prompt_chars`` and ``max_output_tokens`` price the calls; a jury's
    executions are its jurors, pooled with ``shares`` (their weights).
    """

    def __init__(
        self,
        ids: Sequence[str],
        executions: int,
        k: int,
        weights: cons.Weights,
        *,
        auto: Adaptive | None = None,
        budget: Budget | None = None,
        price: Price | None = None,
        prompt_chars: int = 0,
        max_output_tokens: int = 0,
        shares: Sequence[float] | None = None,
    ) -> None:
        self.ids, self.k, self.weights, self.auto, self.shares = list(ids), k, weights, auto, shares
        self.budget = budget or Budget()
        if self.budget.max_cost_usd is not None and price is None:
            raise BudgetError("max_cost_usd", "the model has no price; set PCFJ_PRICES to use a cost budget")
        self.price = price
        first_in = math.ceil(prompt_chars / CHARS_PER_TOKEN)
        self.first_call_usd = usd(first_in, max_output_tokens, price) if price is not None else 0.0
        self.order: list[Position] = [(e, i) for i in range(k) for e in range(executions)]
        self.executions = executions
        self.results: dict[Position, RunJudgments | None] = {}
        self.made = 0
        self.calls = 0
        self.spent = 0.0
        self.dearest: float | None = None
        self.stopped: adaptive.Stopped | None = None

    def next(self) -> list[Position]:
        """The runs to make now, in schedule order; empty once the request is done (``stopped`` says why)."""
        if self.stopped is not None:
            return []
        if self.made == len(self.order):
            self.stopped = "k_max" if self.auto else None
            return []
        wanted = self._wanted()
        if wanted == 0:
            return []
        fit = min(wanted, self._affordable())
        if fit == 0:
            if self.made == 0:
                raise self._too_small()
            self.stopped = "budget"
            return []
        wave = self.order[self.made : self.made + fit]
        self.made += fit
        return wave

    def record(
        self, position: Position, result: RunJudgments | None, *, call: bool, usage: Usage | None = None
    ) -> None:
        """What became of a run: its judgments (None: failed), whether it was a backend call, its tokens."""
        self.results[position] = result
        if call:
            self.calls += 1
            cost = usd(usage.input_tokens, usage.output_tokens, self.price) if usage and self.price else 0.0
            self.spent += cost
            if cost > 0:  # a call that failed before using tokens says nothing about the price of the next
                self.dearest = max(self.dearest or 0.0, cost)

    def progress(self) -> adaptive.Progress:
        """The adaptive state of the runs made so far."""
        runs: list[list[RunJudgments]] = [[] for _ in range(self.executions)]
        made = [0] * self.executions
        for e, i in self.order[: self.made]:
            made[e] += 1
            result = self.results.get((e, i))
            if result is not None:
                runs[e].append(result)
        return adaptive.progress(self.ids, runs, [self.k - m for m in made], self.weights, self.shares)

    def _wanted(self) -> int:
        """How many runs the next wave should make before budgets (0: stop, ``stopped`` set)."""
        if self.auto is None:
            return len(self.order) - self.made
        first = min(self.auto.k_min, self.k) * self.executions
        if self.made < first:  # the first wave, or what a budget left of it
            return first - self.made

        state = self.progress()
        self.stopped = adaptive.decide(state, self.auto.stop)
        if self.stopped is not None:
            return 0
        left = adaptive.next_left(state, self.auto.stop)
        return max(1, (self.k - left) * self.executions - self.made)

    def _affordable(self) -> int:
        """Runs the budgets still pay for, each assumed to be a backend call."""
        fit = len(self.order)
        if self.budget.max_calls is not None:
            fit = min(fit, self.budget.max_calls - self.calls)
        if self.budget.max_cost_usd is not None:
            per_call = self.dearest if self.dearest is not None else self.first_call_usd
            if per_call > 0:
                fit = min(fit, math.floor((self.budget.max_cost_usd - self.spent) / per_call + 1e-9))
        return max(0, fit)

    def _too_small(self) -> BudgetError:
        if self.budget.max_calls is not None and self.budget.max_calls <= self.calls:
            return BudgetError("max_calls", "must allow at least one backend call")
        return BudgetError(
            "max_cost_usd",
            f"{self.budget.max_cost_usd:g} USD does not pay for one judge call of this request (estimated "
            f"{self.first_call_usd:.6f} USD: the prompt's characters / 4 input tokens and up to max_output_tokens "
            "output tokens at PCFJ_PRICES); raise it or send shorter texts",
        )
