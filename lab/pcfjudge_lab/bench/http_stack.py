"""The processes and request bodies of ``pcfjudge bench http``.

``Stack`` runs the fake provider (fixed latency per call), ``pcfjudge serve`` judging through it (OpenAI wire
protocol) and, on demand, the bare FastAPI echo; every process listens on 127.0.0.1 and logs into the work
directory. ``cpu_s`` and ``rss_mb`` read a process's (and its worker processes') CPU time and resident memory from
``/proc``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

from pcfjudge_lab.bench.procs import Proc, free_port, http_ok, pcfjudge

CANDIDATES = (
    "The Treaty of Westphalia was signed in 1648, ending the Thirty Years' War; it was negotiated in the cities of "
    "Osnabrück and Münster and is often cited as the origin of the modern system of sovereign states.",
    "It was signed in 1658 in Vienna by the Holy Roman Emperor and the King of Sweden, ending the Eighty Years' War "
    "between Spain and the Dutch Republic after the decisive battle of Rocroi.",
    "I believe it was signed around the middle of the seventeenth century, in Westphalia, though I am not certain "
    "of the exact year or of which cities hosted the negotiations.",
    "1648. The peace consisted of several treaties signed in Osnabrück and Münster between May and October of "
    "that year, concluding both the Thirty Years' War and the Eighty Years' War.",
    "The treaty was signed in 1648 at the Palace of Versailles by 194 delegations, as recorded in the 1649 "
    "Westphalian Chronicle, and it created the League of Nations' predecessor.",
    "In 1648, at the end of the Thirty Years' War; the exact dates of the individual treaties differ.",
)


def listwise_body(tag: str, i: int, k: int, candidates: int) -> bytes:
    """A ``/judge/listwise`` body; the question carries ``tag`` and ``i`` (distinct items never share a cache entry)."""
    texts = [CANDIDATES[j % len(CANDIDATES)] for j in range(candidates)]
    question = f"[{tag} #{i}] When and where was the Peace of Westphalia signed, and what did it end?"
    body = {"question": question, "candidates": texts, "k": k, "include_runs": False}
    return json.dumps(body).encode()


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of ``pid`` and its children, MiB (``VmHWM``: each one's peak so far)."""
    total = 0.0
    for proc in [pid, *_children(pid)]:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{proc}/status").read_text().splitlines():
                if line.startswith(f"{field}:"):
                    total += int(line.split()[1]) / 1024
    return total


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its children (uvicorn's workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for proc in [pid, *_children(pid)]:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{proc}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


class Stack:
    """The fake provider and ``pcfjudge serve`` (restartable with another worker count), plus the echo app."""

    def __init__(self, work: Path, latency_ms: float, backend_concurrency: int, log_level: str) -> None:
        self.work, self.log_level = work, log_level
        self.fake_url = f"http://127.0.0.1:{free_port()}"
        fake_argv = pcfjudge(
            "fake-provider", "--port", self.fake_url.rsplit(":", 1)[1], "--latency-ms", f"{latency_ms}"
        )
        self.fake = Proc("fake-provider", fake_argv, work / "fake.log", lambda: http_ok(f"{self.fake_url}/healthz"))
        self.env = {
            "OPENAI_API_KEY": "bench-key",
            "PCFJ_OPENAI_BASE_URL": f"{self.fake_url}/v1",
            "PCFJ_DEFAULT_MODEL": "openai:bench-judge",
            "PCFJ_BACKEND_CONCURRENCY": str(backend_concurrency),
            "PCFJ_MAX_QUEUED_CALLS": str(backend_concurrency),
        }
        self.serve: Proc | None = None
        self.url = ""
        self.echo: Proc | None = None
        self.echo_url = ""

    def start(self, workers: int) -> None:
        if self.fake.popen is None:
            self.fake.start()
        if self.serve is not None:
            self.serve.stop()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        argv = pcfjudge("serve", "--port", str(port), "--workers", str(workers), "--log-level", self.log_level)
        url = self.url
        self.serve = Proc(
            f"pcfjudge serve --workers {workers}",
            argv,
            self.work / f"serve-{workers}.log",
            lambda: http_ok(f"{url}/healthz"),
            self.env,
        )
        self.serve.start()

    def start_echo(self, response: dict[str, Any]) -> None:
        path = self.work / "echo-response.json"
        path.write_text(json.dumps(response), encoding="utf-8")
        port = free_port()
        self.echo_url = f"http://127.0.0.1:{port}"
        argv = [sys.executable, "-m", "pcfjudge_lab.bench.http_echo", "--port", str(port), "--response", str(path)]
        url = self.echo_url
        self.echo = Proc("bare FastAPI echo", argv, self.work / "echo.log", lambda: http_ok(f"{url}/healthz"))
        self.echo.start()

    @property
    def serve_pid(self) -> int:
        assert self.serve is not None and self.serve.popen is not None
        return self.serve.popen.pid

    @property
    def echo_pid(self) -> int:
        assert self.echo is not None and self.echo.popen is not None
        return self.echo.popen.pid

    @property
    def fake_pid(self) -> int:
        assert self.fake.popen is not None
        return self.fake.popen.pid

    def provider_calls(self) -> int:
        calls = httpx.get(f"{self.fake_url}/_control/calls", params={"last": 0}, timeout=30).json()["calls"]
        return int(sum(calls.values()))

    def close(self) -> None:
        for proc in (self.echo, self.serve, self.fake):
            if proc is not None:
                with contextlib.suppress(Exception):
                    proc.stop(timeout_s=30)
