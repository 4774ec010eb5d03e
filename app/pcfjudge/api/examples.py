"""A working request body for every operation of the OpenAPI document, so that "Try it out" in Swagger UI (``/docs``)
sends a body the service accepts, not one generated from the schema (``"candidates": ["string"]`` is a 422). Each
door declares its own routes' (``DoorSpec.examples``); the jobs route's runs the first job route's.

``add_examples`` puts each as its operation's ``application/json`` ``example``; ``pcfjudge.api.routes.playground_routes.install``
applies it to the app's document. tests/api/test_openapi_examples.py holds every operation with a request body to having
one here, valid against the operation's schema and answered 200 by the simulated judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pcfjudge.doors.door_list import DOORS, JOB_ROUTES

BY_PATH: dict[str, Mapping[str, Any]] = {path: body for door in DOORS for path, body in door.examples.items()}
FIRST_JOB = next(path for path in JOB_ROUTES if path in BY_PATH)
EXAMPLES: dict[tuple[str, str], Mapping[str, Any]] = {
    **{("post", path): body for path, body in BY_PATH.items()},
    # answered 202; GET its Location (in /docs: GET /v1/jobs/{job_id} with the id) for the rest
    ("post", "/v1/jobs"): {"endpoint": FIRST_JOB, "request": BY_PATH[FIRST_JOB]},
}


def add_examples(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each operation's JSON request body example set (in place; operations absent are skipped)."""
    for (method, path), example in EXAMPLES.items():
        operation = document.get("paths", {}).get(path, {}).get(method)
        if operation is None or "requestBody" not in operation:
            continue
        media = operation["requestBody"].get("content", {}).get("application/json")
        if media is not None:
            media["example"] = example
    return document
