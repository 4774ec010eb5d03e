"""What a judge-prompt template is: ``Template`` (recognise, read, relabel, write) and ``Found`` (one prompt's
candidates, rendered in any order).

Verdicts are in displayed positions. A pair's verdict is an integer: how much the first shown candidate beats the
second (``+1`` first better, ``-1`` second better, ``0`` a tie; Arena-Hard's ``A>>B`` scale is ``±2``). A list's
verdict is the rank of each displayed position (1 best; equal ranks tie).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Message = tuple[str, str]
"""A chat message: (role, text)."""
PairVerdict = int
ListVerdict = tuple[int, ...]
Verdict = PairVerdict | ListVerdict
Located = tuple[tuple[tuple[int, int], ...], tuple[str, ...], str]
"""A list's candidates in one message: their spans, their labels, and the question (the text before them)."""

STANDALONE_AB = re.compile(r"(?<![A-Za-z])[AB](?![A-Za-z])")
"""The label A or B standing alone (not the A of "Assistant")."""


@dataclass(frozen=True, slots=True)
class Found:
    """One recognised prompt: the caller's messages, where its candidates sit (``spans`` of ``messages[index]``'s
    text, in the caller's order) and what the simulated judge needs (question, reference)."""

    template: Template
    messages: tuple[Message, ...]
    index: int
    spans: tuple[tuple[int, int], ...]
    labels: tuple[str, ...]
    question: str = ""
    reference: str | None = None

    @property
    def candidates(self) -> tuple[str, ...]:
        text = self.messages[self.index][1]
        return tuple(text[a:b] for a, b in self.spans)

    def render(self, order: Sequence[int]) -> tuple[Message, ...]:
        """The messages with the candidates shown in ``order`` (``order[p]``: the caller's index shown at p)."""
        role, text = self.messages[self.index]
        texts, parts, last = self.candidates, [], 0
        for (a, b), shown in zip(self.spans, order, strict=True):
            parts += [text[last:a], texts[shown]]
            last = b
        parts.append(text[last:])
        rendered = list(self.messages)
        rendered[self.index] = (role, "".join(parts))
        return tuple(rendered)


@dataclass(frozen=True, slots=True)
class Template:
    """A framework's comparison prompt.

    ``needles``: phrases that must all appear in the messages (and ``absent`` none); ``slots``: a pattern over one
    message's text whose groups ``a``, ``b`` (a pair) are the candidates, ``q`` the question and ``ref`` a reference
    (optional); ``labels``: the candidates' labels by position (a list's: its markers'); ``read``: the framework's own parser, as a
    verdict;
    ``mention``: what in an answer names a label (relabelled label by label with ``token``); ``write``: an answer
    the framework's parser reads as a verdict; ``tie``: whether the template can say "tie"."""

    name: str
    framework: str
    source: str
    licence: str
    needles: tuple[str, ...]
    slots: re.Pattern[str] | None
    labels: tuple[str, ...]
    read: Callable[[str, tuple[str, ...]], Verdict | None]
    write: Callable[[Verdict, tuple[str, ...]], str]
    mention: re.Pattern[str]
    token: re.Pattern[str] = STANDALONE_AB
    tie: bool = True
    absent: tuple[str, ...] = ()
    scale: int = 1
    find_slots: Callable[[str], Located | None] | None = field(default=None)

    @property
    def pairwise(self) -> bool:
        return self.find_slots is None

    def find(self, messages: Sequence[Message]) -> Found | None:
        """This template's prompt in ``messages``, or None."""
        everything = "\n".join(text for _, text in messages)
        if any(n not in everything for n in self.needles) or any(a in everything for a in self.absent):
            return None
        for index, (_, text) in enumerate(messages):
            if self.find_slots is not None:
                located = self.find_slots(text)
                if located is not None:
                    spans, labels, question = located
                    return Found(self, tuple(messages), index, spans, labels, question)
                continue
            assert self.slots is not None
            match = self.slots.search(text)
            if match is None:
                continue
            groups = match.groupdict()
            return Found(
                self,
                tuple(messages),
                index,
                (match.span("a"), match.span("b")),
                self.labels,
                groups.get("q") or "",
                groups.get("ref"),
            )
        return None

    def relabel(self, answer: str, mapping: dict[str, str]) -> str:
        """``answer`` with every label it names replaced through ``mapping`` (displayed label → caller's label)."""

        def swap(match: re.Match[str]) -> str:
            return self.token.sub(lambda t: mapping.get(t.group(0), t.group(0)), match.group(0))

        return self.mention.sub(swap, answer)
