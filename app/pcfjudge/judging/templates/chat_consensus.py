"""The verdict of every order as one, in the caller's order (the chat door's consensus).

Each order's verdict is first mapped back to the caller's order (``to_caller``). Then:

* a pair: the verdict that holds in every order. All orders prefer the same candidate → that preference at the
  weakest strength any order gave (Arena-Hard: ``A>>B`` and ``A>B`` → ``A>B``); all call it a tie → a tie; a split
  (the preference follows the position) → the template's tie; a template without a tie gets a coin that does not
  depend on the order (``order_free_coin``: the same candidate whichever order the caller sent), so splits count
  half each way over many items, as a tie would.
* a list (markers): paper Eq. 1–5 (``consensus.aggregate``, the proposed weights) over the orders' ranks, each run's
  score ``100·(n − rank)/(n − 1)``; candidates within the 0.5-point tie tolerance of each other share a rank.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from pcfjudge.judging.consensus import PRESETS, TIE_TOLERANCE, aggregate
from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments
from pcfjudge.judging.templates.template_base import Template
from pcfjudge.judging.templates.template_verdicts import Verdict


@dataclass(frozen=True, slots=True)
class Decision:
    """The consensus verdict (caller's order), the share of orders that agree with its direction, and how it was
    reached: ``split`` (the orders disagreed), ``coin`` (a split the template could not call a tie)."""

    verdict: Verdict
    agreement: float
    split: bool
    coin: bool = False


def to_caller(verdict: Verdict, order: Sequence[int]) -> Verdict:
    """A verdict in displayed positions as one in the caller's (``order[p]``: the caller's index shown at p)."""
    if isinstance(verdict, int):
        return verdict if order[0] == 0 else -verdict
    ranks = [0] * len(order)
    for position, shown in enumerate(order):
        ranks[shown] = verdict[position]
    return tuple(ranks)


def label_map(labels: Sequence[str], order: Sequence[int]) -> dict[str, str]:
    """Displayed label → the caller's label of the candidate shown there."""
    return {labels[p]: labels[shown] for p, shown in enumerate(order)}


def order_free_coin(candidates: Sequence[str]) -> int:
    """+1 or −1 from the two texts as a set: the caller's first wins when its digest is the smaller."""
    a, b = (hashlib.sha256(t.encode()).digest() for t in candidates)
    return 1 if a <= b else -1


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


def pair_decision(verdicts: Sequence[int], template: Template, candidates: Sequence[str]) -> Decision:
    signs = {_sign(v) for v in verdicts}
    if len(signs) == 1:
        sign = signs.pop()
        verdict = sign * min(abs(v) for v in verdicts)
        return Decision(verdict, 1.0, split=False)
    if template.verdicts.tie:
        verdict, coin = 0, False
    else:
        verdict, coin = order_free_coin(candidates), True
    agreeing = sum(1 for v in verdicts if _sign(v) == _sign(verdict))
    return Decision(verdict, agreeing / len(verdicts), split=True, coin=coin)


def list_decision(verdicts: Sequence[tuple[int, ...]]) -> Decision:
    n = len(verdicts[0])
    ids = [str(i) for i in range(n)]
    runs = [
        RunJudgments(
            {
                str(i): CandidateJudgment(100.0 * (n - r) / (n - 1), float(r), False, False, False)
                for i, r in enumerate(ranks)
            }
        )
        for ranks in verdicts
    ]
    result = aggregate(ids, [runs], PRESETS["proposed"])
    ranks, place, leader = [0] * n, 0, None
    for cid in result.ranking:
        value = result.candidates[cid].consensus
        if leader is None or value < leader - TIE_TOLERANCE:
            place, leader = place + 1, value
        ranks[int(cid)] = place
    verdict = tuple(ranks)
    tops = {i for i, r in enumerate(verdict) if r == 1}
    agreeing = sum(1 for v in verdicts if {i for i, r in enumerate(v) if r == 1} == tops)
    return Decision(verdict, agreeing / len(verdicts), split=len(set(verdicts)) > 1)


def decide(verdicts: Sequence[Verdict], template: Template, candidates: Sequence[str]) -> Decision:
    """The consensus of the orders' verdicts (each already in the caller's order; at least one)."""
    if template.verdicts.pairwise:
        return pair_decision([v for v in verdicts if isinstance(v, int)], template, candidates)
    return list_decision([v for v in verdicts if isinstance(v, tuple)])


def verdict_label(verdict: Verdict, labels: Sequence[str]) -> str:
    """A verdict in words of its labels: ``A>B``, ``A>>B``, ``A=B``, ``B>A``; a list's ``B>A=C``."""
    if isinstance(verdict, int):
        first, second = labels[0], labels[1]
        if verdict == 0:
            return f"{first}={second}"
        better, worse = (first, second) if verdict > 0 else (second, first)
        return f"{better}{'>' * abs(verdict)}{worse}"
    tiers = [[label for label, r in zip(labels, verdict, strict=True) if r == place] for place in sorted(set(verdict))]
    return ">".join("=".join(tier) for tier in tiers)
