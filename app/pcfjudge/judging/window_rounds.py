"""Many candidates, round by round: which windows to judge next, when to stop, and the fit so far (pure).

A request with more candidates than one prompt holds (the window ``w``, ``PCFJ_MAX_CANDIDATES``) is judged in
*rounds* of windows (``judging.windows``) and fitted onto one scale (``judging.window_fit``). ``WindowRanking`` is
the whole procedure as a stepper, so the service (``engine.window_runs``) and the benchmark (``pcfjudge bench
ranking``) run the very same decisions:

* **the call budget is known first**: ``rounds`` rounds' worth of windows, ``ceil(N / w) · rounds`` calls
  (``max_calls`` states another, never below ``least_calls``: what the fit needs to be connected);
* **whole order** (``top_n`` = 0, a reward group): all ``rounds`` rounds are uniform, every candidate shown
  ``rounds`` times in varied windows and balanced positions, handed out together (``STEP_WINDOWS`` at most a step);
* **a top** (``top_n`` ≥ 1: rerank's ``top_n``, listwise's winner): one uniform round, then stages
  (``window_stages``: who goes on, and how many, from the fit so far) until one scale links every candidate; then
  boundary steps, refitted after each: while two or more candidates are uncertain at the boundary of the top
  max(``top_n``, 10) (``windows.uncertain_at``: fitted score within ``CERTAIN_Z`` standard errors of it), a step
  spends at most a third of the calls left (``BOUNDARY_SHARE``; up to a round's) on full windows over the candidates
  nearest a boundary of that top (``window_stages.nearest``: its cut or a place within it; as many windows as the
  uncertain fill); it stops ``certified`` when fewer than two are uncertain. Round trips: one per stage and per
  step (the thirds make them about ``log1.5`` of the calls after the stages: 5 at 100 documents and 12 calls,
  about 14 at 1,000 and 124).

``stopped``: ``rounds`` (every uniform round made), ``certified`` (the top ``top_n`` no longer in doubt),
``budget`` (uncertain candidates remain, and no further step fits), ``failed`` (calls of the latest step failed:
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
from typing import Literal

from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import RunJudgments
from pcfjudge.judging.window_fit import Observation, WindowFit, fit_windows
from pcfjudge.judging.window_stages import (
    DEFAULT_FOCUS,
    focus_size,
    least_stage_calls,
    links,
    nearest,
    next_size,
    survivors,
    windows_for,
)
from pcfjudge.judging.windows import (
    Window,
    plan_windows,
    position_counts,
    uncertain_at,
    window_sizes,
    windows_linking,
    windows_over,
)

WindowStop = Literal["rounds", "certified", "budget", "failed", "incomplete", "deadline"]
FOCUS_ROUNDS = 2
"""The whole order's least rounds: the fewest that connect every candidate onto one scale."""
STEP_WINDOWS = 640
"""Whole rounds are handed out together up to this many windows (one round always): 1,000 documents' 4 rounds at
once, 10,000 documents' one round (625 windows) per step, within the call slots of an idle backend."""
CERTAIN_Z = 2.0
"""A candidate is uncertain while its fitted consensus is within this many standard errors of the boundary."""
BOUNDARY_SHARE = 3
"""A boundary step spends at most this share of the calls left (``pcfjudge bench ranking``: refits between the last
calls are worth more than one step's fewer round trips)."""


def windows_per_round(n: int, window: int) -> int:
    return len(window_sizes(n, window))


def budget_calls(n: int, window: int, rounds: int, max_calls: int | None = None) -> int:
    """The most calls a windowed judgment of ``n`` candidates makes (what the limits are checked against)."""
    calls = windows_per_round(n, window) * rounds
    return calls if max_calls is None else min(calls, max_calls)


