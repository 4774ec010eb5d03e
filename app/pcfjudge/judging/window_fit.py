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

Pure: plain data in, plain data out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Observation = tuple[int, int, float]
"""(call, candidate, score): one score one call gave one candidate."""


@dataclass(frozen=True, slots=True)
class WindowFit:
    scores: list[float]  # mu + theta[c], on the judge's 0–100 scale
    standard_errors: list[float]  # math.inf for a candidate never judged
    appearances: list[int]
    residual_sd: float
    components: int  # connected groups of candidates (1: every score on one scale)
    iterations: int


def fit_windows(
    n: int,
    observations: Sequence[Observation],
    *,
    tolerance: float = 1e-9,
    max_iter: int = 1000,
    start: Sequence[float] | None = None,
) -> WindowFit:
    """Fit ``n`` candidates' scores from ``observations`` (see the module docstring). ``start``: the scores of a fit
    of fewer observations (a refit after more windows starts there). ``tolerance``: relative residual of the normal
    equations at which conjugate gradients stop."""
    if not observations:
        return WindowFit([0.0] * n, [math.inf] * n, [0] * n, 0.0, 0, 0)
    data = np.asarray(observations, dtype=np.float64)
    call = np.unique(data[:, 0].astype(np.int64), return_inverse=True)[1].ravel()
    cand = data[:, 1].astype(np.intp)
    mu = float(data[:, 2].mean())
    centred = data[:, 2] - mu  # scores less mu
    counts = np.bincount(cand, minlength=n)
    sizes = np.bincount(call).astype(np.float64)
    present = counts > 0

    def within_calls(values: np.ndarray) -> np.ndarray:  # per observation: its call's mean of ``values``
        return (np.bincount(call, values) / sizes)[call]

    def normal(theta: np.ndarray) -> np.ndarray:  # (D - N M^-1 N^T) theta
        return np.asarray(counts * theta - np.bincount(cand, within_calls(theta[cand]), minlength=n))

    def centre(values: np.ndarray) -> np.ndarray:  # the constraint: judged candidates' values sum to 0
        values[~present] = 0.0
        values[present] -= values[present].mean()
        return values

    rhs = centre(np.bincount(cand, centred - within_calls(centred), minlength=n))
    theta = centre(np.zeros(n) if start is None else np.asarray(start, dtype=np.float64) - mu)
    residual = rhs - normal(theta)
    direction = residual.copy()
    rr, stop = float(residual @ residual), tolerance**2 * max(float(rhs @ rhs), 1e-300)
    iterations = 0
    while rr > stop and iterations < max_iter:
        iterations += 1
        product = normal(direction)
        step = rr / float(direction @ product)
        theta += step * direction
        residual = centre(residual - step * product)
        rr, previous = float(residual @ residual), rr
        direction = residual + (rr / previous) * direction
    offset = np.bincount(call, centred - theta[cand]) / sizes
    residuals = centred - theta[cand] - offset[call]
    dof = len(observations) - int(present.sum()) - len(sizes) + 1
    sd = math.sqrt(float(residuals @ residuals) / dof) if dof > 0 else 0.0
    m = len(observations) / len(sizes)
    inflate = math.sqrt(m / (m - 1)) if m > 1 else 1.0
    return WindowFit(
        scores=(mu + theta).tolist(),
        standard_errors=[sd / math.sqrt(x) * inflate if x else math.inf for x in counts.tolist()],
        appearances=counts.tolist(),
        residual_sd=sd,
        components=_components(n, call, cand),
        iterations=iterations,
    )


def _components(n: int, call: np.ndarray, cand: np.ndarray) -> int:
    """Connected groups of judged candidates, two candidates linked when one call judged both: each candidate's label
    becomes the smallest label among the calls it was in until nothing changes (as many passes as the design's
    diameter, a handful)."""
    label = np.arange(n)
    lowest = np.empty(int(call.max()) + 1, dtype=label.dtype)
    while True:
        lowest.fill(n)
        np.minimum.at(lowest, call, label[cand])
        new = label.copy()
        np.minimum.at(new, cand, lowest[call])
        if np.array_equal(new, label):
            return len(np.unique(label[cand]))
        label = new
