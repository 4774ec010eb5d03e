"""Issue 37 items 4 and 6: a request's head and its JSON cannot hurt the service. Over real sockets to a real
``pcfjudge serve`` with API keys on: a head over PCFJ_MAX_HEADER_BYTES (64 KiB) or PCFJ_MAX_HEADER_COUNT (256) is a
431 with a JSON body, before authentication, and answered before the rest of it is read (a 50 MB header was read
whole and answered 200); a JSON body nested deeper than PCFJ_MAX_JSON_DEPTH (64) is a 422 on every POST route, with
or without a JSON content type (100,000 levels were a 500 and an ERROR log line). In process: the ASGI layer holds the
same head limits under any server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pcfjudge.api.app import create_app
from pcfjudge.settings import Settings

from tests.support.inprocess import app_client
from tests.support.processes import serve_process
from tests.support.raw_http import RawAnswer, raw_request

KEY = "alice-key-0123456789"
AUTH = ("Authorization", f"Bearer {KEY}")
POSTS = sorted(
    path for path, item in create_app(Settings()).openapi()["paths"].items() if "post" in item
)  # every POST route the service documents


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with serve_process(env={"PCFJ_API_KEYS": f"alice:{KEY}", "PCFJ_SIM_LATENCY_MS": "0"}) as url:
        yield url


def head(served: str, headers: list[tuple[str, str]], target: str = "/v1/models") -> RawAnswer:
    """GET ``target`` with ``headers``, patient past the limit (see ``raw_request``)."""
    return raw_request(served, "GET", target, headers, patient_after=60_000)


def refused_head(answer: RawAnswer) -> bool:
    return (
        answer.status == 431
        and json.loads(answer.body)["error"] == "headers_too_large"
        and "PCFJ_MAX_HEADER_BYTES" in json.loads(answer.body)["detail"]
        and len(json.loads(answer.body)["request_id"]) == 32  # issue 49: a 431 names its request too
    )


@pytest.mark.slow
def test_a_50_mb_header_is_refused_431_before_it_is_read(served: str) -> None:
    answer = head(served, [("X-Big", "a" * 50_000_000)])
    assert refused_head(answer), answer
    assert answer.sent < 1_000_000 and answer.seconds < 5  # cut off after about 64 KiB, not read to the end


@pytest.mark.slow
def test_too_many_headers_are_refused_431_before_authentication(served: str) -> None:
    many = [(f"X-H{i}", "v") for i in range(200_000)]
    assert refused_head(head(served, many))
    assert refused_head(head(served, many[:257]))  # no key: not a 401 first
    assert head(served, [AUTH, *many[:250]]).status == 200  # within the limits


@pytest.mark.slow
def test_a_head_just_within_the_limit_reaches_the_app(served: str) -> None:
    within = head(served, [AUTH, ("X-Pad", "a" * 60_000)])
    over = head(served, [AUTH, ("X-Pad", "a" * 70_000)])
    long_target = head(served, [AUTH], "/v1/models?" + "q" * 70_000)
    assert within.status == 200 and refused_head(over) and refused_head(long_target)


@pytest.mark.slow
@pytest.mark.parametrize("path", POSTS)
def test_json_nested_100000_deep_is_a_422_on_every_post_route(served: str, path: str) -> None:
    """(The chat door answers as OpenAI does: a 400 in OpenAI's error shape.)"""
    deep = b"[" * 100_000 + b"]" * 100_000
    for kind in (("Content-Type", "application/json"), ("X-No-Content-Type", "1")):
        answer = raw_request(served, "POST", path, [AUTH, kind], deep)
        body = json.loads(answer.body)
        assert answer.status == (400 if path == "/v1/chat/completions" else 422), (path, kind, answer)
        text = json.dumps(body)
        assert "PCFJ_MAX_JSON_DEPTH" in text and "nested" in text


@pytest.mark.slow
def test_deep_objects_and_arrays_inside_a_request_are_refused_and_shallow_ones_reach_the_route(served: str) -> None:
    nested: object = "x"
    for _ in range(70):
        nested = {"a": [nested]}  # 140 levels, inside an otherwise good request
    request = {"question": "q", "candidates": ["a", "b"], "metadata": nested}
    deep = raw_request(
        served, "POST", "/judge/listwise", [AUTH, ("Content-Type", "application/json")], json.dumps(request).encode()
    )
    shallow = raw_request(
        served,
        "POST",
        "/judge/listwise",
        [AUTH, ("Content-Type", "application/json")],
        json.dumps({"question": "q", "candidates": ["a", "b"], "k": 3}).encode(),
    )
    strings = raw_request(
        served,
        "POST",
        "/judge/listwise",
        [AUTH, ("Content-Type", "application/json")],
        json.dumps({"question": "[" * 5000 + "{" * 5000, "candidates": ["a", "b"], "k": 3}).encode(),
    )
    assert deep.status == 422 and "PCFJ_MAX_JSON_DEPTH" in deep.body.decode()
    assert shallow.status == 200 and strings.status == 200  # brackets inside strings are text, not nesting


async def test_the_asgi_layer_refuses_a_head_over_the_limits_under_any_server() -> None:
    async with app_client(Settings(api_keys=f"alice:{KEY}")) as client:
        big = await client.get("/v1/models", headers={"X-Pad": "a" * 70_000})
        many = await client.get("/v1/models", headers={f"X-H{i}": "v" for i in range(300)})
        fine = await client.get("/v1/models", headers={"Authorization": f"Bearer {KEY}", "X-Pad": "a" * 1000})
    for answer in (big, many):
        assert answer.status_code == 431 and answer.json()["error"] == "headers_too_large"
        assert "PCFJ_MAX_HEADER_COUNT" in answer.json()["detail"] and answer.json()["request_id"]
    assert fine.status_code == 200
