"""Every template the chat door recognises, tried in this order (the first whose prompt is found wins)."""

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
    """The first template whose prompt is in ``messages`` (None: not a comparison this service knows)."""
    for template in TEMPLATES:
        found = template.find(messages)
        if found is not None:
            return found
    return None
