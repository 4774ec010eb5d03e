"""pcfjudge's marker syntax: any prompt of one's own with two or more candidates, each between markers.

    <<<candidate A>>>
    the first candidate's text
    <<<end>>>
    <<<candidate B>>>
    …
    <<<end>>>

Labels are letters, digits or ``_``, each used once, in one message (the text before the first marker is taken as the
question). The judge's verdict is the last ``[[…]]`` in its answer: labels best first, ``>`` between better and worse,
``=`` between tied ones (``[[B>A=C]]``); a single label (``[[B]]``) names the best, the rest tied below it; labels
left out are tied below those named. docs/chat-endpoint.md shows a prompt that asks for it.
"""

from __future__ import annotations

import re

from pcfjudge.judging.templates.template_base import Located, Origin, Template
from pcfjudge.judging.templates.template_verdicts import Verdict, Verdicts

MARKED = re.compile(r"<<<candidate ([A-Za-z0-9_]+)>>>\n?(.*?)\n?<<<end>>>", re.S)
VERDICT = re.compile(r"\[\[([A-Za-z0-9_ >=]+)\]\]")
WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z0-9_]+(?![A-Za-z0-9_])")


def locate(text: str) -> Located | None:
    found = list(MARKED.finditer(text))
    labels = tuple(m.group(1) for m in found)
    if len(found) < 2 or len(set(labels)) != len(labels):
        return None
    return tuple((m.span(2),) for m in found), labels, text[: found[0].start()].strip()


def read_markers(answer: str, labels: tuple[str, ...]) -> Verdict | None:
    """Ranks by position (1 best) from the answer's last ``[[…]]``; None when it names a label twice or not ours."""
    verdicts = VERDICT.findall(answer)
    if not verdicts:
        return None
    groups = [[w.strip() for w in tier.split("=")] for tier in verdicts[-1].split(">")]
    named = [w for tier in groups for w in tier]
    if len(set(named)) != len(named) or not set(named) <= set(labels) or "" in named:
        return None
    rank: dict[str, int] = {}
    for place, tier in enumerate(groups, start=1):
        for word in tier:
            rank[word] = place
    return tuple(rank.get(label, len(groups) + 1) for label in labels)


def write_markers(verdict: Verdict, labels: tuple[str, ...]) -> str:
    ranks = verdict if isinstance(verdict, tuple) else (1, 2) if verdict > 0 else (2, 1) if verdict < 0 else (1, 1)
    tiers = [[label for label, r in zip(labels, ranks, strict=True) if r == place] for place in sorted(set(ranks))]
    return "[[" + ">".join("=".join(tier) for tier in tiers) + "]]"


MARKERS = Template(
    "markers",
    Origin(
        "any prompt using pcfjudge's candidate markers", "docs/chat-endpoint.md (pcfjudge)", "Apache-2.0 (pcfjudge)"
    ),
    ("<<<candidate ", "<<<end>>>"),
    locate,
    Verdicts(
        read_markers,
        write_markers,
        re.compile(r"\[\[[A-Za-z0-9_ >=]+\]\]|\b[Cc]andidate [A-Za-z0-9_]+\b"),
        WORD,
        pairwise=False,
    ),
    labels=(),
)
