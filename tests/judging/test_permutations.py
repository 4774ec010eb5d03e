"""Schedule properties: canonical first, prefix, balance, cap at n!, determinism, explicit orders."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pcfjudge.judging import permutations as perms

ns = st.integers(1, 16)


@given(ns, st.integers(1, 64), st.integers(0, 50))
def test_run_zero_is_canonical_and_all_are_permutations(n: int, k: int, seed: int) -> None:
    sched = perms.schedule(n, k, seed)
    assert sched[0] == tuple(range(n))
    assert all(sorted(p) == list(range(n)) for p in sched)
    assert len(set(sched)) == len(sched)


@given(ns, st.integers(1, 64), st.integers(1, 64), st.integers(0, 50))
def test_prefix_property(n: int, k1: int, k2: int, seed: int) -> None:
    small, large = sorted((k1, k2))
    assert perms.schedule(n, large, seed)[:small] == perms.schedule(n, small, seed)


@given(ns, st.integers(1, 64), st.integers(0, 50))
def test_positions_balanced_as_evenly_as_k_allows(n: int, k: int, seed: int) -> None:
    sched = perms.schedule(n, k, seed)
    counts = [c for row in perms.position_counts(sched, n) for c in row]
    assert max(counts) - min(counts) <= 1
    if len(sched) % n == 0:  # whole blocks: every candidate in every position exactly K/n times
        assert set(counts) == {len(sched) // n}


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_capped_at_n_factorial(n: int) -> None:
    assert len(perms.schedule(n, 64)) == math.factorial(n)
    assert perms.max_k(5) == 64


def test_deterministic_and_seeded() -> None:
    assert perms.schedule(4, 7, 0) == perms.schedule(4, 7, 0)
    assert perms.schedule(4, 24, 0) != perms.schedule(4, 24, 1)
    # The documented K=7 schedule for four candidates (seed 0): one full rotation block, then three more.
    assert perms.schedule(4, 7, 0)[:4] == [(0, 1, 2, 3), (1, 2, 3, 0), (2, 3, 0, 1), (3, 0, 1, 2)]


def test_explicit_permutations_validated() -> None:
    assert perms.validate_explicit([[1, 0, 2]], 3) == [(1, 0, 2)]
    with pytest.raises(ValueError, match=r"permutations\[1\]"):
        perms.validate_explicit([[0, 1, 2], [0, 0, 2]], 3)
    with pytest.raises(ValueError, match="at least one"):
        perms.validate_explicit([], 3)
    with pytest.raises(ValueError):
        perms.schedule(3, 0)
