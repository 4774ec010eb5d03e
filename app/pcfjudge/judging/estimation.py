"""Estimation-style prompt detection for APOCJudge's estimation guard (paper §3.5).

On estimation prompts the keyed pass "resolves" the question with its own estimate, and then prefers whichever
response lands nearer that guess; the paper skips keyed overrides there. This is a documented heuristic, not a
classifier; a request may force the answer with ``estimation: true | false``.

A question is estimation-style when it contains a *cue* and is not a *closed-answer* question:

cues (case-insensitive)
  ballpark                 "ballpark", "ball-park figure"
  fermi                    "Fermi problem/question/estimate/estimation", "Fermi-style" (not "Fermi level/energy")
  order_of_magnitude       "order(s) of magnitude"
  back_of_envelope         "back-of-the-envelope", "back of envelope"
  approximate_quantity     "roughly / approximately / about / around / ~ how many|much|long|far|big|large|old|tall|…"
  rough_estimate           "rough / quick / crude / ballpark / approximate estimate|guess|figure|count"
  estimate_quantity        "estimate how …", "estimate the number/total/amount/size/population/count/cost of"
  asks_for_estimate        "give/make/provide (me) an estimate", "what is your (best) estimate"
  how_many_in_world        "how many … are/were there in the world / on Earth / in <Capitalised place>",
                           "how many … exist (in the world|on Earth)", "how many … fit in/into …"
closed-answer markers (suppress every cue)
  an explicit list of at least three lettered options, one per line — "(A) …", "(B) …", "(C) …": the answer set is
  closed, so the keyed pass picks an option rather than inventing an estimate (MMLU-Pro's "find approximately how many
  genes …" is such a computation).

Plain "how many … are there" without a real-world scope (counting puzzles: "how many pieces are there after the
cuts?") and the bare words "estimate"/"approximately" in a calculation ("obtain an estimate of the diameter",
"calculate approximate values") are deliberately not cues: they occur in exact-answer questions (JudgeBench).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_QUANTITY = r"(?:many|much|long|far|big|large|old|tall|high|heavy|fast|often|deep|wide)"

CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.I))
    for name, pattern in (
        ("ballpark", r"\bball-?park\b"),
        ("fermi", r"\bfermi[- ](?:problem|question|estimat\w*|calculation|style|approach|method)"),
        ("order_of_magnitude", r"\borders? of magnitude\b"),
        ("back_of_envelope", r"\bback[- ]of[- ](?:the[- ])?envelope\b"),
        ("approximate_quantity", rf"(?:\b(?:roughly|approximately|approx\.?|about|around)|~)\s*how {_QUANTITY}\b"),
        ("rough_estimate", r"\b(?:rough|quick|crude|ballpark|approximate)\s+(?:estimate|guess|figure|count)\b"),
        (
            "estimate_quantity",
            r"\bestimate\s+(?:how\b|the\s+(?:number|total|amount|size|population|count|cost|volume|mass|weight)\b)",
        ),
        (
            "asks_for_estimate",
            r"\b(?:give|make|provide|offer)\s+(?:me\s+|us\s+)?(?:an?|your)\s+(?:\w+\s+)?estimate\b"
            r"|\bwhat(?:'s| is)\s+your\s+(?:best\s+)?estimate\b",
        ),
        (
            "how_many_in_world",
            r"\bhow many\b[^.?!\n]{1,80}?\b(?:(?:are|were|is) there|exist|live|living)\s+"
            r"(?:in the world|worldwide|on (?:the )?earth|in (?:the )?(?-i:[A-Z])[\w.]*)"
            r"|\bhow many\b[^.?!\n]{1,80}?\b(?:fit|would fit|could fit|can fit)\s+(?:in|into|inside)\b",
        ),
    )
)

_OPTION_LINE = re.compile(r"^\s*\(?([A-J])\)\s+\S", re.M)


@dataclass(frozen=True, slots=True)
class EstimationCheck:
    """Whether a question is treated as estimation-style, who decided (request or heuristic) and the cue found."""

    estimation: bool
    source: Literal["request", "heuristic"]
    cue: str | None = None


def closed_answer(question: str) -> bool:
    """True when the question lists at least three lettered options (a multiple-choice question)."""
    return len(set(_OPTION_LINE.findall(question))) >= 3


def find_cue(question: str) -> str | None:
    """The name of the first estimation cue in ``question`` (``None`` for none or a closed-answer question)."""
    if closed_answer(question):
        return None
    return next((name for name, pattern in CUES if pattern.search(question)), None)


def check_estimation(question: str, forced: bool | None = None) -> EstimationCheck:
    """The estimation decision for a request: ``forced`` (the request's ``estimation`` field) wins when set."""
    if forced is not None:
        return EstimationCheck(forced, "request", None)
    cue = find_cue(question)
    return EstimationCheck(cue is not None, "heuristic", cue)
