"""Windows over many candidates: which candidates one judge call shows, and in which order (issue 30's design).

A request may carry more candidates than one prompt holds (``PCFJ_MAX_CANDIDATES``, the *window*). Each *round*
shows every candidate exactly once: a seeded shuffle of all N candidates is cut into ``ceil(N / w)`` windows of
near-equal size (sizes differ by at most one, none below two), so in every round a candidate meets other neighbours
and no window is a lone leftover. Within a window, display positions are handed out greedily so that each candidate
has been shown at each relative position (first, last, in between) about equally often across its rounds: the judge's
position bias then averages out of every candidate's scores, as the permutation schedule does within one prompt.

Pure and deterministic: the same (N, window, rounds, seed) always gives the same windows, so each window judgment is an
ordinary cached run (keyed by its window's content and order) that a retry, another replica or a larger request
reuses. Up to one window (N ≤ w) this module is not used: the request is one ordinary listwise judgment.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

Window = tuple[int, ...]
"""Candidate indices (into the request's candidates) in displayed order."""


def window_sizes(n: int, window: int) -> list[int]:
    """How one round cuts ``n`` candidates: ``ceil(n / window)`` windows, sizes within one of each other."""
    if window < 2:
        raise ValueError("a window holds at least 2 candidates")
    if n <= window:
        return [n]
    count = math.ceil(n / window)
    base, extra = divmod(n, count)
    return [base + 1 if i < extra else base for i in range(count)]


def plan_windows(
    n: int, window: int, rounds: int, seed: int = 0, shown: list[list[int]] | None = None
) -> list[list[Window]]:
    """``rounds`` rounds of windows over ``n`` candidates (see the module docstring); round r is ``[r]``.
    ``shown``: each candidate's counts of display positions so far (first, between, last), updated here."""
    if n < 2:
        raise ValueError("windows need at least 2 candidates")
    if rounds < 1:
        raise ValueError("at least one round")
    rng = random.Random(f"pcfjudge-windows:{n}:{window}:{seed}")
    sizes = window_sizes(n, window)
    shown = shown if shown is not None else position_counts(n)
    plan: list[list[Window]] = []
    for _ in range(rounds):
        order = list(range(n))
        rng.shuffle(order)
        round_windows: list[Window] = []
        start = 0
        for size in sizes:
            members = order[start : start + size]
            start += size
            round_windows.append(_place(members, shown, rng))
        plan.append(round_windows)
    return plan


_BUCKETS = 3  # relative display positions: first, between, last (windows of different sizes compare this way)


def position_counts(n: int) -> list[list[int]]:
    """Times each candidate was shown in each relative position bucket: none yet."""
    return [[0] * _BUCKETS for _ in range(n)]


def _place(members: Sequence[int], shown: Mapping[int, list[int]] | list[list[int]], rng: random.Random) -> Window:
    """Display order of one window: first goes the member shown first least often so far, last the one (of the rest)
    shown last least often (ties: a seeded draw); they carry most of a judge's position bias. The rest, in a seeded
    shuffle, all count as "between": their order among themselves does not change the balance."""
    left = list(members)
    rng.shuffle(left)
    first = min(left, key=lambda c: shown[c][0])
    left.remove(first)
    shown[first][0] += 1
    if not left:
        return (first,)
    last = min(left, key=lambda c: shown[c][_BUCKETS - 1])
    left.remove(last)
    shown[last][_BUCKETS - 1] += 1
    for c in left:
        shown[c][1] += 1
    return (first, *left, last)


def uncertain_at(scores: Sequence[float], errors: Sequence[float], top_n: int, z: float = 1.0) -> list[int]:
    """Candidates whose fitted score is within ``z`` standard errors of the ``top_n`` boundary (the midpoint between
    the ``top_n``-th and the next score), in index order; none when ``top_n`` is not inside the list."""
    n = len(scores)
    if not 0 < top_n < n:
        return []
    ranked = sorted(range(n), key=lambda c: -scores[c])
    boundary = (scores[ranked[top_n - 1]] + scores[ranked[top_n]]) / 2
    return [c for c in range(n) if abs(scores[c] - boundary) <= z * errors[c]]


def windows_over(
    candidates: Sequence[int],
    n: int,
    window: int,
    seed: int = 0,
    times: int = 1,
    shown: list[list[int]] | None = None,
) -> list[Window]:
    """``times`` rounds of windows over ``candidates`` alone (of ``n``), each a fresh seeded shuffle, display
    positions balanced across them (and the earlier windows counted in ``shown``) as in ``plan_windows``."""
    rng = random.Random(f"pcfjudge-boundary:{n}:{seed}:{len(candidates)}")
    shown = shown if shown is not None else position_counts(n)
    windows: list[Window] = []
    for _ in range(times):
        order = list(candidates)
        rng.shuffle(order)
        start = 0
        for size in window_sizes(len(order), window):
            windows.append(_place(order[start : start + size], shown, rng))
            start += size
    return windows


def windows_linking(
    candidates: Sequence[int], groups: Sequence[int], n: int, window: int, seed: int, shown: list[list[int]]
) -> list[Window]:
    """Windows over ``candidates`` that link their ``groups`` (the fit's connected groups) as widely as one pass can:
    the candidates in group order, dealt in turn into the windows, so a group's members land in different windows
    and each window holds members of several groups; display positions balanced as in ``plan_windows``."""
    rng = random.Random(f"pcfjudge-linking:{n}:{seed}:{len(candidates)}")
    order = sorted(candidates, key=lambda c: (groups[c], rng.random()))
    count = len(window_sizes(len(order), window))
    return [_place(order[i::count], shown, rng) for i in range(count)]
