"""`pcfjudge serve` as a subprocess, called over real HTTP, on embedded defaults."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(port: int, env: dict[str, str] | None = None, *extra: str) -> subprocess.Popen[bytes]:
    """Start `pcfjudge serve` and wait until /healthz answers (or fail with its output)."""
    cmd = [sys.executable, "-m", "pcfjudge.cli", "serve", "--port", str(port), "--log-level", "warning", *extra]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            raise RuntimeError(f"pcfjudge serve exited early:\n{out}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("pcfjudge serve did not become healthy in 30 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout:
        proc.stdout.close()


@pytest.fixture
def server() -> Iterator[str]:
    port = free_port()
    proc = start_serve(port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def test_serve_judges_over_http(server: str) -> None:
    payload = {
        "question": "What is the boiling point of water at sea level?",
        "candidates": [{"id": "a", "text": "100 °C."}, {"id": "b", "text": "90 °C."}, "It depends; about 100 °C."],
        "k": 3,
    }
    resp = httpx.post(f"{server}/judge/listwise", json=payload, timeout=30)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["model"] == "sim:default" and body["k"] == 3
    assert [c["id"] for c in body["candidates"]] == ["a", "b", "2"]
    assert set(body["winners"]) <= {"a", "b", "2"} and body["winners"]
    bad = httpx.post(f"{server}/judge/listwise", content=b"{", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_json"
    assert httpx.get(f"{server}/readyz").json()["status"] == "ready"


def test_cli_help_explains_commands() -> None:
    out = subprocess.run([sys.executable, "-m", "pcfjudge.cli", "--help"], capture_output=True, text=True, check=True).stdout
    assert "serve" in out and "openapi" in out
