"""``pcfjudge bench engine`` against an engine that accepts no connection (a crashed llama.cpp): one message saying
it most likely died and of what, exit status 1, no traceback."""

from __future__ import annotations

import pytest
from pcfjudge.cli.main import main

from tests.support.waits import free_port


def test_bench_engine_says_the_engine_is_gone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PCFJ_MAX_RETRIES", "0")
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    assert main(["bench", "engine", "--url", url, "--model", "smollm2", "--items", "1", "--k", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: the engine at {url} stopped accepting connections")
    assert "SIGSEGV" in err and "scripts/llama_flags.sh" in err
