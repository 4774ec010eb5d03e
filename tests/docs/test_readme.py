"""The README is the five-minute page: the two set-up commands, one executed example per front door, the simulated
judge said plainly, links that resolve into the documentation site. Its examples run in ``tests/docs/test_docs.py``."""

from __future__ import annotations

import re

from tests.docs.test_docs import examples
from tests.support.basics import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_has_exactly_the_two_setup_commands() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", quick_start, re.S)
    assert blocks == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/pcfjudge serve",
        "bash scripts/test.sh",
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in ci


def test_readme_is_short() -> None:
    assert len(README.splitlines()) <= 250


def test_every_front_door_has_an_executed_example() -> None:
    codes = [e.code for e in examples(ROOT / "README.md")]
    for door in ("/judge/listwise", "/judge/pairwise", "/v2/rerank", "/v1/reward", "pcfjudge.Client", "pcfjudge judge"):
        assert any(door in code for code in codes), f"no executed README example uses {door}"


def test_the_simulated_judge_is_said_plainly() -> None:
    first_screen = README[: README.index("## Quick start")]
    assert "simulated" in first_screen and "seeded draw" in first_screen


def test_links_resolve() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the README links into docs/"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, missing
