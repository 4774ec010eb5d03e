"""DeepEval's ``ArenaGEval`` winner prompt with two contestants (confident-ai/deepeval,
``deepeval/metrics/arena_g_eval/templates/generate_arena_winner.txt``, https://github.com/confident-ai/deepeval,
Apache-2.0). The contestants are in a JSON object, ``"arena_test_cases": {"<name>": "<contestant as JSON text>", …}``,
each under a name drawn from ``arena_g_eval/utils.py`` ``FAKE_NAMES`` (the labels stay in position; the JSON-escaped
texts change places). DeepEval shuffles the contestants itself before sending, so the order shown is a draw.

Parser (``ArenaGEval._a_compare``, ``metrics/utils``' ``a_generate_with_schema_and_extract``): the answer is JSON
``{"winner": "<name>", "reason": "…"}``; the name is mapped back to the contestant. No tie. With three or more
contestants the prompt is not recognised (a list verdict has no tie-free writer here): it is passed on as one call.
"""

from __future__ import annotations

import json
import re

from pcfjudge.judging.templates.template_base import Located, Origin, Template
from pcfjudge.judging.templates.template_verdicts import Verdict, Verdicts

CASES = re.compile(r'"arena_test_cases": \{\n(?P<body>(?:\s*"[^"\\]+": "(?:[^"\\]|\\.)*",?\n)+)\s*\}', re.S)
CONTESTANT = re.compile(r'"(?P<name>[^"\\]+)": "(?P<text>(?:[^"\\]|\\.)*)"')
INPUT = re.compile(r'^  "input": "(?P<q>(?:[^"\\]|\\.)*)",?$', re.M)
NAME = re.compile(r"(?<![A-Za-z0-9_])(?:Alice|Bob|Charlie|Diana|Eve|Frank|Grace|Henry|Iris|Jack|Contestant\d+)\b")
"""DeepEval's fake contestant names (``FAKE_NAMES``, then ``Contestant<n>``)."""


def locate(text: str) -> Located | None:
    cases = CASES.search(text)
    if cases is None:
        return None
    start = cases.start("body")
    found = list(CONTESTANT.finditer(cases.group("body")))
    labels = tuple(m.group("name") for m in found)
    if len(found) != 2 or len(set(labels)) != 2:
        return None
    question = INPUT.search(text)
    spans = tuple(((start + m.start("text"), start + m.end("text")),) for m in found)
    return spans, labels, question.group("q") if question else ""


def read_winner(answer: str, labels: tuple[str, ...]) -> Verdict | None:
    """The answer's JSON ``winner`` (``$`` wrappers stripped) as a pair verdict; None when it names neither label."""
    try:
        data = json.loads(answer[answer.index("{") : answer.rindex("}") + 1])
    except ValueError:
        return None
    winner = data.get("winner") if isinstance(data, dict) else None
    name = winner.strip().strip("$") if isinstance(winner, str) else None
    return 1 if name == labels[0] else -1 if name == labels[1] else None


def write_winner(verdict: Verdict, labels: tuple[str, ...]) -> str:
    assert isinstance(verdict, int) and verdict != 0, "a tie-free pair template writes a winner"
    name = labels[0] if verdict > 0 else labels[1]
    return json.dumps({"winner": name, "reason": f"${name}$ is best aligned with the evaluation steps."})


DEEPEVAL_ARENA = Template(
    "deepeval-arena-g-eval",
    Origin(
        "DeepEval (ArenaGEval)",
        "https://github.com/confident-ai/deepeval/blob/main/deepeval/metrics/arena_g_eval/templates/generate_arena_winner.txt",
    ),
    ('"arena_test_cases"', '"winner"', "contestant"),
    locate,
    Verdicts(read_winner, write_winner, re.compile(r'"winner"\s*:\s*"[^"]*"|\$[A-Za-z0-9_]+\$'), NAME, tie=False),
    labels=(),
)
