"""The frameworks' own code, installed from PyPI (alpaca-eval, prometheus-eval, litellm, rewardbench, deepeval),
against a real ``pcfjudge serve`` whose simulated judge prefers whichever answer it is shown first: each framework's
own prompt, client and parser (tests/doors/chat/framework_packages.py, run in a subprocess) read a verdict from the reply, and the
pair's winner is the same text whichever order the framework sent it in, on a pair the judge splits by position (the
template's tie, or its order-free coin where it has none) and on one where the first is clearly better.

rewardbench's own dependencies (torch, transformers 4.51, bitsandbytes, trl, wandb) are a reward model's: it is
installed without them into ``.venv/rewardbench`` (scripts/test.sh) with what its generative module imports, and put
on the subprocess's path only. deepeval registers a pytest plugin, so it is installed into ``.venv/deepeval`` and is on
the subprocess's path only too."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doors.chat.framework_packages import DEEPEVAL_MODEL, JUDGE, REWARDBENCH_MODEL
from tests.support.processes import clean_env, serve_process

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
QUESTION = "Name a primary colour."
CLOSE = ("Blue is one.", "Red.")  # the simulated judge (seed 0) prefers whichever it is shown first
CLEAR = ("Blue is one.", "Yellow, for example.")  # the first clearly better: the same verdict in both orders
FRAMEWORKS = [
    "alpaca-eval-gpt4", "weighted-alpaca-eval-gpt4-turbo", "prometheus-eval", "litellm-arena-hard", "rewardbench",
    "deepeval",
]  # fmt: skip
TARGETS = {
    "rewardbench": ROOT / ".venv" / "rewardbench",
    "deepeval": ROOT / ".venv" / "deepeval",
}  # installed beside the venv, on the subprocess's path only


@pytest.fixture(scope="module")
def serve_url() -> Iterator[str]:
    """``pcfjudge serve`` on embedded defaults, with a one-judge jury named as rewardbench's OpenAI model."""
    with serve_process(env={"PCFJ_JURIES": json.dumps({REWARDBENCH_MODEL: [JUDGE], DEEPEVAL_MODEL: [JUDGE]})}) as url:
        yield url


def run_framework(framework: str, url: str, pair: tuple[str, str]) -> dict[str, list[object]]:
    path = [*sys.path, *([str(TARGETS[framework])] if framework in TARGETS else [])]
    env = clean_env({"PYTHONPATH": ":".join(path)}) | {"NO_PROXY": "*"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.doors.chat.framework_packages", framework, url, QUESTION, *pair],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_frameworks_own_code_reads_one_verdict_in_either_order(framework: str, serve_url: str) -> None:
    split = run_framework(framework, serve_url, CLOSE)
    clear = run_framework(framework, serve_url, CLEAR)
    print(framework, split, clear)
    assert split["winners"][0] == split["winners"][1], split  # the same answer (or tie) in both orders
    assert clear["winners"] == [CLEAR[0], CLEAR[0]], clear
    if framework in ("weighted-alpaca-eval-gpt4-turbo", "litellm-arena-hard"):
        assert split["winners"] == ["tie", "tie"]  # P(m) = ½ in both orders; Arena-Hard's A=B
