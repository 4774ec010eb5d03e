"""Issue 11: strict input types, valid Unicode, non-blank texts, limits in the schema, the last-resort JSON 500,
and /readyz without secrets."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from pcfjudge.api.app import create_app
from pcfjudge.settings import Settings

from tests.support.inprocess import app_client, app_with_services

BODY: dict[str, Any] = {"question": "Capital of France?", "candidates": ["Paris", "Lyon", "Nice"], "k": 3}
PAIR: dict[str, Any] = {"question": "2+2?", "response_a": "4", "response_b": "5"}


@pytest.mark.parametrize(
    ("route", "change", "field"),
    [
        ("/judge/listwise", {"k": True}, "k"),
        ("/judge/listwise", {"k": "7"}, "k"),
        ("/judge/listwise", {"k": 7.0}, "k"),
        ("/judge/listwise", {"executions": "1"}, "executions"),
        ("/judge/listwise", {"include_runs": 0}, "include_runs"),
        ("/judge/listwise", {"seed": False}, "seed"),
        ("/judge/listwise", {"question": "   \n\t"}, "question"),
        ("/judge/listwise", {"candidates": ["Paris", ""]}, "candidates.1"),
        ("/judge/listwise", {"candidates": [{"id": "a", "text": " "}, "Lyon"]}, "candidates.0.text"),
        ("/judge/pairwise", {"keyed": "no"}, "keyed"),
        ("/judge/pairwise", {"include_runs": 1}, "include_runs"),
        ("/judge/pairwise", {"response_b": ""}, "response_b"),
    ],
)
async def test_no_coercion_and_no_blank_texts(route: str, change: dict[str, Any], field: str) -> None:
    base = BODY if route == "/judge/listwise" else PAIR
    async with app_client() as client:
        response = await client.post(route, json={**base, **change})
    assert response.status_code == 422, response.text
    assert field in [e["field"] for e in response.json()["errors"]]


LONE = '"\\ud800"'  # a JSON string holding a lone surrogate escape


def raw(template: str) -> str:
    return template.replace("LONE", LONE)


@pytest.mark.parametrize(
    ("route", "raw", "field"),
    [
        ("/judge/listwise", raw('{"question": "q", "candidates": ["ok", LONE]}'), "candidates"),
        ("/judge/listwise", raw('{"question": "q", "candidates": [{"id": "a", "text": LONE}, "b"]}'), "[0].text"),
        ("/judge/listwise", raw('{"question": LONE, "candidates": ["a", "b"]}'), "question"),
        ("/judge/pairwise", raw('{"question": "q", "response_a": LONE, "response_b": "b"}'), "response_a"),
    ],
)
def test_lone_surrogates_are_a_422_naming_the_field_and_the_connection_survives(
    serve_url: str, route: str, raw: str, field: str
) -> None:
    with httpx.Client(base_url=serve_url, timeout=30) as client:  # one keep-alive connection for all three
        bad = client.post(route, content=raw, headers={"content-type": "application/json"})
        assert bad.status_code == 422, bad.text
        body = bad.json()
        assert body["error"] == "validation_error" and "lone surrogate" in body["detail"]
        assert any(field in e["field"] + e["message"] for e in body["errors"])
        assert client.post("/judge/listwise", json=BODY).status_code == 200
        assert client.post("/judge/pairwise", json=PAIR).status_code == 200


async def test_openapi_states_every_enforced_limit() -> None:
    async with app_client() as client:
        schema = (await client.get("/openapi.json")).json()
    listwise = schema["components"]["schemas"]["ListwiseRequest"]["properties"]
    assert (listwise["candidates"]["minItems"], listwise["candidates"]["maxItems"]) == (2, 1000)  # PCFJ_MAX_ITEMS
    assert listwise["question"]["maxLength"] == 32_000 and listwise["question"]["minLength"] == 1
    assert (listwise["executions"]["minimum"], listwise["executions"]["maximum"]) == (1, 5)
    k = next(s for s in listwise["k"].get("anyOf", [listwise["k"]]) if s.get("type") == "integer")
    assert (k["minimum"], k["maximum"]) == (1, 64)
    pairwise = schema["components"]["schemas"]["PairwiseRequest"]["properties"]
    assert pairwise["response_a"]["maxLength"] == 32_000


async def test_an_unexpected_exception_is_one_json_500_with_the_request_id(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with app_with_services() as (client, services):
        real = services.judge

        class Broken:
            style = real.style
            model = real.model
            resolve = real.resolve
            settings = real.settings
            checked = real.checked

            async def run(self, plan: object, watch: object) -> object:
                raise RuntimeError("boom in the judge")

        services.judge = Broken()  # type: ignore[assignment]
        response = await client.post("/judge/listwise", json=BODY, headers={"x-request-id": "req-42"})
        assert response.status_code == 500
        assert response.json() == {
            "error": "internal_error",
            "detail": "the service failed unexpectedly (request req-42); this is a bug, please report it",
            "request_id": "req-42",
        }
        assert response.headers["x-request-id"] == "req-42"
        assert (await client.get("/healthz")).status_code == 200  # the app keeps serving
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "RuntimeError: boom in the judge" in errors[0].getMessage()
    assert "\n" not in errors[0].getMessage() and errors[0].exc_info is None


async def test_readyz_redacts_query_strings_and_credentials() -> None:
    url = "http://user:hunter2@127.0.0.1:9/v1?api-key=SECRET-QS#frag"
    settings = Settings(openai_api_key=None, openai_base_url=url, anthropic_api_key=None)  # credentials: Basic
    async with app_client(settings) as client:
        ready = await client.get("/readyz")
    text = json.dumps(ready.json())
    assert ready.json()["endpoints"]["openai"] == "http://127.0.0.1:9/v1/"
    assert "SECRET-QS" not in text and "hunter2" not in text


def test_app_builds_with_no_catch_all_exception_handler() -> None:
    """A handler for Exception would run inside Starlette's ServerErrorMiddleware, which re-raises to the server
    (traceback logged twice, connection closed): the request middleware answers instead."""
    app = create_app(Settings())
    assert Exception not in app.exception_handlers
