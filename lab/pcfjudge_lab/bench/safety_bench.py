"""``pcfjudge bench safety``: issue 49's figures through a running ``pcfjudge serve``, in one run.

* **stall**: the red team's 144 KB chat message (``"[[C]]" for a tie`` then 8,000 ``[User Question]`` lines) sent to
  ``/v1/chat/completions`` while a thread polls ``/healthz`` every 5 ms: how long the message took and the longest
  ``/healthz`` wait meanwhile (the event loop's stall).
* **endless**: one ``/judge/listwise`` request (k=3) to an OpenAI-compatible endpoint that answers 200 and streams its
  body without end, per transport (``wire`` and ``sdk``): the service's RSS at rest and its peak during the request,
  and how the request ended. A service that reads whole bodies grows until the request's timeout (``--timeout-s``).
* **burst** (``--burst N``): RSS before, during and after N reranks of 1,000 documents (``burst_memory``).

Run it on the code before a change (``PYTHONPATH=<old checkout>/app``) and after, and compare.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from pcfjudge_lab.bench.burst_memory import Burst, BurstPlan, format_burst, measure
from pcfjudge_lab.bench.procs import Proc, free_port, http_ok, listens, pcfjudge, rss_mb

MESSAGE = '"[[C]]" for a tie' + "[User Question]\n\n\n" * 8000
"""The red team's message (issue 49, row 3): 144 KB."""
ENDLESS = """
import asyncio, sys, uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    gone = asyncio.Event()
    async def watch():
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()
    watcher = asyncio.ensure_future(watch())
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    chunk = b'{"choices": [' + b" " * 65536
    while not gone.is_set():
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await asyncio.sleep(0)
    watcher.cancel()
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error", lifespan="off")
"""
"""An endpoint whose 200 body never ends (no real engine does it on demand) until its client goes. Each chunk yields
to the event loop, and a client's leaving ends its body: uvicorn's ``send`` returns at once on a closed connection,
so a loop that only sent would spin for ever and starve the other calls' connections (a 504 in CI, not the 502)."""
LISTWISE = {"question": "Capital of France?", "candidates": ["Paris", "Lyon", "Nice"], "k": 3, "include_runs": False}


@dataclass(frozen=True)
class Stall:
    status: int
    answer_ms: float
    longest_wait_ms: float
    polls: int


@dataclass(frozen=True)
class Endless:
    transport: str
    rest_mb: float
    peak_mb: float
    status: int | None  # None: the client gave up
    seconds: float


def _serve(workdir: Path, name: str, env: dict[str, str]) -> tuple[Proc, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = pcfjudge("serve", "--port", str(port), "--log-level", "warning")
    proc = Proc(name, argv, workdir / f"{name}.log", lambda: http_ok(f"{url}/healthz"), env)
    proc.start()
    return proc, url


def stall(workdir: Path) -> Stall:
    proc, url = _serve(workdir, "serve-stall", {})
    waits: list[float] = []
    done = threading.Event()

    def poll() -> None:
        with httpx.Client(timeout=120) as client:
            while not done.is_set():
                start = time.perf_counter()
                client.get(f"{url}/healthz")
                waits.append(time.perf_counter() - start)
                time.sleep(0.005)

    poller = threading.Thread(target=poll)
    try:
        poller.start()
        time.sleep(0.3)
        start = time.perf_counter()
        body = {"model": "sim:default", "messages": [{"role": "user", "content": MESSAGE}]}
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120)
        took = time.perf_counter() - start
        time.sleep(0.3)
    finally:
        done.set()
        poller.join()
        proc.kill()
    return Stall(answer.status_code, took * 1000, max(waits) * 1000, len(waits))


def endless(workdir: Path, transport: str, timeout_s: float) -> Endless:
    port = free_port()
    engine = Proc("endless", [sys.executable, "-c", ENDLESS, str(port)], workdir / "endless.log", lambda: listens(port))
    engine.start()
    env = {
        "PCFJ_OPENAI_API_KEY": "sk-bench-0123456789abcdef",
        "PCFJ_OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "PCFJ_OPENAI_TRANSPORT": transport,
        "PCFJ_DEFAULT_MODEL": "openai:judge-x",
        "PCFJ_MAX_RETRIES": "0",
        "PCFJ_REQUEST_TIMEOUT_S": f"{timeout_s:g}",
    }
    proc, url = _serve(workdir, f"serve-{transport}", env)
    assert proc.popen is not None
    try:
        rest = peak = rss_mb(proc.popen.pid)
        answers: list[int | None] = []

        def call() -> None:
            try:
                answers.append(httpx.post(f"{url}/judge/listwise", json=LISTWISE, timeout=timeout_s + 30).status_code)
            except httpx.HTTPError:
                answers.append(None)

        caller = threading.Thread(target=call)
        start = time.perf_counter()
        caller.start()
        while caller.is_alive():
            peak = max(peak, rss_mb(proc.popen.pid))
            time.sleep(0.05)
        return Endless(transport, rest, peak, answers[0], time.perf_counter() - start)
    finally:
        proc.kill()
        engine.kill()


def run(
    timeout_s: float, transports: tuple[str, ...] = ("wire", "sdk"), bursts: tuple[BurstPlan, ...] = ()
) -> tuple[Stall, list[Endless], list[Burst]]:
    with tempfile.TemporaryDirectory(prefix="pcfjudge-safety-") as tmp:
        workdir = Path(tmp)
        stalled, bodies = stall(workdir), [endless(workdir, t, timeout_s) for t in transports]
        return stalled, bodies, [measure(workdir, b) for b in bursts]


def format_report(stalled: Stall, bodies: list[Endless], bursts: Sequence[Burst] = ()) -> str:
    lines = [
        f"144 KB chat message: {stalled.status} in {stalled.answer_ms:.0f} ms; "
        f"longest /healthz wait meanwhile {stalled.longest_wait_ms:.1f} ms ({stalled.polls} polls)",
    ]
    for b in bodies:
        ended = f"{b.status}" if b.status is not None else "no answer"
        lines.append(
            f"endless provider body ({b.transport}): RSS {b.rest_mb:.0f} MB at rest, peak {b.peak_mb:.0f} MB "
            f"(+{b.peak_mb - b.rest_mb:.0f}); the request ended {ended} after {b.seconds:.1f} s"
        )
    lines.extend(format_burst(b) for b in bursts)
    return "\n".join(lines)
