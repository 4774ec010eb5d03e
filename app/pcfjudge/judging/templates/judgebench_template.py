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

from pcfjudge.judging.templates.template_base import Template, Verdict

SLOTS = re.compile(
    r"# Instruction:\n(?P<q>.*?)\n# Output \(a\):\n(?P<a>.*?)\n# Output \(b\):\n(?P<b>.*?)\n# Which is better",
    re.S,
)


def read_output_ab(answer: str, labels: tuple[str, ...] = ()) -> Verdict | None:
    first, second = "Output (a)" in answer, "Output (b)" in answer
    return 1 if first and not second else -1 if second and not first else None


def write_output_ab(verdict: Verdict, labels: tuple[str, ...] = ()) -> str:
    return "Output (a)" if isinstance(verdict, int) and verdict > 0 else "Output (b)"


JUDGEBENCH_VANILLA = Template(
    name="judgebench-vanilla",
    framework="JudgeBench (vanilla judge; RewardBench's offsetbias prompt)",
    source="https://github.com/ScalerLab/JudgeBench/blob/main/utils/templates/vanilla_prompt.jinja2",
    licence="none stated (recognised by its headings; no text copied)",
    needles=("# Output (a):", "# Output (b):"),
    slots=SLOTS,
    labels=("a", "b"),
    read=read_output_ab,
    write=write_output_ab,
    mention=re.compile(r"Output \([ab]\)"),
    token=re.compile(r"(?<=\()[ab](?=\))"),
    tie=False,
)
