"""``http.read_body``: a door route of the lean shape answers every body exactly as FastAPI's own handler answers it
(the same route served both ways, side by side in one app), the body is parsed once, and only routes of that shape
take the lean handler."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from fastapi.routing import APIRoute
from pcfjudge.api.app import create_app
from pcfjudge.doors.listwise import listwise_routes
from pcfjudge.doors.pairwise import pairwise_routes
from pcfjudge.doors.rerank import rerank_routes
from pcfjudge.doors.reward import reward_adapter_routes
from pcfjudge.http import read_body
from pcfjudge.http.read_body import ReadRoute, lean_handler

PLAIN = "/test/plain-listwise"
QUESTION = "Which city is the capital of Australia?"
GOOD: dict[str, Any] = {"question": QUESTION, "candidates": ["Canberra.", "Sydney.", "Perth."], "k": 3}

BODIES: list[tuple[str, bytes, str | None]] = [
    ("valid", json.dumps(GOOD).encode(), "application/json"),
    ("valid, charset", json.dumps(GOOD).encode(), "application/json; charset=utf-8"),
    ("valid, +json", json.dumps(GOOD).encode(), "application/vnd.pcfjudge+json"),
    ("runs included", json.dumps({**GOOD, "include_runs": True}).encode(), "application/json"),
    ("missing question", json.dumps({"candidates": ["a", "b"]}).encode(), "application/json"),
    ("wrong type", json.dumps({**GOOD, "k": "seven"}).encode(), "application/json"),
    ("unknown field", json.dumps({**GOOD, "colour": "red"}).encode(), "application/json"),
    ("one candidate", json.dumps({**GOOD, "candidates": ["only"]}).encode(), "application/json"),
    ("not an object", b"[1, 2, 3]", "application/json"),
    ("null", b"null", "application/json"),
    ("a string", b'"judge this"', "application/json"),
    ("not JSON", b"{question: 1}", "application/json"),
    ("no content type", json.dumps(GOOD).encode(), None),
    ("text content type", json.dumps(GOOD).encode(), "text/plain"),
    ("text +json", json.dumps(GOOD).encode(), "text/x+json"),
    ("duplicate key", b'{"question": "a", "question": "b", "candidates": ["x", "y"]}', "application/json"),
]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """The service's app, with /judge/listwise's own endpoint also served by FastAPI's handler (``PLAIN``)."""
    app = create_app()
    app.router.add_api_route(
        PLAIN,
        listwise_routes.judge_listwise_route,
        methods=["POST"],
        route_class_override=APIRoute,
    )
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as c:
            yield c


def _comparable(response: httpx.Response) -> tuple[int, Any]:
    try:
        data = response.json()
    except ValueError:
        return response.status_code, response.text
    if isinstance(data, dict):
        data.pop("request_id", None)
    return response.status_code, data


