"""Every template the chat door recognises, and how one prompt is read: by its frame, never by a candidate's text.

Every template is looked for; one found only inside another's candidate (a marker block, or MT-Bench's headers, in an
assistant's answer) is that candidate's text, not the prompt's frame, and is set aside. Of those left, the first in
``TEMPLATES`` wins (explicit markers first: a caller who marks candidates in the frame means it)."""

from __future__ import annotations

from collections.abc import Sequence

from pcfjudge.judging.templates.alpaca_eval_templates import ALPACA_EVAL_CLF, ALPACA_EVAL_RANKING
from pcfjudge.judging.templates.arena_hard_template import ARENA_HARD
from pcfjudge.judging.templates.deepeval_template import DEEPEVAL_ARENA
from pcfjudge.judging.templates.fastchat_templates import (
    MT_BENCH,
    MT_BENCH_MULTI_TURN,
    MT_BENCH_MULTI_TURN_REFERENCE,
    MT_BENCH_REFERENCE,
    REWARDBENCH_GENERATIVE,
)
from pcfjudge.judging.templates.judgebench_template import JUDGEBENCH_VANILLA
from pcfjudge.judging.templates.marker_template import MARKERS
from pcfjudge.judging.templates.prometheus_template import PROMETHEUS_RELATIVE
from pcfjudge.judging.templates.template_base import Found, Message, Template

TEMPLATES: tuple[Template, ...] = (
    MARKERS,  # explicit markers first: a caller who marks candidates means it
    MT_BENCH,
    MT_BENCH_REFERENCE,
    MT_BENCH_MULTI_TURN,
    MT_BENCH_MULTI_TURN_REFERENCE,
    REWARDBENCH_GENERATIVE,
    ARENA_HARD,
    ALPACA_EVAL_CLF,
    ALPACA_EVAL_RANKING,
    PROMETHEUS_RELATIVE,
    JUDGEBENCH_VANILLA,
    DEEPEVAL_ARENA,
)
BY_NAME = {t.name: t for t in TEMPLATES}


def recognise(messages: Sequence[Message]) -> Found | None:
    """The template whose frame ``messages`` are (None: not a comparison this service knows)."""
    found = [f for f in (template.find(messages) for template in TEMPLATES) if f is not None]
    framed = [f for f in found if not any(inside(f, other) for other in found if other is not f)]
    return framed[0] if framed else None


def inside(found: Found, other: Found) -> bool:
    """Whether all of ``found``'s candidates sit within one candidate of ``other`` (same message): its frame is then
    ``other``'s candidate's text."""
    if found.index != other.index:
        return False
    parts = [span for spans in found.spans for span in spans]
    return any(all(start <= a and b <= end for a, b in parts) for spans in other.spans for start, end in spans)
