"""JudgeBench's ``vanilla`` judge prompt (ScalerLab/JudgeBench, ``utils/templates/vanilla_prompt.jinja2``,
https://github.com/ScalerLab/JudgeBench; the repository states no licence, so none of its text is copied here: the
prompt is recognised by its slot headings, which it shares with RewardBench's ``OFFSETBIAS_PROMPT``,
``rewardbench/generative.py``, Apache-2.0). JudgeBench's other pairwise judges (``arena_hard``, ``prometheus_2``)
send Arena-Hard's and Prometheus' prompts, recognised by those templates.

Parser (``utils/judges.py`` ``Vanilla.extract_pairwise_result``): the stripped answer is exactly ``Output (a)`` (A>B)
or ``Output (b)`` (B>A), else an error; RewardBench's reads ``"Output (a)" in judgment`` first. No tie.
"""

from __future__ import annotations

import re

from pcfjudge.judging.templates.template_base import Origin, Template
from pcfjudge.judging.templates.template_verdicts import Tokens, Verdicts, replies

SLOTS = re.compile(
    r"# Instruction:\n(?P<q>.*?)\n# Output \(a\):\n(?P<a>.*?)\n# Output \(b\):\n(?P<b>.*?)\n# Which is better",
    re.S,
)


JUDGEBENCH_VANILLA = Template(
    "judgebench-vanilla",
    Origin(
        "JudgeBench (vanilla judge; RewardBench's offsetbias prompt)",
        "https://github.com/ScalerLab/JudgeBench/blob/main/utils/templates/vanilla_prompt.jinja2",
        "none stated (recognised by its headings; no text copied)",
    ),
    ("# Output (a):", "# Output (b):"),
    SLOTS,
    Verdicts(
        Tokens((("Output (a)", 1), ("Output (b)", -1)), "alone"),
        replies({1: "Output (a)", -1: "Output (b)"}),
        re.compile(r"Output \([ab]\)"),
        re.compile(r"(?<=\()[ab](?=\))"),
        tie=False,
    ),
    labels=("a", "b"),
)
