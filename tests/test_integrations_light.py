"""The trainer-side integrations import only httpx and the standard library: a training process that uses them loads
no FastAPI, Redis, provider SDK or torch through pcfjudge."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.helpers import ROOT

ALLOWED = {"httpx", "pcfjudge.client.http", "pcfjudge.integrations.service", "pcfjudge.reward.text", "__future__"}


def test_integrations_import_only_httpx_and_the_standard_library() -> None:
    for name in ("service", "trl", "verl"):
        tree = ast.parse((ROOT / "app" / "pcfjudge" / "integrations" / f"{name}.py").read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert all(m in ALLOWED or m.split(".")[0] in sys.stdlib_module_names for m in imported), (name, imported)
    for name in ("http",):
        tree = ast.parse((ROOT / "app" / "pcfjudge" / "client" / f"{name}.py").read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert all(m in ALLOWED or m.split(".")[0] in sys.stdlib_module_names for m in imported), (name, imported)
    script = (
        "import sys, pcfjudge.integrations.trl, pcfjudge.integrations.verl\n"
        "heavy = {'fastapi', 'starlette', 'redis', 'openai', 'anthropic', 'uvicorn', 'prometheus_client', 'torch'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
