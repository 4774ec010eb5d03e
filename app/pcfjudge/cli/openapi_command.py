"""Export the service's OpenAPI document (``pcfjudge openapi``); a test fails when openapi/openapi.json is stale."""

from __future__ import annotations

import json
from pathlib import Path

from pcfjudge.api.app import create_app
from pcfjudge.settings import Settings

# From a checkout: <repo>/openapi/openapi.json (this file is <repo>/app/pcfjudge/openapi_export.py).
DEFAULT_PATH = Path(__file__).resolve().parents[3] / "openapi" / "openapi.json"


def render() -> str:
    """The OpenAPI document of an app on default settings, as stable, pretty JSON."""
    spec = create_app(Settings()).openapi()
    return json.dumps(spec, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(path: Path = DEFAULT_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(), encoding="utf-8")
    return path
