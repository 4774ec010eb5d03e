"""The README's "Reranking" and "Python client" examples run and print what the README shows: the curl bodies through
the app, the Cohere SDK and pcfjudge.Client snippets against a real ``pcfjudge serve``, ``pcfjudge judge`` in process."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pcfjudge.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
SHOWN_URL = "http://127.0.0.1:8000"


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def examples(text: str) -> list[tuple[str, str, str]]:
    """(language, code, the output block right after it) for every code block followed by an output block."""
    blocks = re.findall(r"```(\w+)\n(.*?)\n```", text, re.S)
    pairs = []
    for (lang, code), (out_lang, out) in itertools.pairwise(blocks):
        if lang in ("bash", "python") and out_lang in ("json", "text"):
            pairs.append((lang, code, out))
    return pairs


def run_python(code: str, url: str) -> str:
    env = {**os.environ, "PCFJ_URL": url}
    done = subprocess.run(
        [sys.executable, "-c", code.replace(SHOWN_URL, url)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_sections_have_their_examples() -> None:
    kinds = [(lang, code.split()[0]) for lang, code, _ in examples(section("Reranking"))]
    assert kinds == [("bash", "curl"), ("bash", "curl"), ("python", "import")]
    assert [lang for lang, _, _ in examples(section("Python client"))] == ["python", "python", "bash"]


async def test_curl_examples_answer_as_shown(client: httpx.AsyncClient) -> None:
    for _, code, shown in examples(section("Reranking"))[:2]:
        match = re.fullmatch(r"curl -s localhost:8000(/\S+) -H 'content-type: application/json' -d '(\{.*\})'", code)
        assert match, code
        got = (await client.post(match.group(1), json=json.loads(match.group(2)))).json()
        expected = json.loads(shown)
        if isinstance(expected, dict):  # the Cohere shape's id is the request id
            assert got.pop("id") and expected.pop("id")
        assert got == expected


@pytest.mark.slow
def test_python_examples_print_what_is_shown(serve_url: str) -> None:
    snippets = [(code, shown) for lang, code, shown in examples(section("Reranking")) if lang == "python"]
    snippets += [(code, shown) for lang, code, shown in examples(section("Python client")) if lang == "python"]
    assert len(snippets) == 3
    for code, shown in snippets:
        assert run_python(code, serve_url) == shown.strip()


def test_judge_command_prints_what_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    (_, command, shown) = examples(section("Python client"))[-1]
    argv = shlex.split(command)
    assert argv[0] == ".venv/bin/pcfjudge"
    assert main(argv[1:]) == 0
    assert capsys.readouterr().out.strip() == shown.strip()
