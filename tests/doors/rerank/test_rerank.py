"""``POST /rerank`` (text-embeddings-inference shape) and ``POST /v1/rerank`` + ``/v2/rerank`` (Cohere/Jina shape) on
their documented examples: the same consensus as ``/judge/listwise`` on the same texts (relevance = consensus/100),
best first, ties equal and in request order, and every error in the route's own error shape and status. One document
is judged pointwise, as a reward group of one; ``GET /info`` answers in TEI's shape."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pcfjudge.doors.rerank.rerank_plan import order_by_consensus
from pcfjudge.settings import Settings

from tests.support.inprocess import FakeProvider, app_client, provider_settings

# text-embeddings-inference's quick tour (docs/source/en/quick_tour.md).
TEI_EXAMPLE = {"query": "What is Deep Learning?", "texts": ["Deep Learning is not...", "Deep learning is..."]}
# The cohere SDK's docstring example for v1 rerank (documents as {"text"} objects, top_n 3).
COHERE_DOCS = [
    "Carson City is the capital city of the American state of Nevada.",
    "The Commonwealth of the Northern Mariana Islands is a group of islands in the Pacific Ocean. Its capital is Saipan.",
    "Capitalization or capitalisation in English grammar is the use of a capital letter at the start of a word. "
    "English usage varies from capitalization in other languages.",
    "Washington, D.C. (also known as simply Washington or D.C., and officially as the District of Columbia) is the "
    "capital of the United States. It is a federal district.",
    "Capital punishment has existed in the United States since beforethe United States was a country. As of 2017, "
    "capital punishment is legal in 30 of the 50 states.",
]
COHERE_QUERY = "What is the capital of the United States?"


async def consensus(client: httpx.AsyncClient, question: str, texts: list[str], **extra: Any) -> dict[int, float]:
    """Each text's consensus from /judge/listwise on the same question and texts."""
    body = {"question": question, "candidates": texts, "include_runs": False, **extra}
    response = await client.post("/judge/listwise", json=body)
    assert response.status_code == 200, response.text
    return {int(c["id"]): c["consensus"] for c in response.json()["candidates"]}


def best_first(scores: dict[int, float]) -> list[int]:
    return sorted(scores, key=lambda i: (-scores[i], i))


def test_ties_keep_equal_scores_in_request_order() -> None:
    assert order_by_consensus({0: 40.0, 1: 75.5, 2: 40.0, 3: 75.5, 4: 90.0}) == [4, 1, 3, 0, 2]


# ── TEI ────────────────────────────────────────────────────────────────────────────────────────────────────────


async def test_tei_documented_example(client: httpx.AsyncClient) -> None:
    response = await client.post("/rerank", json={**TEI_EXAMPLE, "raw_scores": False})
    assert response.status_code == 200, response.text
    ranks = response.json()
    assert isinstance(ranks, list) and all(set(rank) == {"index", "score"} for rank in ranks)
    expected = await consensus(client, TEI_EXAMPLE["query"], TEI_EXAMPLE["texts"])
    assert [r["index"] for r in ranks] == best_first(expected)
    assert [r["score"] for r in ranks] == [round(expected[r["index"]] / 100, 6) for r in ranks]
    assert all(0 <= r["score"] <= 1 for r in ranks)


async def test_tei_return_text_raw_scores_and_extension(client: httpx.AsyncClient) -> None:
    body = {**TEI_EXAMPLE, "return_text": True, "raw_scores": True, "pcfjudge": {"k": 2, "seed": 3}}
    ranks = (await client.post("/rerank", json=body)).json()
    expected = await consensus(client, TEI_EXAMPLE["query"], TEI_EXAMPLE["texts"], k=2, seed=3)
    for rank in ranks:
        assert rank["text"] == TEI_EXAMPLE["texts"][rank["index"]]
        assert rank["score"] == expected[rank["index"]]  # raw: the consensus itself, 0–100
        assert rank["pcfjudge"]["id"] == str(rank["index"]) and rank["pcfjudge"]["consensus"] == rank["score"]


