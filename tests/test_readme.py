"""The README's curl example returns what the README shows (only request_id differs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_readme_has_exactly_the_two_setup_commands() -> None:
    assert "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/pcfjudge serve" in README
    assert "bash scripts/test.sh" in README
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in ci


async def test_curl_example_output_matches(client: httpx.AsyncClient) -> None:
    section = README.split("## Example", 1)[1]
    payload = json.loads(re.search(r"-d '(\{.*?\})'\n", section).group(1))  # type: ignore[union-attr]
    shown = json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))  # type: ignore[union-attr]
    got = (await client.post("/judge/listwise", json=payload)).json()
    shown.pop("request_id")
    got.pop("request_id")
    assert got == shown


def test_in_process_python_example_runs() -> None:
    """The README's "In process, without HTTP" snippet runs as shown and judges on the simulated judge."""
    import subprocess
    import sys

    section = README.split("In process, without HTTP", 1)[1]
    code = re.search(r"```python\n(.*?)\n```", section, re.S).group(1)  # type: ignore[union-attr]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['a'] sim:default"
