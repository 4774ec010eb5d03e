"""A boundary ranking's stages and steps: who is judged next, and how many (pure).

A request that asks for its top ``top_n`` (rerank's ``top_n``, listwise's winner) does not need every candidate
judged as often as every other: it needs the top settled. So after one uniform round (every candidate shown once,
in disjoint windows: no common scale yet), it runs **stages** until one scale links every candidate, then
**boundary steps** (``window_rounds``). Every call shows a full window: a call costs about the same whether it
shows 9 candidates or 16, and each extra candidate shown is one more look.

* **A stage** judges the best of the field in fresh windows (``windows.windows_over``: a seeded shuffle, display
  positions balanced), and the fit over every judgment so far (``window_fit``) chooses who: the best of every
  window of the latest stage (so every window is linked to the next), then the best of the rest by fitted score, a
  share ``KEEP`` (0.2) of the field, filled up to its windows: one stage usually links every candidate, and the
  calls a larger one would take find more at the boundary. A stage whose shuffle would not link the groups is
  dealt across them instead (``windows.windows_linking``); ``least_stage_calls`` counts the stages small windows
  need to link them.
* **A boundary step**, once the fit has one scale: full windows over the candidates ``nearest`` a boundary of the
  top max(``top_n``, ``DEFAULT_FOCUS``) (its cut, or a place within it), in standard errors (``window_rounds``).
* **focus** (``FOCUS_SHARE`` × max(``top_n``, ``DEFAULT_FOCUS``), at least one window) is the least a stage keeps
  and sizes the least budget. A ``top_n`` up to ``DEFAULT_FOCUS`` runs the very same plan: ``top_n`` 3's results
  are the first three of ``top_n`` 10's, at the same budget.

Why: RankGPT's sliding window carries the best forward through one pass, so one bad call (a judge's primacy bias
favouring whatever is shown first) can lose a top document for good; TourRank repeats whole tournaments to average
that out. Here every decision rests on every judgment of the candidates so far, and the calls after the first stage
go where the doubt is. ``pcfjudge bench ranking`` measures them side by side at equal calls (docs/performance.md):
at 100 documents and a sliding window's 12 calls, one stage cut to two full windows and three one-call boundary
steps found more of the top 10 than gentler stages or under-filled windows did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pcfjudge.judging.windows import Window, window_sizes

DEFAULT_FOCUS = 10
"""The top a boundary ranking settles at least (Cohere's and RankGPT's usual top 10)."""
FOCUS_SHARE = 1.5
KEEP = 0.2
"""The share of its field a stage keeps (then filled to full windows, at least the ``focus``): 100 → 20 (two windows,
32), 256 → 52 (64), 1,000 → 200 (208), 10,000 → 2,000. Enough to hold the top 10 after one look of a judge's noise
in a dense field, and one stage usually links every candidate; the calls a larger stage would take find more as
boundary steps. Measured with ``pcfjudge bench ranking``'s worlds against the rule before (the largest share of
0.9 … 0.25 whose stages down to the focus fit the calls left: 0.4 at 1,000 documents and 124 calls), at the sliding
window's calls and at about twice them, top-10 recall: 1,000 documents and 124 calls (150 worlds) 0.433 → 0.443 in
the dense world and 0.864 → 0.891 with normal truths and a strong bias; 256 documents (uniform, 400 worlds) 0.684 →
0.706 at 31 calls and 0.786 → 0.813 at 60; 100 documents 0.866 → 0.881 at 20 calls, the same plan at 12; 10,000
documents and 1,249 calls (16 worlds) 0.163 → 0.156, within their noise."""


def focus_size(top_n: int, window: int) -> int:
    """The least a stage keeps, and the field the least budget's stages go down to (see the module docstring)."""
    return max(window, math.ceil(FOCUS_SHARE * max(top_n, DEFAULT_FOCUS)))


def windows_for(m: int, window: int) -> int:
    return len(window_sizes(m, window))


def least_stage_calls(n: int, window: int, focus: int) -> int:
    """The fewest calls of a boundary ranking of ``n``: one uniform round, then stages keeping ``KEEP`` down to
    ``focus`` and on until they can link every group into one scale. A stage's ``s`` survivors link its ``v``
    windows and the ``g`` groups before it, ``g + v`` nodes, by ``s`` edges: at least ``g + v - s`` groups remain
    (a necessary bound: windows of 16 link 1,000 documents' 63 first windows in one stage; windows of 3 need more
    stages than the shrinking alone)."""
    calls = groups = windows_for(n, window)
    alive = n
    while alive > focus or groups > 1:
        alive = next_size(alive, focus) if alive > focus else alive
        stage = windows_for(alive, window)
        calls += stage
        groups = max(1, groups + stage - alive)
    return calls


def next_size(alive: int, focus: int) -> int:
    """How many candidates the next stage holds: ``KEEP`` of the ``alive``, at least the ``focus``."""
    return max(focus, math.ceil(alive * KEEP))


def nearest(scores: Sequence[float], errors: Sequence[float], top: int, size: int) -> list[int]:
    """The ``size`` candidates nearest a boundary of the top ``top`` (the midpoints between the 1st and 2nd fitted
    scores, …, the ``top``-th and the next) in standard errors, then in points (errors not measured yet are
    infinite); in index order. So the field holds who could still cross into or out of the top, and the top's own
    order: a winner is looked at again, not only the ``top``-th place."""
    values, spread = np.asarray(scores, dtype=np.float64), np.asarray(errors, dtype=np.float64)
    ranked = np.sort(values)[::-1]
    cuts = (ranked[:top] + ranked[1 : top + 1]) / 2
    distance = np.abs(values[:, None] - cuts[None, :]).min(axis=1)
    doubt = distance / np.maximum(spread, 1e-12)
    return sorted(np.lexsort((np.arange(len(values)), distance, doubt))[:size].tolist())


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
