"""Prometheus-eval's relative grading prompt (``RELATIVE_PROMPT`` and ``RELATIVE_PROMPT_WO_REF``, system prompt
``REL_SYSTEM_PROMPT``): prometheus-eval/prometheus-eval, ``libs/prometheus-eval/prometheus_eval/prompts.py``
(https://github.com/prometheus-eval/prometheus-eval, Apache-2.0); RewardBench's copy (``rewardbench/generative.py``
``RELATIVE_PROMPT``) has the same slots.

Parser: ``prometheus_eval/parser.py`` ``_parse_output_relative`` (the pattern below is its ``explicit_pattern``);
RewardBench's ``process_judgement`` reads the answer's last character instead. No tie.
"""

from __future__ import annotations

import re

from pcfjudge.judging.templates.template_base import Origin, Template
from pcfjudge.judging.templates.template_verdicts import Verdict, Verdicts, replies

EXPLICIT = re.compile(
    r"(?:\[RESULT\]|\[RESULT:\s*|\[Response\s+|\[Result\](?:\s+Response)?|\[Result:\s*|(?:^|\n)Result:?\s*)"
    r"\s*(A|B)(?:\])?(?:\s*$)",
    re.I | re.M,
)
SLOTS = re.compile(
    r"###Instruction:\n(?P<q>.*?)\n\n###Response A:\n(?P<a>.*?)\n\n###Response B:\n(?P<b>.*?)\n\n"
    r"###(?:Reference Answer:\n(?P<ref>.*?)\n\n###)?Score Rubric",
    re.S,
)


def read_prometheus(answer: str, labels: tuple[str, ...] = ()) -> Verdict | None:
    match = EXPLICIT.search(answer)
    return None if match is None else 1 if match.group(1).upper() == "A" else -1


PROMETHEUS_RELATIVE = Template(
    "prometheus-relative",
    Origin(
        "Prometheus-eval (relative grading)",
        "https://github.com/prometheus-eval/prometheus-eval/blob/main/libs/prometheus-eval/prometheus_eval/prompts.py",
    ),
    ("###Response A:", "###Response B:", "[RESULT]"),
    SLOTS,
    Verdicts(
        read_prometheus,
        replies({v: f"Feedback: Response {x} meets the rubric better. [RESULT] {x}" for x, v in (("A", 1), ("B", -1))}),
        re.compile(r"\[RESULT\]\s*[AB]\b|Response [AB]\b", re.I),
        tie=False,
    ),
)
