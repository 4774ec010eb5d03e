"""One scale over many windows: each candidate's score, fitted from every window judgment it appeared in.

A judge's absolute scores drift from call to call (one window is judged strictly, the next leniently), while within a
call it compares its candidates well. So the model is additive with a per-call offset (a two-way layout, the Gaussian
form of Thurstone's model with a nuisance per call):

    s[c, k] = mu + theta[c] + b[k] + e,      sum_c theta[c] = 0,   e ~ N(0, sigma^2)

where ``s[c, k]`` is the score (0–100) call ``k`` gave candidate ``c`` and ``mu`` the mean of every score given (so
the candidates' fitted scores average to it; the offsets take the rest). Least squares is solved exactly: the
offsets eliminated, the candidates' normal equations ``(D - N M^-1 N^T) theta = y`` (``D`` appearances, ``M`` window
sizes, ``N`` who was in which call) are solved by conjugate gradients, each product two ``numpy.bincount`` sums over
the observations (the matrix is singular only along each connected group's constant, which the centring removes); ``components`` says how many connected groups of
candidates the calls form (a round of disjoint windows alone is not connected: its offsets would absorb every
difference between windows, so a plan has at least two rounds). A candidate's reported score is ``mu + theta[c]``,
on the judge's own 0–100 scale; its standard error is ``sigma / sqrt(n_c) * sqrt(m / (m - 1))`` with ``n_c`` its
appearances and ``m`` the mean window size (the factor accounts for each offset being estimated from the call's own
``m`` scores), an approximation stated as such.

**Position bias.** Given where each candidate was shown in its call (``positions``, 0 first), the model gains a
term per display position, ``s[c, k] = mu + theta[c] + b[k] + p[pos] + e`` (positions weighted to mean 0): a judge
that favours what it sees first (or last) gets that share measured (``position_effects``) and taken out of every
candidate's score. It is fitted by backfitting: the position effects from the residuals, then the two-way fit of the
scores less them, up to ``POSITION_PASSES`` times (each pass exact for its half; a balanced design settles in two or
three), stopping once no effect moves by ``SETTLED``; a refit starts from the last fit's scores. Each pass shrinks the
measured effects towards none by the James–Stein factor (``shrunk``): sixteen effects from a dozen calls are mostly
noise when the judge's bias is small (3.8–6.4 points of made-up bias, measured unshrunk, where there was none), and
taking that noise out of every score cost recall (``pcfjudge bench ranking``, 100 documents at the sliding window's
12 calls, 3,000 worlds: top-10 recall 0.821 → 0.830 with a bias of 5; 0.813 → 0.810 with a bias of 15, which keeps
nearly all of its size).
A candidate seen once, in one position, cannot be told from its position: that takes windows that show it again
elsewhere, which is what ``windows`` balances.

Pure: plain data in, plain data out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

Observation = tuple[int, int, float]
"""(call, candidate, score): one score one call gave one candidate."""
POSITION_PASSES = 4
"""Backfitting passes of the position effects, at most (a balanced design settles in two or three)."""
SETTLED = 1e-3
"""Points: a backfitting pass that moved no position effect by more than this is the last."""
TOLERANCE = 1e-4
"""Relative residual of the normal equations at which conjugate gradients stop: the fitted scores then move by far
less than their standard errors (``pcfjudge bench ranking``: the same recall as at 1e-6, and a 10,000-candidate
ranking's refits take half the CPU)."""


@dataclass(frozen=True, slots=True)
class WindowFit:
    scores: list[float]  # mu + theta[c], on the judge's 0–100 scale
    standard_errors: list[float]  # math.inf for a candidate never judged
    appearances: list[int]
    residual_sd: float
    components: int  # connected groups of candidates (1: every score on one scale)
    iterations: int
    position_effects: list[float] = field(default_factory=list)  # by display position (0 first): the judge's bias
    groups: list[int] = field(default_factory=list)  # each candidate's connected group (its smallest member's index)


def fit_windows(
    n: int,
    observations: Sequence[Observation],
    *,
    positions: Sequence[int] | None = None,
    tolerance: float = TOLERANCE,
    max_iter: int = 1000,
    start: Sequence[float] | None = None,
) -> WindowFit:
    """Fit ``n`` candidates' scores from ``observations`` (see the module docstring). ``positions``: where each
    observation's candidate was shown in its call (0 first), to fit the judge's position bias too. ``start``: the
    scores of a fit of fewer observations (a refit after more windows starts there). ``tolerance``: relative
    residual of the normal equations at which conjugate gradients stop."""
    if not observations:
        return WindowFit([0.0] * n, [math.inf] * n, [0] * n, 0.0, 0, 0)
    data = np.asarray(observations, dtype=np.float64)
    call = np.unique(data[:, 0].astype(np.int64), return_inverse=True)[1].ravel()
    cand = data[:, 1].astype(np.intp)
    mu = float(data[:, 2].mean())
    solve = _TwoWay(n, call, cand, tolerance, max_iter)
    centred = data[:, 2] - mu  # scores less mu
    theta = np.zeros(n) if start is None else np.asarray(start, dtype=np.float64) - mu
    effects: list[float] = []
    bias = np.zeros(len(centred))
    counts = solve.counts
    dof = len(observations) - int((counts > 0).sum()) - len(solve.sizes) + 1  # of the two-way fit
    if positions is not None and len(positions) and dof >= 4 * (max(positions) + 1):  # data enough for positions
        if start is None:
            theta, offset = solve(centred, theta)
        else:  # a refit: the positions' first pass starts from the last fit's scores (its offsets follow from them)
            offset = np.bincount(call, centred - theta[cand]) / solve.sizes
        pos = np.asarray(positions, dtype=np.intp)
        shown = np.bincount(pos).astype(np.float64)
        effect = np.zeros(len(shown))
        for _ in range(POSITION_PASSES):  # backfitting: the position effects, then the two-way fit without them
            rest = centred - theta[cand] - offset[call]
            raw = np.divide(np.bincount(pos, rest), shown, out=np.zeros(len(shown)), where=shown > 0)
            raw -= float(raw @ shown) / float(shown.sum())
            residuals = rest - raw[pos]
            new = shrunk(raw, shown, float(residuals @ residuals) / (dof - len(shown) + 1))
            change, effect = new - effect, new
            theta, offset = solve(centred - effect[pos], theta)
            if float(np.abs(change).max()) < SETTLED:  # a refit from the last one settles in a pass or two
                break
        bias = effect[pos]
        effects = effect.tolist()
    else:
        theta, offset = solve(centred, theta)
    residuals = centred - bias - theta[cand] - offset[call]
    dof -= max(0, len(effects) - 1)
    sd = math.sqrt(float(residuals @ residuals) / dof) if dof > 0 else math.inf  # no scatter measured: no certainty
    components, groups = _components(n, call, cand)
    m = len(observations) / len(solve.sizes)
    inflate = math.sqrt(m / (m - 1)) if m > 1 else 1.0
    return WindowFit(
        scores=(mu + theta).tolist(),
        standard_errors=[sd / math.sqrt(x) * inflate if x else math.inf for x in counts.tolist()],
        appearances=counts.tolist(),
        residual_sd=sd,
        components=components,
        groups=groups,
        iterations=solve.iterations,
        position_effects=effects,
    )


def shrunk(raw: np.ndarray, shown: np.ndarray, variance: float) -> np.ndarray:
    """Position effects ``raw`` (weighted mean 0) shrunk towards none by the positive-part James–Stein factor
    ``1 - (P - 3) v / |raw|^2``: ``P`` positions (one dimension spent on the mean), ``v`` the mean sampling variance
    of one position's effect (``variance`` over the times it was shown). A small bias measured from few calls is
    mostly noise and is shrunk away; a large one keeps nearly all of its size."""
    seen = shown > 0
    noise = float(np.mean(variance / shown[seen])) if seen.any() else 0.0
    signal = float(raw @ raw)
    factor = 1.0 - max(0, int(seen.sum()) - 3) * noise / signal if signal > 0 else 0.0
    return np.asarray(raw * min(1.0, max(0.0, factor)))


class _TwoWay:
    """Least squares of candidates plus a per-call offset, by conjugate gradients (the module docstring)."""

    def __init__(self, n: int, call: np.ndarray, cand: np.ndarray, tolerance: float, max_iter: int) -> None:
        self.n, self.call, self.cand = n, call, cand
        self.tolerance, self.max_iter = tolerance, max_iter
        self.counts = np.bincount(cand, minlength=n)
        self.sizes = np.bincount(call).astype(np.float64)
        self.present = self.counts > 0
        self.iterations = 0

    def within_calls(self, values: np.ndarray) -> np.ndarray:  # per observation: its call's mean of ``values``
        return np.asarray((np.bincount(self.call, values) / self.sizes)[self.call])

    def normal(self, theta: np.ndarray) -> np.ndarray:  # (D - N M^-1 N^T) theta
        spread = np.bincount(self.cand, self.within_calls(theta[self.cand]), minlength=self.n)
        return np.asarray(self.counts * theta - spread)

    def centre(self, values: np.ndarray) -> np.ndarray:  # the constraint: judged candidates' values sum to 0
        values[~self.present] = 0.0
        values[self.present] -= values[self.present].mean()
        return values

    def __call__(self, centred: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """theta and the per-call offsets for observations ``centred`` (mean 0), starting at ``theta``."""
        rhs = self.centre(np.bincount(self.cand, centred - self.within_calls(centred), minlength=self.n))
        theta = self.centre(theta.copy())
        residual = rhs - self.normal(theta)
        direction = residual.copy()
        rr, stop = float(residual @ residual), self.tolerance**2 * max(float(rhs @ rhs), 1e-300)
        for _ in range(self.max_iter):
            if rr <= stop:
                break
            self.iterations += 1
            product = self.normal(direction)
            step = rr / float(direction @ product)
            theta += step * direction
            residual = self.centre(residual - step * product)
            rr, previous = float(residual @ residual), rr
            direction = residual + (rr / previous) * direction
        return theta, np.bincount(self.call, centred - theta[self.cand]) / self.sizes


def _components(n: int, call: np.ndarray, cand: np.ndarray) -> tuple[int, list[int]]:
    """Connected groups of judged candidates, two candidates linked when one call judged both, and each candidate's
    group (the smallest index in it): each candidate's label becomes the smallest label among the calls it was in
    until nothing changes (as many passes as the design's diameter, a handful)."""
    label = np.arange(n)
    lowest = np.empty(int(call.max()) + 1, dtype=label.dtype)
    while True:
        lowest.fill(n)
        np.minimum.at(lowest, call, label[cand])
        new = label.copy()
        np.minimum.at(new, cand, lowest[call])
        if np.array_equal(new, label):
            return len(np.unique(label[cand])), label.tolist()
        label = new


@dataclass(frozen=True, slots=True)
class OnScale:
    """Fitted scores mapped onto 0–100: ``scores = (fitted + shift) · factor`` (standard errors times ``factor``)."""

    scores: list[float]
    standard_errors: list[float]
    shift: float = 0.0
    factor: float = 1.0


def on_scale(fit: WindowFit, low: float = 0.0, high: float = 100.0) -> OnScale:
    """The fit's scores on the judge's 0–100 scale, the way a consensus is (docs/method.md, "One scale").

    The fit identifies differences between candidates; its level (the mean of every score given) is a convention,
    and fitted differences can add up past one call's range (a chain of windows each won by a wide margin). So: as
    fitted when within [low, high]; else shifted by the least that brings them inside; and only when their spread
    is wider than the scale, also scaled down to fit it exactly. The order never changes, and ``shift`` and
    ``factor`` say what was done (the response's ``diagnostics.windows.scale``)."""
    top, bottom = max(fit.scores, default=high), min(fit.scores, default=low)
    if bottom >= low and top <= high:
        return OnScale(list(fit.scores), list(fit.standard_errors))
    if top - bottom <= high - low:
        shift = high - top if top > high else low - bottom
        return OnScale([s + shift for s in fit.scores], list(fit.standard_errors), shift)
    factor = (high - low) / (top - bottom)
    shift = low / factor - bottom
    scores = [min(high, max(low, (s + shift) * factor)) for s in fit.scores]  # rounding only: the ends exactly
    return OnScale(scores, [e * factor for e in fit.standard_errors], shift, factor)
