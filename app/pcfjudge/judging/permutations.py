"""Permutation schedules for PCFJudge: pure, deterministic, reused across items (paper §3.3, §4.2).

A schedule for ``n`` candidates is a list of permutations of ``range(n)``; ``perm[p]`` is the index of the
original candidate shown at displayed position ``p``.

Construction (documented choice; the paper only says "predetermined permutations"):
  * runs come in blocks of n: block b is the n cyclic rotations of a base permutation
    (``perm_j[p] = base[(p + j) % n]``), so within and at the end of every block each candidate has visited each
    displayed position equally often, give or take one visit: balanced as evenly as any K allows;
  * block 0's base is the identity, so run 0 is the canonical (input) order and K=1 consensus is the direct judge;
  * later bases are drawn by a seeded RNG among the rotation classes not used yet (each class is identified by the
    member that shows candidate 0 first), so no permutation repeats and K is capped at n!;
  * the schedule is built once for (n, seed) and cut to K, which gives the prefix property: the K=3 schedule is
    the first 3 runs of the K=7 schedule.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from functools import lru_cache

from pcfjudge.types import MAX_K

Permutation = tuple[int, ...]


def max_k(n: int) -> int:
    """The largest K a schedule for n candidates can have (n!, capped at MAX_K)."""
    return min(math.factorial(n), MAX_K)


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
    bases = [tuple(range(n))]
    used = {bases[0]}
    blocks = -(-max_k(n) // n)
    if math.factorial(n - 1) <= 5040:  # few classes: shuffle them all
        classes = [(0, *rest) for rest in itertools.permutations(range(1, n))]
        rng.shuffle(classes)
        bases += [c for c in classes if c not in used][: blocks - 1]
    while len(bases) < blocks:  # many classes: draw until unused
        rest = list(range(1, n))
        rng.shuffle(rest)
        base = (0, *rest)
        if base not in used:
            used.add(base)
            bases.append(base)
    out = [tuple(base[(p + j) % n] for p in range(n)) for base in bases for j in range(n)]
    return tuple(out[: max_k(n)])


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
