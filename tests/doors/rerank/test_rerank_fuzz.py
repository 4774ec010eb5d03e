"""Generated bodies (right and wrong types, sizes and values) for the rerank routes: never a 5xx, and every answer in
the route's own shape: TEI's array or ``{"error", "error_type"}``, Cohere's results (best first) or ``{"error",
"detail"}``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pcfjudge.api.app import create_app
from pcfjudge.settings import Settings

TEXT = st.text(max_size=12)
WORDS = st.text(st.characters(codec="utf-8"), min_size=1, max_size=30).filter(str.strip)
ANY_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 20), st.floats(allow_nan=False, allow_infinity=False), TEXT
)
GOOD_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "k": st.integers(1, 6),
        "model": st.sampled_from(["sim:default", "sim:oracle"]),
        "weights": st.sampled_from(["uniform", "proposed", "score_only"]),
        "executions": st.integers(1, 2),
        "include_runs": st.booleans(),
        "cache": st.sampled_from(["use", "bypass"]),
    },
)
WILD_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "k": st.one_of(st.integers(-1, 6), st.just(99), TEXT),
        "model": st.sampled_from(["sim:nope", "openai:gpt-5.4", "x", ""]),
        "weights": st.one_of(st.just("nope"), st.dictionaries(TEXT, st.floats(-1, 2))),
        "executions": st.integers(0, 9),
        "include_runs": ANY_SCALAR,
        "extra": ANY_SCALAR,
    },
)
GOOD_TEI = st.fixed_dictionaries(
    {"query": WORDS, "texts": st.lists(WORDS, min_size=2, max_size=16)},
    optional={
        "raw_scores": st.booleans(),
        "return_text": st.booleans(),
        "truncate": st.booleans(),
        "truncation_direction": st.sampled_from(["left", "right", "Left", "Right"]),
        "pcfjudge": GOOD_OPTIONS,
    },
)
DOCUMENT = st.one_of(WORDS, st.fixed_dictionaries({"text": WORDS}, optional={"title": WORDS}))
GOOD_COHERE = st.fixed_dictionaries(
    {"query": WORDS, "documents": st.lists(DOCUMENT, min_size=2, max_size=16)},
    optional={
        "model": st.sampled_from(["rerank-v3.5", "sim:default", "jina-reranker-v2-base-multilingual"]),
        "top_n": st.integers(1, 20),
        "return_documents": st.booleans(),
        "max_tokens_per_doc": st.integers(1, 100),
        "max_chunks_per_doc": st.integers(1, 10),
        "priority": st.integers(0, 5),
        "relevant_spans": st.just({"mode": "disabled"}),
        "pcfjudge": GOOD_OPTIONS,
    },
)
WILD_VALUES = st.one_of(
    ANY_SCALAR, WILD_OPTIONS, st.lists(ANY_SCALAR, max_size=3), st.lists(TEXT, max_size=20), st.just(["a"] * 17)
)
FIELDS = [
    "query",
    "texts",
    "documents",
    "raw_scores",
    "return_text",
    "truncate",
    "truncation_direction",
    "pcfjudge",
    "model",
    "top_n",
    "return_documents",
    "rank_fields",
    "max_tokens_per_doc",
    "relevant_spans",
    "unknown",
]


def mutated(good: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A good body with one field replaced by (or given) a wild value, or removed."""

    def mutate(body: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        field = st.sampled_from(FIELDS)
        replaced = st.tuples(field, WILD_VALUES).map(lambda kv: {**body, kv[0]: kv[1]})
        removed = field.map(lambda name: {k: v for k, v in body.items() if k != name})
        return st.one_of(replaced, removed)

    return good.flatmap(mutate)


TEI_BODY = st.one_of(GOOD_TEI, mutated(GOOD_TEI))
COHERE_BODY = st.one_of(GOOD_COHERE, mutated(GOOD_COHERE))
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def app_client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(sim_latency_ms=0))) as client:
        yield client


@FUZZ
@given(body=TEI_BODY)
def test_tei_route_answers_every_body_in_its_shape(app_client: TestClient, body: dict[str, Any]) -> None:
    response = app_client.post("/rerank", json=body)
    assert response.status_code < 500, response.text
    got = response.json()
    if response.status_code == 200:
        scores = [rank["score"] for rank in got]
        assert scores == sorted(scores, reverse=True) and sorted(r["index"] for r in got) == list(range(len(got)))
    else:
        assert set(got) == {"error", "error_type"} and got["error"], got
        assert response.status_code in (400, 413, 422)


@FUZZ
@given(body=COHERE_BODY, path=st.sampled_from(["/v1/rerank", "/v2/rerank"]))
def test_cohere_routes_answer_every_body_in_their_shape(
    app_client: TestClient, body: dict[str, Any], path: str
) -> None:
    response = app_client.post(path, json=body)
    assert response.status_code < 500, response.text
    got = response.json()
    if response.status_code == 200:
        scores = [r["relevance_score"] for r in got["results"]]
        assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
        assert got["meta"]["billed_units"]["search_units"] == 1
    else:
        assert got["error"] and got["detail"] and response.status_code in (400, 413, 422), got
