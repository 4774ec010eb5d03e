"""`pcfjudge serve` as a subprocess, called over real HTTP, on embedded defaults."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest


@pytest.mark.slow
def test_serve_judges_over_http(serve_url: str) -> None:
    payload = {
        "question": "What is the boiling point of water at sea level?",
        "candidates": [{"id": "a", "text": "100 °C."}, {"id": "b", "text": "90 °C."}, "It depends; about 100 °C."],
        "k": 3,
    }
    resp = httpx.post(f"{serve_url}/judge/listwise", json=payload, timeout=30)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["model"] == "sim:default" and body["k"] == 3
    assert [c["id"] for c in body["candidates"]] == ["a", "b", "2"]
    assert set(body["winners"]) <= {"a", "b", "2"} and body["winners"]
    bad = httpx.post(f"{serve_url}/judge/listwise", content=b"{", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_json"
    assert httpx.get(f"{serve_url}/readyz").json()["status"] == "ready"


def test_cli_help_explains_commands() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pcfjudge.cli.main", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "serve" in out and "openapi" in out
