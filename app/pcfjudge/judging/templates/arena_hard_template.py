"""Arena-Hard-Auto's judge prompt: lmarena/arena-hard-auto, ``config/judge_config.yaml`` (v0.1: ``system_prompt``,
``prompt_template``, ``regex_pattern``; https://github.com/lmarena/arena-hard-auto, Apache-2.0).

Parser (``gen_judgment.py`` ``get_score``): every match of ``\\[\\[([AB<>=]+)\\]\\]``; none → no verdict (it asks
again), exactly one distinct label → that label, more than one → no verdict. Labels: ``A>>B``, ``A>B``, ``A=B``,
``B>A``, ``B>>A`` (a verdict of ±2, ±1, 0 here).
"""

from __future__ import annotations

import re

from pcfjudge.judging.templates.template_base import Template, Verdict

PATTERN = re.compile(r"\[\[([AB<>=]+)\]\]")
SCORES = {"A>>B": 2, "A>B": 1, "A=B": 0, "B>A": -1, "B>>A": -2}
LABELS = {score: label for label, score in SCORES.items()}
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
    if len(found) != 1:
        return None
    return SCORES.get(found.pop())


def write_arena_hard(verdict: Verdict, labels: tuple[str, ...] = ()) -> str:
    score = verdict if isinstance(verdict, int) else 0
    return f"My final verdict is {WORDS[score]}: [[{LABELS[score]}]]"


ARENA_HARD = Template(
    name="arena-hard",
    framework="Arena-Hard-Auto",
    source="https://github.com/lmarena/arena-hard-auto/blob/main/config/judge_config.yaml",
    licence="Apache-2.0",
    needles=("[[A>>B]]", "<|The Start of Assistant A's Answer|>"),
    slots=SLOTS,
    labels=("A", "B"),
    read=read_arena_hard,
    write=write_arena_hard,
    mention=re.compile(r"\[\[[AB<>=]+\]\]|[Aa]ssistant [AB]\b"),
    scale=2,
)
