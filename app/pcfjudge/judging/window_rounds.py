"""Many candidates, round by round: which windows to judge next, when to stop, and the fit so far (pure).

A request with more candidates than one prompt holds (the window ``w``, ``PCFJ_MAX_CANDIDATES``) is judged in
*rounds* of windows (``judging.windows``) and fitted onto one scale (``judging.window_fit``). ``WindowRanking`` is
the whole procedure as a stepper, so the service (``engine.window_runs``) and the benchmark (``pcfjudge bench
ranking``) run the very same decisions:

* **the call budget is known first**: ``rounds`` rounds' worth of windows, ``ceil(N / w) · rounds`` calls
  (``max_calls`` can only lower it, never below the two rounds the fit needs to be connected);
* **whole order** (``top_n`` = 0, a reward group): all ``rounds`` rounds are uniform, every candidate shown
  ``rounds`` times in varied windows and balanced positions, judged at once (one round trip);
* **a boundary** (``top_n`` ≥ 1: rerank's ``top_n``, listwise's winner): two uniform rounds, judged at once; then
  up to ``rounds`` − 2 boundary steps, each one round's worth of calls (or what is left of the budget) spent on
  windows over the candidates still uncertain at the ``top_n`` boundary (``windows.uncertain_at``: fitted score
  within two standard errors of it, ``CERTAIN_Z``), reshuffled as often as those calls allow, refitted after each step; it stops
  ``certified`` when none is uncertain. Round trips: at most ``rounds`` − 1.

``stopped``: ``rounds`` (every uniform round made), ``certified`` (the top ``top_n`` no longer in doubt),
``budget`` (uncertain candidates remain, and no further round fits), ``failed`` (calls of the latest step failed:
no boundary round is planned on a fit that lacks them; a batch submits each step's windows once they are known) or
``incomplete`` (failed calls left a candidate unjudged or off the common scale: the judgment fails, see
``engine.window_runs``). The value each call contributes for a
candidate is the paper's Eq. 5 for that run alone (``run_values``): score, Borda share within the window, top vote
and calibrated uncertainty, weighted; the fit's per-call offset absorbs one call's leniency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import RunJudgments

if TYPE_CHECKING:
    from pcfjudge.judging.window_fit import Observation, WindowFit
    from pcfjudge.judging.windows import Window

WindowStop = Literal["rounds", "certified", "budget", "failed", "incomplete", "deadline"]
FOCUS_ROUNDS = 2
CERTAIN_Z = 2.0
"""A candidate is uncertain while its fitted consensus is within this many standard errors of the boundary."""
"""Uniform rounds before any boundary round: the fewest that connect every candidate onto one scale."""


def windows_per_round(n: int, window: int) -> int:
    from pcfjudge.judging.windows import window_sizes  # the planner: loaded by the first windowed judgment

    return len(window_sizes(n, window))


def budget_calls(n: int, window: int, rounds: int, max_calls: int | None = None) -> int:
    """The most calls a windowed judgment of ``n`` candidates makes (what the limits are checked against)."""
    calls = windows_per_round(n, window) * rounds
    return calls if max_calls is None else min(calls, max_calls)


def least_calls(n: int, window: int) -> int:
    """The calls of the two uniform rounds every windowed judgment starts with."""
    return windows_per_round(n, window) * FOCUS_ROUNDS


@dataclass(frozen=True, slots=True)
class WindowOptions:
    """What a front door asks of a windowed judgment: the boundary that matters (0: the whole order)."""

    top_n: int = 0


@dataclass(frozen=True, slots=True)
class WindowReport:
    """How a windowed judgment went (the response's ``diagnostics.windows`` and per-candidate uncertainty)."""

    window: int
    windows_per_round: int
    rounds: int
    calls_budgeted: int
    windows_judged: int
    steps: int
    stopped: WindowStop
    components: int
    residual_sd: float
    standard_errors: dict[str, float]
    appearances: dict[str, int]


@dataclass(frozen=True, slots=True)
class WindowSpec:
    window: int
    rounds: int
    top_n: int = 0  # 0: the whole order matters; else the top_n boundary does
    max_calls: int | None = None
    seed: int = 0


class WindowRanking:
    """The stepper: ``next_windows()`` hands out the next step's windows ([] when done, ``stopped`` says why);
    ``record`` takes each window's values (candidate index → value) or ``None`` for a failed call."""

    def __init__(self, n: int, spec: WindowSpec) -> None:
        if n <= spec.window:
            raise ValueError("a windowed judgment has more candidates than one window")
        self.n, self.spec = n, spec
        self.per_round = windows_per_round(n, spec.window)
        self.budget = budget_calls(n, spec.window, spec.rounds, spec.max_calls)
        if self.budget < least_calls(n, spec.window):
            raise ValueError(
                f"{n} candidates in windows of {spec.window} need at least {least_calls(n, spec.window)} calls "
                f"(two rounds); this judgment may make {self.budget}"
            )
        self.observations: list[Observation] = []
        self.asked: set[Window] = set()  # every window handed out (the same window again would be the same answer)
        self.calls = 0  # calls handed out (made or failed)
        self.recorded = 0  # calls whose outcome is in
        self.failed = 0
        self._failed_before = 0  # failures before the latest step
        self.steps = 0
        self.rounds_made = 0  # rounds begun: uniform ones, then one per boundary step
        self.stopped: WindowStop | None = None
        self._fit: WindowFit | None = None
        self._last: WindowFit | None = None  # the latest fit, where a refit starts

    def next_windows(self) -> list[Window]:
        # The planner (windows.py) and the fit (window_fit.py, numpy): loaded by the first windowed judgment; the
        # budgets above are all a served process needs until then.
        from pcfjudge.judging.windows import plan_windows, uncertain_at, windows_over

        if self.stopped is not None:
            return []
        if self.steps == 0:
            rounds = self.spec.rounds if self.spec.top_n == 0 else FOCUS_ROUNDS
            self.rounds_made = min(rounds, self.budget // self.per_round)
            plan = plan_windows(self.n, self.spec.window, self.rounds_made, seed=self.spec.seed)
            return self._hand_out([w for round_windows in plan for w in round_windows])
        if self.spec.top_n == 0:
            self.stopped = "rounds"
            return []
        if self.failed > self._failed_before:  # a step's calls failed: refine nothing on a fit that lacks them
            self.stopped = "failed"
            return []
        fit = self.fit()
        if not certain(fit):  # failed calls left a candidate unjudged or off the scale: no boundary to settle
            self.stopped = "incomplete"
            return []
        uncertain = uncertain_at(fit.scores, fit.standard_errors, self.spec.top_n, CERTAIN_Z)
        if len(uncertain) < 2:
            self.stopped = "certified"
            return []
        room = min(self.per_round, self.budget - self.calls)
        if self.rounds_made >= self.spec.rounds or room <= 0:
            self.stopped = "budget"
            return []
        times = max(1, room // windows_per_round(len(uncertain), self.spec.window))  # up to a round's calls
        step = windows_over(uncertain, self.n, self.spec.window, self.spec.seed * 1000 + self.steps, times)
        fresh = [w for w in dict.fromkeys(step) if w not in self.asked][:room]  # asked again = the same cached answer
        if not fresh:  # every window of the uncertain candidates these calls could ask has been asked
            self.stopped = "budget"
            return []
        self.rounds_made += 1
        return self._hand_out(fresh)

    def _hand_out(self, windows: list[Window]) -> list[Window]:
        self.asked.update(windows)
        self._failed_before = self.failed
        self.steps += 1
        self.calls += len(windows)
        return windows

    def record(self, window: Window, values: Mapping[int, float] | None) -> None:
        call = self.recorded
        self.recorded += 1
        if values is None:
            self.failed += 1
            return
        self.observations.extend((call, c, values[c]) for c in window)
        self._fit = None

    def cut(self) -> None:
        """The caller's deadline came: no further step (the windows it cut are not recorded)."""
        self.stopped = "deadline"

    def fit(self) -> WindowFit:
        if self._fit is None:
            from pcfjudge.judging.window_fit import fit_windows  # numpy: loaded by the first windowed judgment

            self._fit = fit_windows(self.n, self.observations, start=self._last.scores if self._last else None)
            self._last = self._fit
        return self._fit


def run_values(run: RunJudgments, weights: cons.Weights) -> dict[str, list[float]]:
    """Eq. 1–5 of one run alone, by id: [consensus, score, borda, top_vote, uncertainty, major, hallucinated]."""
    return cons.execution_stats(list(run.judgments), [run], weights)


def ranking_of(scores: Sequence[float]) -> list[int]:
    """Candidate indices best first; equal scores keep the input order."""
    return sorted(range(len(scores)), key=lambda c: (-scores[c], c))


def certain(fit: WindowFit) -> bool:
    """Every candidate judged and on one scale."""
    return fit.components == 1 and all(math.isfinite(e) for e in fit.standard_errors)