@pytest.mark.parametrize("threaded", [False, True], ids=["here", "in a thread"])
@pytest.mark.parametrize(("name", "payload", "content_type"), BODIES, ids=[b[0] for b in BODIES])
async def test_the_lean_handler_answers_as_fastapis_own(
    client: httpx.AsyncClient,
    name: str,
    payload: bytes,
    content_type: str | None,
    threaded: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Validated here or, as a large body is, in a worker thread (every body is large to the second run)."""
    if threaded:
        monkeypatch.setattr(read_body, "THREAD_FROM_BYTES", 0)
    headers = {"content-type": content_type} if content_type is not None else {}
    await client.post("/judge/listwise", content=payload, headers=headers)  # a judgment's runs: cached for both
    lean = await client.post("/judge/listwise", content=payload, headers=headers)
    plain = await client.post(PLAIN, content=payload, headers=headers)
    assert _comparable(lean) == _comparable(plain), name
    assert lean.headers["content-type"] == plain.headers["content-type"]
    if name.startswith("valid"):
        assert lean.status_code == 200 and lean.json()["winners"]
    elif name != "runs included":
        assert 400 <= lean.status_code < 500, (name, lean.status_code)


def test_only_routes_of_the_door_shape_take_the_lean_handler() -> None:
    """/judge/listwise, /judge/pairwise and the rerank doors: one body model and the request, returning a Response →
    lean. OpenRLHF's /get_reward solves dependencies (its query options) and TEI's /info takes no body → FastAPI's."""
    (listwise,) = [r for r in listwise_routes.router.routes if isinstance(r, ReadRoute)]
    (pairwise,) = [r for r in pairwise_routes.router.routes if isinstance(r, ReadRoute)]
    rerank = {r.path: r for r in rerank_routes.router.routes if isinstance(r, ReadRoute)}
    tei = {r.path: r for r in rerank_routes.tei_router.routes if isinstance(r, ReadRoute)}
    adapters = {r.path: r for r in reward_adapter_routes.router.routes if isinstance(r, ReadRoute)}
    lean = [listwise, pairwise, rerank["/v1/rerank"], rerank["/v2/rerank"], tei["/rerank"]]
    assert all(lean_handler(route) is not None for route in lean)
    assert lean_handler(adapters["/get_reward"]) is None and lean_handler(tei["/info"]) is None


async def test_a_body_is_parsed_once(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The body middleware's strict parse is the only one, on the lean handler's way (/judge/listwise) and on
    FastAPI's (/judge/pairwise reads the parsed value through ``ReadRequest``); a plain FastAPI route parses again.
    The runs are cached first, so no backend answer is parsed in the counted requests."""
    pair = {"question": QUESTION, "response_a": "Canberra.", "response_b": "Sydney."}
    sent = [("/judge/listwise", GOOD, 1), ("/judge/pairwise", pair, 1), (PLAIN, GOOD, 2)]
    for path, body, _ in sent:
        assert (await client.post(path, json=body)).status_code == 200
    parses = []
    real = json.loads

    def counted(*args: Any, **kwargs: Any) -> Any:
        parses.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(json, "loads", counted)  # the one module both the middleware and Starlette parse with
    for path, body, expected in sent:
        parses.clear()
        reply = await client.post(path, json=body)
        assert reply.status_code == 200, reply.text
        assert len(parses) == expected, path


async def test_a_body_repeated_byte_for_byte_is_validated_once(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lean handler keeps what it validated by the body's bytes: the same bytes again are not validated again,
    a body one byte apart is; a body over ``KEPT_BYTES`` is validated every time. Request models are frozen, so the
    requests sharing one cannot change it."""
    validated = []
    real = read_body.request_body_to_args

    async def counted(*args: Any, **kwargs: Any) -> Any:
        validated.append(1)
        return await real(*args, **kwargs)

    monkeypatch.setattr(read_body, "request_body_to_args", counted)
    body = json.dumps({**GOOD, "question": QUESTION + " (kept)"}).encode()
    headers = {"content-type": "application/json"}
    answers = [await client.post("/judge/listwise", content=body, headers=headers) for _ in range(3)]
    assert [a.status_code for a in answers] == [200] * 3 and len(validated) == 1
    assert _comparable(answers[1]) == _comparable(answers[2])
    await client.post("/judge/listwise", content=body + b" ", headers=headers)  # other bytes, the same JSON
    assert len(validated) == 2
    long = {**GOOD, "question": QUESTION + " " + "x" * read_body.KEPT_BYTES}
    for _ in range(2):
        assert (await client.post("/judge/listwise", json=long)).status_code == 200
    assert len(validated) == 4
    from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="frozen"):
        ListwiseRequest.model_validate(GOOD).k = 5


async def test_a_large_body_is_validated_and_planned_in_a_worker_thread(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From ``THREAD_FROM_BYTES`` a body's validation and its door's plan run in a worker thread (10,000 documents
    held the event loop for about 70 ms), answered now or queued as a job; a smaller one's on the loop."""
    threads: dict[str, list[bool]] = {"validated": [], "planned": []}
    validate, plan = read_body.request_body_to_args, rerank_routes.build_plan

    async def validated(*args: Any, **kwargs: Any) -> Any:
        threads["validated"].append(threading.current_thread() is threading.main_thread())
        return await validate(*args, **kwargs)

    def planned(*args: Any, **kwargs: Any) -> Any:
        threads["planned"].append(threading.current_thread() is threading.main_thread())
        return plan(*args, **kwargs)

    monkeypatch.setattr(read_body, "request_body_to_args", validated)
    monkeypatch.setattr(rerank_routes, "build_plan", planned)
    monkeypatch.setattr(read_body, "THREAD_FROM_BYTES", 4096)
    small = {"model": "rerank-v3.5", "query": QUESTION, "documents": ["Canberra.", "Sydney."]}
    large = small | {"documents": [f"{city} (document {i})" for i in range(300) for city in ("Canberra", "Perth")]}
    assert len(json.dumps(small)) < 4096 <= len(json.dumps(large))
    for body in (small, large):
        reply = await client.post("/v2/rerank", json=body)
        assert reply.status_code == 200, reply.text
    assert threads == {"validated": [True, False], "planned": [True, False]}
    for body in (small, large):  # the same bodies as jobs: checked (and planned) at intake the same way
        reply = await client.post("/v1/jobs", json={"endpoint": "/v2/rerank", "request": body})
        assert reply.status_code == 202, reply.text
    assert threads["planned"] == [True, False, True, False]
