"""Evaluation metrics for the paper's tables (§4.2–4.5, §5): pure functions, no I/O, standard library only.

Percentages are floats in [0, 100], unrounded; rounding is the caller's job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import comb

_DECISIONS = frozenset({"A>B", "B>A", "A=B"})
_FLIPPED = {"A>B": "B>A", "B>A": "A>B", "A=B": "A=B"}
# JudgeBench's four reporting categories, matched by prefix as in JudgeBench's own run_judge.py.
JUDGEBENCH_BUCKETS = ("mmlu-pro", "livebench-reasoning", "livebench-math", "livecodebench")


@dataclass(frozen=True)
class PairedCounts:
    """Per-item comparison of a method against the direct baseline (paper Table 1 "Imp./Reg./Same")."""

    improved: int
    regressed: int
    unchanged: int


def sign_test(improved: int, regressed: int) -> float:
    """Exact two-sided sign test over discordant pairs: min(1, 2·P(X ≤ min(a, b))), X ~ Bin(a+b, 1/2).

    Computed exactly with integers/fractions (no scipy) so results match the paper (21 vs 5 → 0.0025).
    No discordant pairs (0 vs 0) gives 1.0.
    """
    if improved < 0 or regressed < 0:
        raise ValueError("counts must be non-negative")
    n = improved + regressed
    k = min(improved, regressed)
    tail = Fraction(sum(comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def top1_score(winners: Sequence[str], correct: str) -> float:
    """Top-1 credit for one item: 1/|winners| if the correct candidate is among the (tied) winners, else 0.

    Duplicate ids in ``winners`` are counted once; no winners (a failed item) scores 0.
    """
    distinct = set(winners)
    return 1.0 / len(distinct) if correct in distinct else 0.0


def paired_counts(direct: Sequence[float], method: Sequence[float]) -> PairedCounts:
    """Count items where the method's per-item score is above / below / equal to the direct baseline's."""
    if len(direct) != len(method):
        raise ValueError(f"length mismatch: {len(direct)} direct vs {len(method)} method scores")
    improved = sum(1 for d, m in zip(direct, method, strict=True) if m > d)
    regressed = sum(1 for d, m in zip(direct, method, strict=True) if m < d)
    return PairedCounts(improved, regressed, len(direct) - improved - regressed)


def accuracy(scores: Sequence[float]) -> float:
    """Mean per-item score as a percentage (bools and 1/|tie| credits alike); empty input is an error."""
    if not scores:
        raise ValueError("accuracy of an empty sequence is undefined")
    return 100.0 * sum(scores) / len(scores)


def normalize_decision(decision: str | None) -> str | None:
    """Canonical "A>B" / "B>A" / "A=B" for a judge decision, or None if missing or unrecognised.

    Whitespace is dropped and repeated '>' collapsed, so Arena-Hard style "A>>B" counts as "A>B".
    """
    if decision is None:
        return None
    canonical = re.sub(r">+", ">", "".join(decision.split()))
    return canonical if canonical in _DECISIONS else None


def flip_label(label: str) -> str:
    """The same preference seen with responses A and B swapped ("A>B" <-> "B>A"; "A=B" stays)."""
    canonical = normalize_decision(label)
    if canonical is None:
        raise ValueError(f"not a pairwise label: {label!r}")
    return _FLIPPED[canonical]


def judgebench_pair_score(label: str, decisions: Sequence[str | None]) -> bool:
    """JudgeBench's two-game metric for one pair: is the order-corrected vote total positive?

    ``decisions`` are the two games; the second was judged with responses swapped, so it is flipped first.
    Each decision scores +1 if it equals the label, −1 if it equals the flipped label, else 0 (ties against
    a strict label, failed games (None) and unparseable strings). Order-inconsistent pairs sum to 0 → wrong.
    """
    if len(decisions) != 2:
        raise ValueError(f"JudgeBench scores exactly two games per pair, got {len(decisions)}")
    gold = normalize_decision(label)
    if gold is None:
        raise ValueError(f"not a pairwise label: {label!r}")
    first = normalize_decision(decisions[0])
    second = normalize_decision(decisions[1])
    total = 0
    for decision in (first, None if second is None else _FLIPPED[second]):
        if decision == gold:
            total += 1
        elif decision == _FLIPPED[gold]:
            total -= 1
    return total > 0


def source_bucket(source: str) -> str:
    """Map a JudgeBench ``source`` (e.g. "mmlu-pro-law") to one of JudgeBench's four reporting categories."""
    for bucket in JUDGEBENCH_BUCKETS:
        if source.startswith(bucket):
            return bucket
    raise ValueError(f"unknown JudgeBench source: {source!r}")


def source_macro(correct_by_source: Mapping[str, Sequence[bool]]) -> float:
    """Paper's JudgeBench figure (§4.4): accuracy within each bucket present, then the unweighted mean (%).

    Generic over its keys; the harness passes raw ``source`` values (mmlu-pro-law, mmlu-pro-history, …,
    livebench-math), the paper's buckets, which are finer than JudgeBench's four categories. Keys with no
    items are skipped; if none has items the result is undefined (ValueError).
    """
    per_bucket = [accuracy(values) for values in correct_by_source.values() if values]
    if not per_bucket:
        raise ValueError("source_macro needs at least one non-empty bucket")
    return sum(per_bucket) / len(per_bucket)
