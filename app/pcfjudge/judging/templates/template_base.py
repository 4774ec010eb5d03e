"""What a judge-prompt template is: ``Template`` (where it comes from, how to recognise it, its verdict format) and
``Found`` (one prompt's candidates, rendered in any order). Verdict formats: ``template_verdicts``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pcfjudge.judging.templates.template_verdicts import Verdicts

Message = tuple[str, str]
"""A chat message: (role, text)."""
Span = tuple[int, int]
Parts = tuple[Span, ...]
"""Where one candidate stands in a message: one span, or one a turn (an MT-Bench multi-turn conversation's answers)."""
Located = tuple[tuple[Parts, ...], tuple[str, ...], str]
"""A list's candidates in one message: their parts, their labels, and the question (the text before them)."""
PARTS_JOINED = "\n\n"
"""Between a candidate's parts where it is read as one text (the simulated judge, the order-free coin, the caps)."""


@dataclass(frozen=True, slots=True)
class Found:
    """One recognised prompt: the caller's messages, where its candidates sit (``spans``: each candidate's parts in
    ``messages[index]``'s text, in the caller's order) and what the simulated judge needs (question, reference)."""

    template: Template
    messages: tuple[Message, ...]
    index: int
    spans: tuple[Parts, ...]
    labels: tuple[str, ...]
    question: str = ""
    reference: str | None = None

    @property
    def parts(self) -> tuple[tuple[str, ...], ...]:
        text = self.messages[self.index][1]
        return tuple(tuple(text[a:b] for a, b in parts) for parts in self.spans)

    @property
    def candidates(self) -> tuple[str, ...]:
        return tuple(PARTS_JOINED.join(parts) for parts in self.parts)

    def render(self, order: Sequence[int]) -> tuple[Message, ...]:
        """The messages with the candidates shown in ``order`` (``order[p]``: the caller's index shown at p)."""
        role, text = self.messages[self.index]
        texts = self.parts
        shown = sorted(
            (span, part)
            for spans, caller in zip(self.spans, order, strict=True)
            for span, part in zip(spans, texts[caller], strict=True)
        )
        pieces, last = [], 0
        for (a, b), part in shown:
            pieces += [text[last:a], part]
            last = b
        pieces.append(text[last:])
        rendered = list(self.messages)
        rendered[self.index] = (role, "".join(pieces))
        return tuple(rendered)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a template's prompt and parser come from (the framework, the source file), and under which licence."""

    framework: str
    source: str
    licence: str = "Apache-2.0"


@dataclass(frozen=True, slots=True)
class Template:
    """A framework's comparison prompt: phrases that must all appear in the messages (``needles``; ``absent``:
    none of these), where its candidates are (``slots``) and its ``verdicts``' format.

    ``slots`` is a pattern over one message's text, or a function that locates a list of candidates. A pattern's
    groups: ``a`` and ``b``, the candidates (``a2``, ``b2``: their second turns, in a multi-turn prompt); ``q``, the
    question (``q2``, its second turn); ``ref``, an optional reference (``ref2``). ``labels``: the candidates'
    labels by position (a list's: its markers')."""

    name: str
    origin: Origin
    needles: tuple[str, ...]
    slots: re.Pattern[str] | Callable[[str], Located | None]
    verdicts: Verdicts
    labels: tuple[str, ...] = ("A", "B")
    absent: tuple[str, ...] = ()

    def find(self, messages: Sequence[Message]) -> Found | None:
        """This template's prompt in ``messages``, or None."""
        everything = "\n".join(text for _, text in messages)
        if any(n not in everything for n in self.needles) or any(a in everything for a in self.absent):
            return None
        for index, (_, text) in enumerate(messages):
            if not isinstance(self.slots, re.Pattern):
                located = self.slots(text)
                if located is not None:
                    return Found(self, tuple(messages), index, *located)
                continue
            match = _match(self.slots, text)
            if match is not None:
                spans = tuple(tuple(match.span(g) for g in _turns(match, c)) for c in ("a", "b"))
                question, reference = (PARTS_JOINED.join(match[g] for g in _turns(match, s)) for s in ("q", "ref"))
                return Found(self, tuple(messages), index, spans, self.labels, question, reference or None)
        return None


MAX_STARTS = 4
"""Where a slot pattern is tried: at the first few places its leading text stands, never at every position of a
message (a lazy ``.*?`` tried from each of 8,000 ``[User Question]`` lines was quadratic: 9 s on 144 KB)."""


def _match(slots: re.Pattern[str], text: str) -> re.Match[str] | None:
    anchor = leading_text(slots.pattern) if not slots.flags & re.IGNORECASE else ""
    if not anchor:
        return slots.search(text)
    start = text.find(anchor)
    for _ in range(MAX_STARTS):
        if start < 0:
            return None
        match = slots.match(text, start)
        if match is not None:
            return match
        start = text.find(anchor, start + 1)
    return None


def leading_text(pattern: str) -> str:
    """The literal text a pattern starts with (``\\[User Question\\]\\n`` → ``[User Question]`` and a newline)."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt.isalnum() and nxt not in "nt":
                break  # a class (\\d, \\s, …), a back-reference or an anchor: not literal
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
        elif char in ".^$*+?{}[]()|":
            if char in "*+?{" and out:
                out.pop()  # the last character is repeated or optional: not fixed text
            break
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _turns(match: re.Match[str], group: str) -> list[str]:
    """The groups a slot's turns matched: ``group``, and ``group2`` in a multi-turn prompt."""
    held = match.groupdict()
    return [g for g in (group, f"{group}2") if held.get(g) is not None]
