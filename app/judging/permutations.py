"""Permutation schedules for PCFJudge: pure, deterministic, reused across items (paper §3.3, §4.2).

A schedule for ``n`` candidates is a list of permutations of ``range(n)``; ``perm[p]`` is the index of the
original candidate shown at displayed position ``p``.

Construction (documented choice; the paper only says "predetermined permutations"):
  * run 0 is the identity (canonical input order), so K=1 consensus equals the direct judge;
  * runs are taken greedily: each next permutation is the one, among all n! (or a seeded sample of them
    when n! is large), that most reduces the imbalance of the candidate-by-position visit counts, ties broken
    by a seeded random order. Greedy extension gives the prefix property for free: the K=3 schedule is the
    first 3 runs of the K=7 schedule;
  * no permutation repeats, so K is capped at n!.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from functools import lru_cache

Permutation = tuple[int, ...]

# Above this many permutations the candidate pool is a seeded sample of distinct random permutations.
_MAX_POOL = 720
_MAX_K = 64


def max_k(n: int) -> int:
    """The largest K a schedule for n candidates can have (n!, capped at the service maximum)."""
    return min(math.factorial(n), _MAX_K)


def schedule(n: int, k: int, seed: int = 0) -> list[Permutation]:
    """The first ``k`` permutations of the deterministic schedule for ``n`` candidates (k capped at n!)."""
    if n < 1:
        raise ValueError("n must be at least 1")
    if k < 1:
        raise ValueError("k must be at least 1")
    return list(_full_schedule(n, seed)[: min(k, max_k(n))])


@lru_cache(maxsize=256)
def _full_schedule(n: int, seed: int) -> tuple[Permutation, ...]:
    rng = random.Random(f"pcfjudge-schedule:{n}:{seed}")
    identity = tuple(range(n))
    pool = _candidate_pool(n, rng)
    rng.shuffle(pool)
    counts = [[0] * n for _ in range(n)]  # counts[candidate][position]
    chosen: list[Permutation] = []
    used: set[Permutation] = set()
    for step in range(max_k(n)):
        best = identity if step == 0 else min((p for p in pool if p not in used), key=lambda p: _cost_after(counts, p))
        chosen.append(best)
        used.add(best)
        for pos, cand in enumerate(best):
            counts[cand][pos] += 1
    return tuple(chosen)


def _candidate_pool(n: int, rng: random.Random) -> list[Permutation]:
    if math.factorial(n) <= _MAX_POOL:
        return [tuple(p) for p in itertools.permutations(range(n))]
    pool: set[Permutation] = set()
    base = list(range(n))
    while len(pool) < _MAX_POOL:
        rng.shuffle(base)
        pool.add(tuple(base))
    return sorted(pool)


def _cost_after(counts: list[list[int]], perm: Permutation) -> int:
    """Sum of squared visit counts after adding ``perm``: minimal when visits are spread evenly."""
    return sum(2 * counts[cand][pos] + 1 for pos, cand in enumerate(perm))


def validate_explicit(perms: Sequence[Sequence[int]], n: int) -> list[Permutation]:
    """Check client-supplied permutations; raises ValueError with a message a client can act on."""
    if not perms:
        raise ValueError("permutations must contain at least one permutation")
    out: list[Permutation] = []
    for i, perm in enumerate(perms):
        if sorted(perm) != list(range(n)):
            raise ValueError(
                f"permutations[{i}] must be an ordering of the candidate indices 0..{n - 1}, each exactly once"
            )
        out.append(tuple(perm))
    return out


def position_counts(perms: Sequence[Permutation], n: int) -> list[list[int]]:
    """counts[candidate][position]: how often each candidate was displayed at each position."""
    counts = [[0] * n for _ in range(n)]
    for perm in perms:
        for pos, cand in enumerate(perm):
            counts[cand][pos] += 1
    return counts