async def test_tei_truncate_cuts_from_the_chosen_side(make_client: Any) -> None:
    long_text = "Deep learning trains neural networks with many layers. " * 5  # 275 characters
    texts = [long_text, "A kind of cheese."]
    async with make_client(Settings(max_candidate_chars=100)) as client:
        refused = await client.post("/rerank", json={"query": "What is deep learning?", "texts": texts})
        assert refused.status_code == 422 and refused.json()["error_type"] == "Validation"
        assert "texts.0" in refused.json()["error"] and "100" in refused.json()["error"]
        for direction, cut in (("right", long_text[:100]), ("left", long_text[-100:])):
            body = {"query": "What is deep learning?", "texts": texts, "truncate": True}
            ranks = (await client.post("/rerank", json={**body, "truncation_direction": direction})).json()
            expected = await consensus(client, "What is deep learning?", [cut, texts[1]])
            assert {r["index"]: r["score"] for r in ranks} == {i: round(v / 100, 6) for i, v in expected.items()}


@pytest.mark.parametrize(
    ("body", "status", "error_type", "says"),
    [
        ({"query": "q", "texts": []}, 400, "Empty", "`texts` cannot be empty"),
        ({"query": "q", "texts": [f"text {i}" for i in range(10_001)]}, 413, "Validation", "maximum allowed 10000"),
        ({"query": "q"}, 422, "Validation", "texts: this field is required"),
        ({"query": "q", "texts": ["a", "b"], "top_k": 1}, 422, "Validation", "top_k: unknown field"),
        ({"query": "q", "texts": ["a", "  "]}, 422, "Validation", "texts.1"),
        ({"query": "q", "texts": ["a", "b"], "raw_scores": "yes"}, 422, "Validation", "raw_scores"),
    ],
)
async def test_tei_errors_in_tei_shape(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, error_type: str, says: str
) -> None:
    response = await client.post("/rerank", json=body)
    assert response.status_code == status, response.text
    error = response.json()
    assert set(error) == {"error", "error_type"} and error["error_type"] == error_type
    assert says in error["error"]


