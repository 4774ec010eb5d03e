"""``pcfjudge bench imports``: what a served process has loaded of the package after one judgment (modules and lines,
the largest first). A figure to read, not a cap: imports sit at the top of the modules that use them.

Measured in a fresh interpreter, so that nothing else counts: the app on default settings (no Redis, no tracing, no
calibration records) started with its lifespan, one ``POST /judge/listwise`` over ASGI, then the lines of every
``pcfjudge`` module in ``sys.modules``, and every module loaded by its top-level package (the SDKs, the framework).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from collections import Counter
    from pathlib import Path

    import httpx
    from asgi_lifespan import LifespanManager

    from pcfjudge.api.app import create_app
    from pcfjudge.settings import Settings


    async def judge_once() -> None:
        app = create_app(Settings())
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as client:
                body = {"question": "q?", "candidates": ["a", "b", "c"], "k": 3}
                reply = await client.post("/judge/listwise", json=body)
                assert reply.status_code == 200, reply.text

    asyncio.run(judge_once())
    files = {
        name: Path(module.__file__)
        for name, module in list(sys.modules.items())
        if name.split(".")[0] == "pcfjudge" and getattr(module, "__file__", None)
    }
    lines = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in files.items()}
    packages = Counter(name.split(".")[0] for name in list(sys.modules))
    print(json.dumps({"lines": lines, "packages": packages}))
    """
)


@dataclass(frozen=True)
class Loaded:
    lines: dict[str, int]  # each pcfjudge module's lines
    packages: Counter[str]  # modules loaded, by top-level package


def run(timeout_s: float = 120.0) -> Loaded:
    """What a served judgment loaded: each ``pcfjudge`` module's lines, and every module by package."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"the served judgment failed:\n{done.stderr[-2000:]}")
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    return Loaded(seen["lines"], Counter(seen["packages"]))


def format_report(loaded: Loaded, top: int = 15) -> str:
    lines = loaded.lines
    largest = sorted(lines.items(), key=lambda item: -item[1])[:top]
    rows = "\n".join(f"  {n:5d} {name}" for name, n in largest)
    packages = ", ".join(f"{name} {n}" for name, n in loaded.packages.most_common(top))
    return (
        f"a served judgment loaded {len(lines)} modules, {sum(lines.values())} lines; the largest:\n{rows}\n"
        f"modules in all: {sum(loaded.packages.values())}; by package: {packages}"
    )
