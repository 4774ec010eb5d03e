"""A boundary ranking's stages: who goes on after each stage, and how many, from the calls left (pure).

A request that asks for its top ``top_n`` (rerank's ``top_n``, listwise's winner) does not need every candidate
judged as often as every other: it needs the top settled. So after one uniform round (every candidate shown once),
it runs a *tournament with one scale*: each stage judges the candidates still in contention in fresh windows
(``windows.windows_over``: a seeded shuffle, display positions balanced), and after it the fit over every judgment so
far (``window_fit``) chooses who goes on. The stages shrink the field by a constant share ``keep`` until at most
``focus`` candidates are left; the calls that remain then go to the ``top_n`` boundary (``window_rounds``).

* **keep** is the largest of ``KEEPS`` whose stages fit the calls left (a larger budget eliminates more gently: a
  document is dropped only where many others beat it); with none of them, the smallest, and the budget stops it.
* **how many, once the fit has one scale** (after the first stage, usually): no more than could still be in the
  top ``focus`` (a fitted score within two standard errors of its last place, or above it), so a clear field
  shrinks at once and the calls go where the doubt is;
* **who goes on**: the best of every window of the latest stage (so every window of every stage is linked to the
  next), then the best of the rest by fitted score. Stages go on until one scale links every group of candidates
  (``links``; ``least_stage_calls`` counts the stages small windows need); a stage whose shuffle would not link the
  groups is dealt across them instead (``windows.windows_linking``). The
  fit uses every judgment so far, not only the latest window's: a strong candidate that one lenient call placed
  low is carried by its other appearances.
* **focus** is the field the last stage holds: ``FOCUS_SHARE`` × max(``top_n``, ``DEFAULT_FOCUS``), at least one
  window. A ``top_n`` up to ``DEFAULT_FOCUS`` therefore runs the very same plan: ``top_n`` 3's results are the
  first three of ``top_n`` 10's, at the same budget.

Why a tournament: RankGPT's sliding window carries the best forward through one pass, so one bad call (a judge's
primacy bias favouring whatever is shown first) can lose a top document for good; TourRank repeats whole
tournaments to average that out. Here each stage's decision rests on every judgment of the candidates so far, and
the stages cost about as much as a sliding window (a halving tournament: about two rounds' worth of calls).
``pcfjudge bench ranking`` measures them side by side (docs/performance.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pcfjudge.judging.windows import Window, window_sizes

DEFAULT_FOCUS = 10
"""The top a boundary ranking settles at least (Cohere's and RankGPT's usual top 10)."""
FOCUS_SHARE = 1.5
KEEPS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.25)
"""The shares of candidates a stage may keep, most careful first."""


def focus_size(top_n: int, window: int) -> int:
    """The field the last stage holds (see the module docstring)."""
    return max(window, math.ceil(FOCUS_SHARE * max(top_n, DEFAULT_FOCUS)))


def windows_for(m: int, window: int) -> int:
    return len(window_sizes(m, window))


def stage_calls(alive: int, window: int, focus: int, keep: float) -> int:
    """The calls of the stages from ``alive`` candidates down to ``focus``, each keeping ``keep`` of the last."""
    calls = 0
    while alive > focus:
        alive = max(focus, math.ceil(alive * keep))
        calls += windows_for(alive, window)
    return calls


def least_stage_calls(n: int, window: int, focus: int) -> int:
    """The fewest calls of a boundary ranking of ``n``: one uniform round, then stages at the smallest keep down to
    ``focus`` and on until they can link every group into one scale. A stage's ``s`` survivors link its ``v``
    windows and the ``g`` groups before it, ``g + v`` nodes, by ``s`` edges: at least ``g + v - s`` groups remain
    (a necessary bound: windows of 16 link 1,000 documents' 63 first windows in one stage; windows of 3 need more
    stages than the shrinking alone)."""
    calls = groups = windows_for(n, window)
    alive = n
    while alive > focus or groups > 1:
        alive = max(focus, math.ceil(alive * KEEPS[-1])) if alive > focus else alive
        stage = windows_for(alive, window)
        calls += stage
        groups = max(1, groups + stage - alive)
    return calls


def next_size(alive: int, window: int, focus: int, calls_left: int) -> int:
    """How many candidates the next stage holds: the most careful keep whose stages fit ``calls_left`` (keeping one
    more look at the last field when that fits too), else the smallest keep."""
    again = windows_for(focus, window)
    for spare in (again, 0):
        for keep in KEEPS:
            if stage_calls(alive, window, focus, keep) + spare <= calls_left:
                return max(focus, math.ceil(alive * keep))
    return max(focus, math.ceil(alive * KEEPS[-1]))


def plausible(scores: Sequence[float], errors: Sequence[float], focus: int, z: float) -> int:
    """How many candidates could still be in the top ``focus``: those whose fitted score is within ``z`` standard
    errors of the ``focus``-th best score, or above it."""
    bar = sorted(scores, reverse=True)[focus - 1]
    return sum(1 for score, error in zip(scores, errors, strict=True) if score + z * error >= bar)


def links(windows: Sequence[Window], groups: Sequence[int]) -> bool:
    """Whether ``windows`` join every group their candidates come from into one (a union-find over the groups)."""
    parent: dict[int, int] = {}

    def root(g: int) -> int:
        while parent.setdefault(g, g) != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    for window in windows:
        first = root(groups[window[0]])
        for c in window[1:]:
            parent[root(groups[c])] = first
    return len({root(g) for g in list(parent)}) == 1


def survivors(scores: Sequence[float], latest: Sequence[Window], size: int) -> list[int]:
    """The ``size`` candidates that go on: the best (by fitted score) of each window of ``latest``, then the best of
    the rest of its candidates; in index order."""

    def by_score(c: int) -> tuple[float, int]:
        return (-scores[c], c)

    chosen = {min(w, key=by_score) for w in latest if w}
    rest = sorted({c for w in latest for c in w} - chosen, key=by_score)
    chosen.update(rest[: max(0, size - len(chosen))])
    return sorted(chosen)
