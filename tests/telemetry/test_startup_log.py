"""``pcfjudge serve`` says at start-up, once and plainly, when authentication is off and when its default judge is
simulated (its verdicts are seeded draws), in the log's own format, and says nothing of the kind otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest
from pcfjudge.cli.serve_command import startup_warnings
from pcfjudge.settings import Settings

from tests.support.basics import OPENAI_KEY, ROOT
from tests.support.processes import clean_env
from tests.support.waits import free_port, wait_until

AUTH_OFF = "authentication is off"
SIMULATED = "the default judge is simulated (sim:default)"


def test_the_lines_say_what_is_off_and_how_to_turn_it_on() -> None:
    auth, sim = startup_warnings(Settings())
    assert auth.startswith(AUTH_OFF) and "PCFJ_API_KEYS" in auth
    assert sim.startswith(SIMULATED) and "seeded draws" in sim and "OPENAI_API_KEY" in sim
    assert startup_warnings(Settings(api_keys="ops:sk-startup-key")) == [sim]
    assert startup_warnings(Settings(api_keys="ops:sk-startup-key", openai_api_key=OPENAI_KEY)) == []
    oracle = startup_warnings(Settings(api_keys="ops:sk-startup-key", default_model="sim:oracle"))
    assert len(oracle) == 1 and "(sim:oracle)" in oracle[0]


def serve_log(tmp_path: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Start ``pcfjudge serve``, wait until it answers, stop it: everything it logged."""
    port = free_port()
    log = tmp_path / "serve.log"
    argv = [sys.executable, "-m", "pcfjudge.cli.main", "serve", "--port", str(port), *args]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=clean_env(env), stdout=out, stderr=subprocess.STDOUT)
        try:

            def up() -> bool:
                assert proc.poll() is None, log.read_text()
                try:
                    return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
                except httpx.TransportError:
                    return False

            wait_until(up, what="pcfjudge serve to answer /healthz")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return log.read_text()


@pytest.mark.slow
def test_serve_says_it_once_even_with_two_workers(tmp_path: Path) -> None:
    text = serve_log(tmp_path, "--workers", "2")
    assert text.count(AUTH_OFF) == 1 and text.count(SIMULATED) == 1, text
    line = next(line for line in text.splitlines() if AUTH_OFF in line)
    assert "WARNING pcfjudge.server" in line


@pytest.mark.slow
def test_serve_says_it_in_json_when_the_log_is_json(tmp_path: Path) -> None:
    text = serve_log(tmp_path, "--log-format", "json")
    records = [json.loads(line) for line in text.splitlines() if AUTH_OFF in line or SIMULATED in line]
    assert len(records) == 2 and all(r["level"] == "WARNING" and r["logger"] == "pcfjudge.server" for r in records)


@pytest.mark.slow
def test_serve_with_keys_and_a_real_judge_says_neither(tmp_path: Path) -> None:
    env = {"PCFJ_API_KEYS": "ops:sk-startup-key", "OPENAI_API_KEY": OPENAI_KEY}
    text = serve_log(tmp_path, env=env)
    assert AUTH_OFF not in text and "simulated" not in text, text