async def test_tei_invalid_json_is_a_tei_validation_error(client: httpx.AsyncClient) -> None:
    response = await client.post("/rerank", content=b'{"query": ', headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error_type"] == "Validation"


async def test_tei_backend_failures_are_424_backend_and_429_overloaded(fake: FakeProvider) -> None:
    fake.faults(always="500")
    async with app_client(provider_settings("openai", fake, max_retries=0)) as client:
        failed = await client.post("/rerank", json=TEI_EXAMPLE)
        fake.faults(always="429")
        limited = await client.post("/rerank", json={**TEI_EXAMPLE, "pcfjudge": {"cache": "bypass"}})
    assert failed.status_code == 424 and failed.json()["error_type"] == "Backend", failed.text
    assert "provider_error" in failed.json()["error"]
    assert limited.status_code == 429 and limited.json()["error_type"] == "Overloaded", limited.text
    assert int(limited.headers["retry-after"]) >= 1


# ── Cohere / Jina ──────────────────────────────────────────────────────────────────────────────────────────────


async def test_cohere_v1_documented_example(client: httpx.AsyncClient) -> None:
    body = {"model": "rerank-v4.0-pro", "query": COHERE_QUERY, "documents": [{"text": d} for d in COHERE_DOCS]}
    response = await client.post("/v1/rerank", json={**body, "top_n": 3, "return_documents": True})
    assert response.status_code == 200, response.text
    got = response.json()
    expected = await consensus(client, COHERE_QUERY, COHERE_DOCS)
    assert set(got) == {"id", "model", "results", "meta", "usage"} and got["id"] == response.headers["x-request-id"]
    assert [r["index"] for r in got["results"]] == best_first(expected)[:3]
    for result in got["results"]:
        assert result["relevance_score"] == round(expected[result["index"]] / 100, 6)
        assert result["document"] == {"text": COHERE_DOCS[result["index"]]}
    meta = got["meta"]
    assert meta["api_version"] == {"version": "1"} and meta["billed_units"]["search_units"] == 1
    assert meta["billed_units"]["input_tokens"] == meta["tokens"]["input_tokens"] > 0  # judged, not cached
    assert got["usage"]["total_tokens"] == meta["tokens"]["input_tokens"] + meta["tokens"]["output_tokens"]
    assert got["model"] == "sim:default"  # rerank-v4.0-pro is not one of our judges: the default judges


async def test_cohere_v2_rank_fields_model_and_full_detail(client: httpx.AsyncClient) -> None:
    documents = [{"title": "Nevada", "body": COHERE_DOCS[0]}, {"title": "USA", "body": COHERE_DOCS[3]}]
    body = {"model": "sim:oracle", "query": COHERE_QUERY, "documents": documents, "rank_fields": ["title", "body"]}
    got = (await client.post("/v2/rerank", json={**body, "pcfjudge": {"include_runs": True, "k": 2}})).json()
    detail = got["pcfjudge"]
    assert got["model"] == detail["model"] == "sim:oracle" and detail["k"] == 2 and len(detail["runs"]) == 2
    assert all("document" not in r for r in got["results"]) and got["meta"]["api_version"] == {"version": "2"}
    texts = [f"title: {d['title']}\nbody: {d['body']}" for d in documents]
    expected = await consensus(client, COHERE_QUERY, texts, model="sim:oracle", k=2)
    assert {r["index"]: r["relevance_score"] for r in got["results"]} == {
        i: round(v / 100, 6) for i, v in expected.items()
    }


async def test_cohere_max_tokens_per_doc_cuts_documents(client: httpx.AsyncClient) -> None:
    body = {"query": COHERE_QUERY, "documents": COHERE_DOCS[:3], "max_tokens_per_doc": 10}
    got = (await client.post("/v2/rerank", json=body)).json()
    expected = await consensus(client, COHERE_QUERY, [d[:40] for d in COHERE_DOCS[:3]])  # 4 characters a token
    assert {r["index"]: r["relevance_score"] for r in got["results"]} == {
        i: round(v / 100, 6) for i, v in expected.items()
    }


@pytest.mark.parametrize(
    ("body", "status", "error", "says"),
    [
        ({"documents": [f"doc {i}" for i in range(10_001)]}, 413, "too_many_documents", "PCFJ_MAX_ITEMS"),
        ({"documents": ["a", {"title": "b"}]}, 422, "validation_error", "documents.1: has no field 'text'"),
        ({"relevant_spans": {"mode": "enabled"}}, 422, "validation_error", "relevant_spans"),
        ({"model": "openai:gpt-5.4"}, 422, "validation_error", "not configured"),
        ({"top_n": 0}, 422, "validation_error", "top_n"),
        ({"pcfjudge": {"k": 2, "temperature": 1}}, 422, "validation_error", "pcfjudge.temperature"),
    ],
)
async def test_cohere_errors_name_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, error: str, says: str
) -> None:
    response = await client.post("/v2/rerank", json={"query": COHERE_QUERY, "documents": ["a", "b"], **body})
    assert response.status_code == status, response.text
    assert response.json()["error"] == error and says in response.json()["detail"]


async def test_tei_unreadable_body_is_a_tei_validation_error(client: httpx.AsyncClient) -> None:
    response = await client.post("/rerank", content=b"\xff2", headers={"content-type": "application/json"})
    assert response.status_code == 422 and set(response.json()) == {"error", "error_type"}


# ── one document, and TEI's model info ─────────────────────────────────────────────────────────────────────────

ONE = "Washington, D.C. is the capital of the United States."