def least_calls(n: int, window: int, top_n: int = 0) -> int:
    """The fewest calls a windowed judgment may be given: the whole order's two uniform rounds (the fewest that put
    every candidate on one scale), or a boundary ranking's first round and its stages (``window_stages``)."""
    if top_n == 0:
        return windows_per_round(n, window) * FOCUS_ROUNDS
    return least_stage_calls(n, window, focus_size(top_n, window))


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
    top_n: int = 0  # the boundary asked for (0: the whole order)
    settled: bool | None = None  # whether the top top_n is no longer in doubt (``WindowRanking.settled``)
    position_effects: tuple[float, ...] = ()  # the judge's measured bias by display position (0 first)
    scale: tuple[float, float] = (0.0, 1.0)  # (shift, factor) that put the fitted scores on 0–100 (``on_scale``)


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
        least = least_calls(n, spec.window, spec.top_n)
        if self.budget < least:
            raise ValueError(
                f"{n} candidates in windows of {spec.window} need at least {least} calls; this judgment may make "
                f"{self.budget}"
            )
        self.focus = focus_size(spec.top_n, spec.window) if spec.top_n else n
        self.settles = max(spec.top_n, DEFAULT_FOCUS)  # the boundary the calls settle (a smaller top_n: the same plan)
        self.alive = n  # the latest stage's field (a boundary ranking's stages cut it from ``n``)
        self._latest: list[Window] = []  # the latest stage's windows (each sends its best on)
        self._pending: list[list[Window]] = []  # planned rounds not handed out yet
        self.observations: list[Observation] = []
        self.positions: list[int] = []  # each observation's display position in its call (0 first)
        self.shown = position_counts(n)  # each candidate's display positions so far (windows balance them)
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
        if self.stopped is not None:
            return []
        if self.steps == 0:
            rounds = self.spec.rounds if self.spec.top_n == 0 else 1
            self.rounds_made = min(rounds, self.budget // self.per_round)
            plan = plan_windows(self.n, self.spec.window, self.rounds_made, self.spec.seed, self.shown)
            self._pending = plan
        if self._pending:  # the whole order's rounds: as many whole rounds at once as STEP_WINDOWS allows
            at_once = max(1, STEP_WINDOWS // self.per_round)
            rounds_now, self._pending = self._pending[:at_once], self._pending[at_once:]
            return self._hand_out([w for round_windows in rounds_now for w in round_windows])
        if self.spec.top_n == 0:
            self.stopped = "rounds"
            return []
        if self.failed > self._failed_before:  # a step's calls failed: refine nothing on a fit that lacks them
            self.stopped = "failed"
            return []
        fit = self.fit()
        windows = self._stage(fit) if fit.components > 1 else self._boundary(fit)  # stages until one scale
        if not windows:
            return []
        self.rounds_made += 1
        return self._hand_out(windows)

    def _stage(self, fit: WindowFit) -> list[Window]:
        """A stage (``window_stages``): the best of the field in fresh full windows, to link every group."""
        w = self.spec.window
        size = next_size(self.alive, self.focus)
        size = min(self.alive, windows_for(size, w) * w)  # every call shows a full window
        going_on = survivors(fit.scores, self._latest, size)
        seed = self.spec.seed * 1000 + self.steps
        shown = [list(counts) for counts in self.shown]  # a draft: ``windows_linking`` may replace it
        stage = windows_over(going_on, self.n, w, seed, 1, shown)
        if not links(stage, fit.groups):  # deal the field so that its windows link the groups
            stage = windows_linking(going_on, fit.groups, self.n, w, seed, self.shown)
        else:
            self.shown = shown
        if len(stage) > self.budget - self.calls:
            self.stopped = "budget"
            return []
        self.alive = len(going_on)
        return stage

    def _boundary(self, fit: WindowFit) -> list[Window]:
        """A boundary step: full windows over the candidates nearest a boundary of the top the calls settle, at most
        a third of the calls left (so the last calls come after the most refits)."""
        if not certain(fit):  # failed calls left a candidate unjudged or off the scale: no boundary to settle
            self.stopped = "incomplete"
            return []
        uncertain = uncertain_at(fit.scores, fit.standard_errors, self.settles, CERTAIN_Z)
        if len(uncertain) < 2:
            self.stopped = "certified"
            return []
        left, w = self.budget - self.calls, self.spec.window
        room = min(self.per_round, left, max(1, left // BOUNDARY_SHARE))
        if room <= 0:
            self.stopped = "budget"
            return []
        field = nearest(fit.scores, fit.standard_errors, self.settles, min(room, windows_for(len(uncertain), w)) * w)
        times = max(1, room // windows_per_round(len(field), w))
        step = windows_over(field, self.n, w, self.spec.seed * 1000 + self.steps, times, self.shown)
        fresh = [v for v in dict.fromkeys(step) if v not in self.asked][:room]  # asked again = the same cached answer
        if not fresh:  # every window of the uncertain candidates these calls could ask has been asked
            self.stopped = "budget"
        return fresh

    def _hand_out(self, windows: list[Window]) -> list[Window]:
        self.asked.update(windows)
        self._latest = windows
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
        self.positions.extend(range(len(window)))
        self._fit = None

    def settled(self, top_n: int) -> bool:
        """Whether the fit so far has no doubt about who is in the top ``top_n`` (every candidate on one scale, and
        fewer than two within ``CERTAIN_Z`` standard errors of its boundary)."""
        fit = self.fit()
        measured = math.isfinite(fit.residual_sd)
        return measured and certain(fit) and len(uncertain_at(fit.scores, fit.standard_errors, top_n, CERTAIN_Z)) < 2

    def cut(self) -> None:
        """The caller's deadline came: no further step (the windows it cut are not recorded)."""
        self.stopped = "deadline"

    def fit(self) -> WindowFit:
        if self._fit is None:
            start = self._last.scores if self._last else None
            self._fit = fit_windows(self.n, self.observations, positions=self.positions, start=start)
            self._last = self._fit
        return self._fit


def run_values(run: RunJudgments, weights: cons.Weights) -> dict[str, list[float]]:
    """Eq. 1–5 of one run alone, by id: [consensus, score, borda, top_vote, uncertainty, major, hallucinated]."""
    return cons.execution_stats(list(run.judgments), [run], weights)


def ranking_of(scores: Sequence[float]) -> list[int]:
    """Candidate indices best first; equal scores keep the input order."""
    return sorted(range(len(scores)), key=lambda c: (-scores[c], c))


def certain(fit: WindowFit) -> bool:
    """Every candidate judged and on one scale (its standard errors may still be unknown: infinite while the fit
    has no degrees of freedom left to measure the scatter)."""
    return fit.components == 1 and all(fit.appearances)
