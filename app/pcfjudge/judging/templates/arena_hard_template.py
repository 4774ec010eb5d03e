"""Arena-Hard-Auto's judge prompt: lmarena/arena-hard-auto, ``config/judge_config.yaml`` (v0.1: ``system_prompt``,
``prompt_template``, ``regex_pattern``; https://github.com/lmarena/arena-hard-auto, Apache-2.0).

Parser (``gen_judgment.py`` ``get_score``): every match of ``\\[\\[([AB<>=]+)\\]\\]``; none → no verdict (it asks
again), exactly one distinct label → that label, more than one → no verdict. Labels: ``A>>B``, ``A>B``, ``A=B``,
``B>A``, ``B>>A`` (a verdict of ±2, ±1, 0 here).
"""

from __future__ import annotations

import re

from pcfjudge.judging.templates.template_base import Origin, Template
from pcfjudge.judging.templates.template_verdicts import Verdict, Verdicts, replies

PATTERN = re.compile(r"\[\[([AB<>=]+)\]\]")
SCORES = {"A>>B": 2, "A>B": 1, "A=B": 0, "B>A": -1, "B>>A": -2}
WORDS = {
    2: "Assistant A is significantly better",
    1: "Assistant A is slightly better",
    0: "tie, relatively the same",
    -1: "Assistant B is slightly better",
    -2: "Assistant B is significantly better",
}
SLOTS = re.compile(
    r"<\|User Prompt\|>\n(?P<q>.*?)\n\n"
    r"<\|The Start of Assistant A's Answer\|>\n(?P<a>.*?)\n<\|The End of Assistant A's Answer\|>\n\n"
    r"<\|The Start of Assistant B's Answer\|>\n(?P<b>.*?)\n<\|The End of Assistant B's Answer\|>",
    re.S,
)


def read_arena_hard(answer: str, labels: tuple[str, ...] = ()) -> Verdict | None:
    """``get_score``: one distinct ``[[…]]`` label, read on Arena-Hard's five-point scale."""
    found = {m for m in PATTERN.findall(answer) if m}
    return SCORES.get(found.pop()) if len(found) == 1 else None


ARENA_HARD = Template(
    "arena-hard",
    Origin("Arena-Hard-Auto", "https://github.com/lmarena/arena-hard-auto/blob/main/config/judge_config.yaml"),
    ("[[A>>B]]", "<|The Start of Assistant A's Answer|>"),
    SLOTS,
    Verdicts(
        read_arena_hard,
        replies({score: f"My final verdict is {WORDS[score]}: [[{label}]]" for label, score in SCORES.items()}),
        re.compile(r"\[\[[AB<>=]+\]\]|[Aa]ssistant [AB]\b"),
        scale=2,
    ),
)