async def test_one_document_is_judged_pointwise_as_a_reward_group_of_one(client: httpx.AsyncClient) -> None:
    """Every rerank route takes a single document: one call, relevance = the judge's score / 100, the very number
    (and the very call: a cache hit) /v1/reward gives a one-sample group of the same prompt and response."""
    tei = await client.post("/rerank", json={"query": COHERE_QUERY, "texts": [ONE], "pcfjudge": {}})
    assert tei.status_code == 200, tei.text
    (rank,) = tei.json()
    detail = rank["pcfjudge"]
    assert rank["index"] == 0 and rank["score"] == round(detail["mean_score"] / 100, 6)
    raw = (await client.post("/rerank", json={"query": COHERE_QUERY, "texts": [ONE], "raw_scores": True})).json()
    assert raw == [{"index": 0, "score": detail["mean_score"]}]  # the score itself, not the inflated consensus
    for version in ("v1", "v2"):
        cohere = await client.post(f"/{version}/rerank", json={"query": COHERE_QUERY, "documents": [{"text": ONE}]})
        assert cohere.status_code == 200, cohere.text
        assert cohere.json()["results"] == [{"index": 0, "relevance_score": rank["score"]}]
    full = (await client.post("/v2/rerank", json={"query": COHERE_QUERY, "documents": [ONE], "pcfjudge": {}})).json()
    assert (
        full["pcfjudge"]["k"] == 1
        and full["pcfjudge"]["usage"]["backend_calls"] + full["pcfjudge"]["usage"]["cache_hits"] == 1
    )
    reward = await client.post("/v1/reward", json={"samples": [{"prompt": COHERE_QUERY, "response": ONE}]})
    assert reward.status_code == 200, reward.text
    (sample,) = reward.json()["samples"]
    assert sample["scoring"] == "pointwise" and sample["reward"] == rank["score"]
    assert reward.json()["usage"]["cache_hits"] == 1 and reward.json()["usage"]["backend_calls"] == 0  # the same call


async def test_one_document_refused_by_the_judge_fails_as_any_rerank_does(fake: FakeProvider) -> None:
    fake.faults(always="500")
    async with app_client(provider_settings("openai", fake, max_retries=0)) as client:
        tei = await client.post("/rerank", json={"query": COHERE_QUERY, "texts": [ONE]})
        cohere = await client.post("/v2/rerank", json={"query": COHERE_QUERY, "documents": [ONE]})
    assert tei.status_code == 424 and tei.json()["error_type"] == "Backend", tei.text
    assert cohere.status_code == 502 and cohere.json()["error"] == "backend_error", cohere.text


async def test_two_documents_below_a_raised_minimum_are_still_refused(make_client: Any) -> None:
    async with make_client(Settings(min_candidates=3)) as client:
        two = await client.post("/v2/rerank", json={"query": COHERE_QUERY, "documents": ["a", "b"]})
        one = await client.post("/v2/rerank", json={"query": COHERE_QUERY, "documents": [ONE]})
    assert two.status_code == 422 and "send 1, or at least 3 (got 2)" in two.json()["detail"]
    assert one.status_code == 200


# Every key of text-embeddings-inference's ``Info`` (router/src/lib.rs, huggingface/text-embeddings-inference at
# 0d124dc9773be6ac5a9a57d8439aba9bbbf33273), in its order; ``model_type`` is the externally tagged ModelType enum.
TEI_INFO_KEYS = [
    "model_id",
    "model_sha",
    "model_dtype",
    "served_model_name",
    "model_type",
    "max_concurrent_requests",
    "max_input_length",
    "max_batch_tokens",
    "max_batch_requests",
    "max_client_batch_size",
    "auto_truncate",
    "tokenization_workers",
    "version",
    "sha",
    "docker_label",
]


async def test_info_answers_every_key_tei_returns_as_a_reranker(make_client: Any) -> None:
    async with make_client(Settings(max_items=120, max_pending_requests=40)) as client:
        response = await client.get("/info")
    assert response.status_code == 200, response.text
    info = response.json()
    assert list(info) == TEI_INFO_KEYS
    assert info["model_type"] == {"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}}
    assert info["model_id"] == info["served_model_name"] == "sim:default"
    assert (info["max_client_batch_size"], info["max_concurrent_requests"], info["auto_truncate"]) == (120, 40, False)
    assert isinstance(info["max_input_length"], int) and isinstance(info["version"], str)


async def test_info_needs_a_key_when_the_service_does(make_client: Any) -> None:
    async with make_client(Settings(api_keys="ops:sk-info-key")) as client:
        refused = await client.get("/info")
        allowed = await client.get("/info", headers={"authorization": "Bearer sk-info-key"})
    assert refused.status_code == 401 and allowed.status_code == 200
