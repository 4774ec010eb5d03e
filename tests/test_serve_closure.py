"""What a started service has imported of the package after one judgment stays small (issue 36 item 8): the optional
parts (Redis, webhooks, juries, drift, reward groups, the OpenAPI examples, span building) are imported where they
are used, not by every replica that never uses them.

Checked in a fresh interpreter, so that no other test's imports count: the app on default settings (no Redis, no
tracing, no calibration records) started with its lifespan, one ``POST /judge/listwise`` over ASGI (as
``tests.support.inprocess.app_with_services`` does), then the lines of every ``pcfjudge`` module in ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

MAX_LINES = 13_000

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
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
    print(json.dumps({name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in files.items()}))
    """
)


def test_a_served_judgment_imports_at_most_13000_lines_of_the_package() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    assert "pcfjudge.engine.listwise_runs" in lines  # it did judge
    total = sum(lines.values())
    largest = sorted(lines.items(), key=lambda item: -item[1])[:15]
    top = "\n".join(f"  {n:5d} {name}" for name, n in largest)
    assert total <= MAX_LINES, f"{len(lines)} modules, {total} lines (at most {MAX_LINES}); the largest:\n{top}"
