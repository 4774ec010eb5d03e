"""Waiting on a condition (never a guessed sleep), a hand-moved clock, and free local ports."""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

# ── waiting ──────────────────────────────────────────────────────────────────────────────────────────────────────


def wait_until(condition: Callable[[], T | None], *, what: str, timeout_s: float = 30.0, interval_s: float = 0.02) -> T:
    """Call ``condition`` until it returns something truthy and return that; fail after ``timeout_s``.

    The timeout is a generous upper bound for a slow machine, never an assumption of how fast things happen.
    """
    give_up = time.monotonic() + timeout_s
    while not (result := condition()):
        if time.monotonic() > give_up:
            pytest.fail(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(interval_s)
    return result


async def eventually(
    condition: Callable[[], T | None], *, what: str, timeout_s: float = 30.0, interval_s: float = 0.01
) -> T:
    """``wait_until`` for async tests: the event loop (and so the code under test) runs between the checks."""
    give_up = asyncio.get_running_loop().time() + timeout_s
    while not (result := condition()):
        if asyncio.get_running_loop().time() > give_up:
            pytest.fail(f"timed out after {timeout_s:g}s waiting for {what}")
        await asyncio.sleep(interval_s)
    return result


class FakeClock:
    """A monotonic clock that only moves when the test says so: ``clock.now += 31``."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# ── ports ────────────────────────────────────────────────────────────────────────────────────────────────────────


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def free_cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free as well (and below 65536)."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20000, 55000)
        with socket.socket() as a, socket.socket() as b:
            try:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port pair for a cluster node")
