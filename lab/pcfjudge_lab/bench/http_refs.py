"""The references of ``pcfjudge bench http``: a provider client alone, in its own process, against the fake.

``python -m pcfjudge_lab.bench.http_refs --url URL --client NAME --calls N --concurrency C`` makes N Chat Completions
calls of one listwise prompt (the shape the service sends: the same rendering and request builder), C at a time,
on the event loop the service runs on (uvloop when installed), and prints one JSON line: calls per second and the
process CPU time per call. Clients:

* ``sdk-httpx2``: ``AsyncOpenAI().chat.completions.create`` with the SDK's default transport;
* ``sdk-aiohttp``: the same with ``http_client=DefaultAioHttpClient()``;
* ``backend``: the service's own OpenAI backend (``build_openai`` from the same settings), ``complete()`` alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pcfjudge.surface import DecodingParams, JudgeCall, Settings, new_nonce, render_listwise

CLIENTS = ("sdk-httpx2", "sdk-aiohttp", "backend")
WARMUP_CALLS = 20


def sample_call(question: str, candidates: list[str], model: str) -> JudgeCall:
    """A listwise call as the judging layer builds it for these candidates in input order."""
    prompt = render_listwise(question, candidates, new_nonce())
    return JudgeCall(
        kind="listwise",
        model=model,
        system=prompt.system,
        prefix=prompt.prefix,
        body=prompt.body,
        schema_name=prompt.schema_name,
        schema=prompt.schema,
        question=question,
        displayed=tuple(candidates),
        params=DecodingParams(),
    )


async def _measure(call: Callable[[], Awaitable[object]], calls: int, concurrency: int) -> dict[str, float]:
    for _ in range(WARMUP_CALLS):
        await call()
    gate = asyncio.Semaphore(concurrency)
    failed = 0

    async def one() -> None:
        nonlocal failed
        async with gate:
            for attempt in range(3):  # a connection the server closed as we reused it: try again, and count it
                try:
                    await call()
                    return
                except Exception:
                    failed += 1
                    if attempt == 2:
                        raise

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"calls": calls, "calls_per_s": calls / wall, "cpu_ms_per_call": cpu / calls * 1000, "failed": failed}


async def measure(client: str, url: str, calls: int, concurrency: int, call: JudgeCall) -> dict[str, float]:
    """Calls per second and CPU ms per call of ``client`` against the OpenAI-compatible server at ``url``."""
    from pcfjudge.surface import build_openai

    settings = Settings(openai_api_key="bench-key", openai_base_url=url, backend_concurrency=max(16, concurrency))
    backend = build_openai(settings)
    assert backend is not None
    if client == "backend":
        try:
            return await _measure(lambda: backend.complete(call), calls, concurrency)
        finally:
            await backend.aclose()
    from openai import AsyncOpenAI, DefaultAioHttpClient

    params = backend.request(call)  # the keyword arguments the service's SDK path sends
    await backend.aclose()
    extra: dict[str, Any] = {"http_client": DefaultAioHttpClient()} if client == "sdk-aiohttp" else {}
    sdk = AsyncOpenAI(api_key="bench-key", base_url=url, max_retries=0, **extra)
    try:
        return await _measure(lambda: sdk.chat.completions.create(**params), calls, concurrency)
    finally:
        await sdk.close()


def run_alone(client: str, url: str, calls: int, concurrency: int, candidates: Sequence[str]) -> dict[str, float]:
    """``client`` alone in a process of its own (this module's ``main``): its calls per second and CPU per call."""
    argv = [
        sys.executable,
        "-m",
        "pcfjudge_lab.bench.http_refs",
        "--url",
        url,
        "--client",
        client,
        "--calls",
        str(calls),
    ]
    argv += ["--concurrency", str(concurrency), "--question", "When and where was the Peace of Westphalia signed?"]
    for text in candidates:
        argv += ["--candidate", text]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{client} alone failed ({done.returncode}): {done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_loop(main: Awaitable[dict[str, float]]) -> dict[str, float]:
    """Run on uvloop when installed (as uvicorn does), else asyncio's default loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] installs it
        return asyncio.run(main)  # type: ignore[arg-type]
    return uvloop.run(main)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8100/v1")
    parser.add_argument("--client", choices=CLIENTS, required=True)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--question", required=True)
    parser.add_argument("--candidate", action="append", required=True)
    args = parser.parse_args()
    call = sample_call(args.question, args.candidate, "bench-judge")
    print(json.dumps(run_loop(measure(args.client, args.url, args.calls, args.concurrency, call))))


if __name__ == "__main__":
    main()
