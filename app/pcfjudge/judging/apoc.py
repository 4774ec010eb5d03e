"""APOCJudge decision rules (paper §3.5) as pure functions: verdicts and flags in, decision out. No I/O.

Verdicts are always in the ORIGINAL labels (A = ``response_a``); the swapped pass is mapped back before it gets here.

Order consensus: the direct (A first) and swapped (B first) verdicts agree when they are equal. A tie is an ordinary
third verdict: (tie, tie) agrees; a tie in only one order is a disagreement. The override candidate is always the
swapped-order verdict (which may be "tie").

Keyed confirmation runs only when both orders succeeded and disagree, the request did not disable it and the prompt
is not estimation-style (``disabled`` is reported before ``estimation`` when both hold). The override — switching
from the direct verdict to the swapped one — is accepted only when the keyed verdict equals the swapped verdict
(a keyed "tie" confirms a swapped "tie"); in every other case the direct verdict stands.

Failures: if one order failed there is nothing to arbitrate; the surviving order's verdict is the answer
(``direct_only`` / ``swapped_only``) and the keyed pass is skipped (``order_failed``). A failed keyed pass leaves
the direct verdict standing (``keyed_failed``). Both orders failing is an error, handled by the caller.

Preference strength: ``preference_a`` is the mean over the successful passes (direct, swapped, and keyed when it
ran) of 1 for A, 0 for B and 0.5 for a tie — the share of passes favouring A, usable as a reward in [0, 1]. It is
evidence, not the decision: after a rejected override (A, B, tie) it is 0.5 while the winner is A.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["A", "B", "tie"]
Label = Literal["A>B", "B>A", "A=B"]
SkipReason = Literal["estimation", "disabled", "order_failed"]
Basis = Literal[
    "consistent",
    "override_confirmed",
    "override_rejected",
    "keyed_skipped_estimation",
    "keyed_disabled",
    "keyed_failed",
    "direct_only",
    "swapped_only",
    "jury",  # a jury's weighted vote of its jurors' decisions (judging/jury.py)
]

LABELS: dict[Verdict, Label] = {"A": "A>B", "B": "B>A", "tie": "A=B"}
_FLIP: dict[Verdict, Verdict] = {"A": "B", "B": "A", "tie": "tie"}
_VALUE: dict[Verdict, float] = {"A": 1.0, "B": 0.0, "tie": 0.5}


def unswap(verdict: Verdict) -> Verdict:
    """Map a verdict given on the swapped order (B shown first, labelled "A") back to the original labels."""
    return _FLIP[verdict]


def label(winner: Verdict) -> Label:
    """JudgeBench's label format: ``A>B``, ``B>A`` or ``A=B``."""
    return LABELS[winner]


@dataclass(frozen=True, slots=True)
class KeyedPlan:
    """Whether the keyed pass runs; ``needed`` = both orders succeeded and disagree; ``skipped`` = why not."""

    run: bool
    needed: bool
    skipped: SkipReason | None


def plan_keyed(direct: Verdict | None, swapped: Verdict | None, *, enabled: bool, estimation: bool) -> KeyedPlan:
    """Decide whether to run the keyed pass from the two order verdicts (``None`` = that pass failed)."""
    if direct is None or swapped is None:
        return KeyedPlan(run=False, needed=False, skipped="order_failed")
    if direct == swapped:
        return KeyedPlan(run=False, needed=False, skipped=None)
    if not enabled:
        return KeyedPlan(run=False, needed=True, skipped="disabled")
    if estimation:
        return KeyedPlan(run=False, needed=True, skipped="estimation")
    return KeyedPlan(run=True, needed=True, skipped=None)


@dataclass(frozen=True, slots=True)
class Decision:
    winner: Verdict
    direct: Verdict | None
    order_consistent: bool | None  # None when an order failed
    override: bool
    basis: Basis


def decide(direct: Verdict | None, swapped: Verdict | None, keyed: Verdict | None, plan: KeyedPlan) -> Decision:
    """The final verdict from the pass verdicts (``None`` = failed or not run) and the keyed plan."""
    if direct is None and swapped is None:
        raise ValueError("both order passes failed; there is no verdict to decide")
    if direct is None:
        assert swapped is not None
        return Decision(swapped, None, None, False, "swapped_only")
    if swapped is None:
        return Decision(direct, direct, None, False, "direct_only")
    if direct == swapped:
        return Decision(direct, direct, True, False, "consistent")
    if plan.skipped == "disabled":
        return Decision(direct, direct, False, False, "keyed_disabled")
    if plan.skipped == "estimation":
        return Decision(direct, direct, False, False, "keyed_skipped_estimation")
    if keyed is None:
        return Decision(direct, direct, False, False, "keyed_failed")
    if keyed == swapped:
        return Decision(swapped, direct, False, True, "override_confirmed")
    return Decision(direct, direct, False, False, "override_rejected")


def preference_a(verdicts: Iterable[Verdict]) -> float | None:
    """Share of the given (successful) pass verdicts favouring A, ties counting one half; ``None`` if none."""
    values = [_VALUE[v] for v in verdicts]
    return round(sum(values) / len(values), 4) if values else None
