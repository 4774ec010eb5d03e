"""Every request body in the OpenAPI document has a working example: it validates against the operation's schema,
the simulated judge answers it 200, and Swagger UI's "Try it out" at /docs sends it as it is (in chromium)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from pcfjudge.api.app import create_app
from pcfjudge.api.examples import EXAMPLES

DOCUMENT = create_app().openapi()
OPERATIONS = [
    (method, path, operation)
    for path, operations in DOCUMENT["paths"].items()
    for method, operation in operations.items()
    if "requestBody" in operation
]


def example_of(operation: dict[str, Any]) -> Any:
    return operation["requestBody"]["content"]["application/json"].get("example")


def test_every_operation_with_a_body_has_an_example() -> None:
    missing = [f"{m.upper()} {p}" for m, p, operation in OPERATIONS if example_of(operation) is None]
    assert OPERATIONS and missing == [], f"add a working example for {missing} in pcfjudge/api/examples.py"
    assert {(m, p) for m, p, _ in OPERATIONS} == set(EXAMPLES)  # and none for an operation that is gone


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
def test_each_example_validates_against_its_schema(method: str, path: str, operation: dict[str, Any]) -> None:
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    # The document's components ride along at the root, so "#/components/schemas/..." resolves.
    validator = Draft202012Validator({**schema, "components": DOCUMENT["components"]})
    errors = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(example_of(operation))
    ]
    assert errors == []


def success_of(operation: dict[str, Any]) -> int:
    """The status an accepted request gets: 200, or 202 for an operation answering only 202 (POST /v1/jobs)."""
    return min(int(code) for code in operation["responses"] if code.startswith("2"))


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
async def test_each_example_is_answered_200_by_the_simulated_judge(
    client: httpx.AsyncClient, method: str, path: str, operation: dict[str, Any]
) -> None:
    response = await client.request(method.upper(), path, json=example_of(operation))
    assert response.status_code == success_of(operation), response.text


def test_the_served_document_carries_them_and_so_does_openapi_json() -> None:
    import json

    from pcfjudge.cli.openapi_command import DEFAULT_PATH

    exported = json.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
    for (method, path), example in EXAMPLES.items():
        assert exported["paths"][path][method]["requestBody"]["content"]["application/json"]["example"] == example


# ── in Swagger UI: "Try it out", then "Execute", sends the example and shows the 200 ─────────────────────────────


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from tests.support.browser import chromium, require_chromium

    require_chromium()
    with chromium() as b:
        yield b


@pytest.mark.slow
def test_try_it_out_in_swagger_ui_sends_the_example_and_gets_200(browser: Any, serve_url: str) -> None:
    from tests.support.browser import Watched

    with Watched.open(browser, serve_url, "/docs") as w:
        page = w.page
        for method, path, operation in OPERATIONS:
            tag = operation.get("tags", ["default"])[0]
            block = page.locator(f"#operations-{tag}-{operation['operationId']}")
            block.locator(".opblock-summary-control").click()
            block.locator("button.try-out__btn").click()
            with page.expect_response(lambda r, p=path: r.url.split("?")[0] == f"{w.base_url}{p}") as answer:
                block.locator("button.execute").click()
            sent = answer.value.request.post_data_json
            assert answer.value.status == success_of(operation), (method, path, answer.value.text())
            assert sent == example_of(operation), (method, path)
        assert w.external_requests() == []
