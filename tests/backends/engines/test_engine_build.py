"""The engines the tests use run on any x86-64 machine of this kind, and an engine that dies says what of.

Both llama.cpp builds (llama-cpp-python's libraries and llama-server) are compiled by the project's scripts with
``scripts/llama_flags.sh``: no ``-march=native``, so no AMX tile instruction (which faults in VMs that do not grant
the process the tile state) and no AVX-512. ``objdump -d`` of the very binaries the engine tests load proves it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import platform
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pcfjudge_lab.engine_faults import engine_gone, exit_cause

from tests.support.engine import EngineDied, engine_process, llama_server_binary, missing_engine
from tests.support.processes import answers_ok
from tests.support.waits import free_port, wait_until

AMX = re.compile(
    r"\s(ldtilecfg|sttilecfg|tileloadd|tileloaddt1|tilestored|tilezero|tilerelease|tdpb[a-z0-9]*|tdpfp16ps)\s"
)
AVX512 = re.compile(r"%zmm\d|%k[1-7]\b")


def _engine_binaries() -> list[Path]:
    binaries = []
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        missing_engine("llama-cpp-python[server]")
    else:
        lib = Path(next(iter(spec.submodule_search_locations))) / "lib"
        binaries += sorted(p for p in lib.glob("*.so") if not p.is_symlink())
    server = llama_server_binary()
    if server is None:
        missing_engine("llama-server (scripts/llama_server.sh builds it)")
    else:
        binaries.append(Path(server))
    return binaries


@pytest.mark.slow
@pytest.mark.skipif(platform.machine() != "x86_64", reason="AMX and AVX-512 are x86-64 instructions")
def test_neither_engine_contains_amx_or_avx512_instructions() -> None:
    objdump = shutil.which("objdump")
    assert objdump is not None, "objdump (binutils, which gcc brings) is needed to read the engines' code"
    binaries = _engine_binaries()
    assert any(p.name.startswith("libggml-cpu") for p in binaries) and any(p.name == "llama-server" for p in binaries)
    for binary in binaries:
        code = subprocess.run(
            [objdump, "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True, check=True
        ).stdout
        assert "vfmadd" in code or "libggml-cpu" not in binary.name, f"{binary}: no FMA: was it built at all?"
        amx = sorted({m.group(1) for m in AMX.finditer(code)})
        avx512 = sorted({m.group(0) for m in AVX512.finditer(code)})[:5]
        assert not amx, f"{binary} contains AMX tile instructions {amx}: rebuild with scripts/llama_flags.sh's flags"
        assert not avx512, f"{binary} uses AVX-512 registers {avx512}: rebuild with scripts/llama_flags.sh's flags"


# ── an engine that dies says what it died of ───────────────────────────────────────────────────────────────────

# A stand-in engine that can crash on demand (what a real engine cannot be asked to do): it answers its readiness
# URL, then dies of SIGSEGV at its first "inference" (or at once, with "start").
CRASHING_ENGINE = """
import http.server, os, signal, sys
port, when = int(sys.argv[1]), sys.argv[2]
if when == "start":
    print("loading model ...", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        else:
            os.kill(os.getpid(), signal.SIGSEGV)

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def _crashing(when: str) -> tuple[list[str], str]:
    port = free_port()
    return [sys.executable, "-c", CRASHING_ENGINE, str(port), when], f"http://127.0.0.1:{port}"


def test_an_engine_that_dies_at_start_is_an_error_naming_the_signal_and_the_cause() -> None:
    argv, url = _crashing("start")
    with pytest.raises(EngineDied) as died, engine_process(argv, f"{url}/health", f"{url}/v1", "fake-engine"):
        pytest.fail("the engine never became ready")
    message = str(died.value)
    assert message.startswith("fake-engine died at start: it was killed by SIGSEGV (exit status -11)")
    assert "-march=native" in message and "AMX" in message and "loading model" in message


def test_an_engine_that_dies_mid_test_is_an_error_naming_the_signal() -> None:
    argv, url = _crashing("first-inference")
    with pytest.raises(EngineDied) as died, engine_process(argv, f"{url}/health", f"{url}/v1", "fake-engine"):
        with contextlib.suppress(httpx.TransportError):  # the connection is dropped mid-answer
            httpx.get(f"{url}/v1/chat", timeout=10)
        wait_until(lambda: not answers_ok(f"{url}/health"), what="the engine to be gone")
    assert str(died.value).startswith("fake-engine died during the tests: it was killed by SIGSEGV")


def test_exit_statuses_read_as_signals_and_causes() -> None:
    assert exit_cause(-signal.SIGSEGV).startswith("it was killed by SIGSEGV (exit status -11): a segmentation fault")
    assert exit_cause(139).startswith("it was killed by SIGSEGV (exit status 139)")  # a shell's 128 + 11
    assert "illegal instruction" in exit_cause(-signal.SIGILL)
    assert "out-of-memory" in exit_cause(-signal.SIGKILL)
    assert exit_cause(1) == "it exited with status 1; its log says why"
    message = engine_gone("http://127.0.0.1:8080/v1", "connection refused")
    assert message.startswith("the engine at http://127.0.0.1:8080/v1 stopped accepting connections")
    assert "SIGSEGV" in message
