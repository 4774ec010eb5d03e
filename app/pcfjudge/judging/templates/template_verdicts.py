"""How a framework's judge answers carry a verdict (``Verdicts``), and the two shapes most of its parsers share:
``Tokens`` (which of a few strings the answer holds) and ``replies`` (one fixed wording per verdict).

Verdicts are in displayed positions. A pair's verdict is an integer: how much the first shown candidate beats the
second (``+1`` first better, ``-1`` second better, ``0`` a tie; Arena-Hard's ``A>>B`` scale is ``±2``). A list's
verdict is the rank of each displayed position (1 best; equal ranks tie).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

PairVerdict = int
ListVerdict = tuple[int, ...]
Verdict = PairVerdict | ListVerdict
Reader = Callable[[str, tuple[str, ...]], Verdict | None]
Writer = Callable[[Verdict, tuple[str, ...]], str]

STANDALONE_AB = re.compile(r"(?<![A-Za-z])[AB](?![A-Za-z])")
"""The label A or B standing alone (not the A of "Assistant")."""


@dataclass(frozen=True, slots=True)
class Verdicts:
    """A framework's verdict format: ``read``, its own parser; ``write``, an answer that parser reads as a verdict;
    ``mention``, what in an answer names a label (relabelled label by label with ``token``); ``tie``, whether it
    can say "tie"; ``scale``, its strongest pair verdict; ``pairwise``, a pair's verdict (else a list's ranks)."""

    read: Reader
    write: Writer
    mention: re.Pattern[str]
    token: re.Pattern[str] = STANDALONE_AB
    tie: bool = True
    scale: int = 1
    pairwise: bool = True

    def relabel(self, answer: str, mapping: dict[str, str]) -> str:
        """``answer`` with every label it names replaced through ``mapping`` (displayed label → caller's label)."""

        def swap(match: re.Match[str]) -> str:
            return self.token.sub(lambda t: mapping.get(t.group(0), t.group(0)), match.group(0))

        return self.mention.sub(swap, answer)


@dataclass(frozen=True, slots=True)
class Tokens:
    """A parser that reads the verdict from which of ``table``'s strings the answer holds: the first in the table's
    order that it contains (``first``: FastChat, RewardBench), the one it contains when it contains only one
    (``alone``: JudgeBench), or the whole answer, stripped (``whole``: AlpacaEval's one-token answer)."""

    table: tuple[tuple[str, int], ...]
    rule: Literal["first", "alone", "whole"] = "first"

    def __call__(self, answer: str, labels: tuple[str, ...] = ()) -> Verdict | None:
        if self.rule == "whole":
            return dict(self.table).get(answer.strip())
        held = [verdict for text, verdict in self.table if text in answer]
        return held[0] if held and (self.rule == "first" or len(held) == 1) else None


def replies(table: Mapping[int, str]) -> Writer:
    """A writer that answers each pair verdict in the template's own fixed wording."""

    def write(verdict: Verdict, labels: tuple[str, ...] = ()) -> str:
        assert isinstance(verdict, int), "a pair template writes a pair's verdict"
        return table[verdict]

    return write
