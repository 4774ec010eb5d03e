"""The frameworks' own rerank clients against a real ``pcfjudge serve``, each with 1, 2 and many documents.

Every client that installs without a GPU: the ``cohere`` SDK (``ClientV2``, v1 ``Client``, both sync and async),
langchain-cohere's ``CohereRerank.compress_documents``, llama-index's Cohere and TEI postprocessors, haystack's
``HuggingFaceTEIRanker`` and ``CohereRanker``, and ``tei-client`` (which reads ``GET /info`` before it reranks).
Each must give the service's own numbers: for two or more documents the consensus / 100 of ``/judge/listwise`` on the
same texts, best first; for one document the reward ``/v1/reward`` gives a group of one (the judge's score / 100).

Retries (how a judge failure reaches llama-index's ``CohereRerank``): a 502 (the judge's answers failed after the
service's own retries) is retried by the cohere SDK under it (every 5xx, twice); a 503 (the provider is rate limited
or overloaded, with Retry-After) is retried by the SDK and then by llama-index's own loop as well.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # haystack would post usage statistics to the internet

import cohere
from cohere.core.api_error import ApiError
from haystack import Document as HaystackDocument
from haystack.utils import Secret
from haystack_integrations.components.rankers.cohere import CohereRanker
from haystack_integrations.components.rankers.huggingface_api import HuggingFaceTEIRanker
from langchain_cohere import CohereRerank as LangchainCohereRerank
from langchain_core.documents import Document as LangchainDocument
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.postprocessor.cohere_rerank import CohereRerank as LlamaCohereRerank
from llama_index.postprocessor.tei_rerank import TextEmbeddingInference
from tei_client import HttpClient as TeiClient
from tei_client import ModelType

from tests.doors.rerank.test_rerank import COHERE_DOCS, COHERE_QUERY
from tests.support.basics import OPENAI_KEY
from tests.support.inprocess import FakeProvider
from tests.support.processes import serve_process

pytestmark = pytest.mark.slow
# 40: past one window (PCFJ_MAX_CANDIDATES 16), judged in rounds of windows fitted onto one scale (issue 30)
DOCS = COHERE_DOCS + [f"Passage {i}: {COHERE_DOCS[i % len(COHERE_DOCS)]}" for i in range(40 - len(COHERE_DOCS))]
COUNTS = [1, 2, len(COHERE_DOCS), 40]
KEY = "not-checked-when-auth-is-off"
Ranked = list[tuple[int, float]]  # (document index, score) best first


def expected(serve_url: str, docs: list[str]) -> Ranked:
    """The service's own numbers for ``docs``: a group of one's reward, else the consensus / 100, best first; past one
    window, ``/v2/rerank``'s own relevance scores for the whole list (every round uniform: no top_n boundary)."""
    with httpx.Client(base_url=serve_url, timeout=60) as http:
        if len(docs) > 16:
            reranked = http.post("/v2/rerank", json={"query": COHERE_QUERY, "documents": docs})
            assert reranked.status_code == 200, reranked.text
            return [(r["index"], r["relevance_score"]) for r in reranked.json()["results"]]
        if len(docs) == 1:
            reward = http.post("/v1/reward", json={"samples": [{"prompt": COHERE_QUERY, "response": docs[0]}]})
            assert reward.status_code == 200, reward.text
            return [(0, reward.json()["samples"][0]["reward"])]
        body = {"question": COHERE_QUERY, "candidates": docs, "include_runs": False}
        listwise = http.post("/judge/listwise", json=body)
        assert listwise.status_code == 200, listwise.text
    consensus = {int(c["id"]): c["consensus"] for c in listwise.json()["candidates"]}
    return [(i, round(consensus[i] / 100, 6)) for i in sorted(consensus, key=lambda i: (-consensus[i], i))]


def by_text(docs: list[str], ranked: list[tuple[str, float | None]]) -> Ranked:
    """A framework's (text, score) results as (index in ``docs``, score)."""
    return [(docs.index(text), float(score if score is not None else "nan")) for text, score in ranked]


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=60) as client:
        yield client


# ── cohere ──────────────────────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("n", COUNTS)
def test_cohere_client_v2_and_v1(serve_url: str, http: httpx.Client, n: int) -> None:
    docs = DOCS[:n]
    v2 = cohere.ClientV2(base_url=serve_url, api_key=KEY, httpx_client=http)
    v1 = cohere.Client(base_url=serve_url, api_key=KEY, httpx_client=http)
    want = expected(serve_url, docs)
    for client in (v2, v1):
        results = client.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=docs, top_n=n).results
        assert [(r.index, r.relevance_score) for r in results] == want


@pytest.mark.parametrize("n", COUNTS)
async def test_cohere_async_client_v2_and_v1(serve_url: str, n: int) -> None:
    docs = DOCS[:n]
    want = expected(serve_url, docs)
    async with httpx.AsyncClient(timeout=60) as http:
        for client in (
            cohere.AsyncClientV2(base_url=serve_url, api_key=KEY, httpx_client=http),
            cohere.AsyncClient(base_url=serve_url, api_key=KEY, httpx_client=http),
        ):
            results = (await client.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=docs)).results
            assert [(r.index, r.relevance_score) for r in results] == want


# ── langchain-cohere ────────────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("n", COUNTS)
def test_langchain_cohere_compress_documents(serve_url: str, http: httpx.Client, n: int) -> None:
    docs = DOCS[:n]
    client = cohere.ClientV2(base_url=serve_url, api_key=KEY, httpx_client=http)
    reranker = LangchainCohereRerank(client=client, model="rerank-v3.5", top_n=n)
    compressed = reranker.compress_documents([LangchainDocument(page_content=d) for d in docs], COHERE_QUERY)
    ranked = [(d.page_content, d.metadata["relevance_score"]) for d in compressed]
    assert by_text(docs, ranked) == expected(serve_url, docs)


def test_langchain_cohere_builds_its_own_client_from_a_base_url(serve_url: str) -> None:
    """As its documentation shows it: api key and base URL, no client of ours (the SDK's own is closed after)."""
    reranker = LangchainCohereRerank(cohere_api_key=KEY, base_url=serve_url, model="rerank-v3.5", top_n=1)
    try:
        (only,) = reranker.compress_documents([LangchainDocument(page_content=COHERE_DOCS[3])], COHERE_QUERY)
    finally:
        reranker.client._client_wrapper.httpx_client.httpx_client.close()
    assert only.metadata["relevance_score"] == expected(serve_url, [COHERE_DOCS[3]])[0][1]


# ── llama-index ─────────────────────────────────────────────────────────────────────────────────────────────────


def nodes(docs: list[str]) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(text=d), score=0.5) for d in docs]


def llama_cohere(serve_url: str, http: httpx.Client, top_n: int, max_retries: int = 10) -> LlamaCohereRerank:
    """llama-index's Cohere postprocessor, its SDK client using ``http`` (closed by the test, not left to the GC)."""
    reranker = LlamaCohereRerank(api_key=KEY, base_url=serve_url, top_n=top_n, max_retries=max_retries)
    # the SDK client it built (no connection made yet) is replaced by one on our pool: same base URL and key
    reranker._client = cohere.ClientV2(base_url=serve_url, api_key=KEY, httpx_client=http)
    return reranker


@pytest.mark.parametrize("n", COUNTS)
def test_llama_index_cohere_postprocessor(serve_url: str, http: httpx.Client, n: int) -> None:
    docs = DOCS[:n]
    out = llama_cohere(serve_url, http, top_n=n).postprocess_nodes(nodes(docs), query_str=COHERE_QUERY)
    assert by_text(docs, [(x.node.get_content(), x.score) for x in out]) == expected(serve_url, docs)


@pytest.mark.parametrize("n", COUNTS)
def test_llama_index_tei_postprocessor(serve_url: str, n: int) -> None:
    docs = DOCS[:n]
    out = TextEmbeddingInference(base_url=serve_url, top_n=n).postprocess_nodes(nodes(docs), query_str=COHERE_QUERY)
    assert by_text(docs, [(x.node.get_content(), x.score) for x in out]) == expected(serve_url, docs)


# ── haystack ────────────────────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("n", COUNTS)
def test_haystack_tei_ranker(serve_url: str, n: int) -> None:
    docs = DOCS[:n]
    ranker = HuggingFaceTEIRanker(url=serve_url, top_k=n, token=None)
    ranked = ranker.run(query=COHERE_QUERY, documents=[HaystackDocument(content=d) for d in docs])["documents"]
    assert by_text(docs, [(d.content or "", d.score) for d in ranked]) == expected(serve_url, docs)


@pytest.mark.parametrize("n", COUNTS)
async def test_haystack_cohere_ranker_sync_and_async(serve_url: str, n: int) -> None:
    docs = DOCS[:n]
    want = expected(serve_url, docs)
    ranker = CohereRanker(api_key=Secret.from_token(KEY), api_base_url=serve_url, top_k=n)
    try:
        ranked = ranker.run(query=COHERE_QUERY, documents=[HaystackDocument(content=d) for d in docs])["documents"]
        assert by_text(docs, [(d.content or "", d.score) for d in ranked]) == want
        documents = [HaystackDocument(content=d) for d in docs]
        ranked = (await ranker.run_async(query=COHERE_QUERY, documents=documents))["documents"]
        assert by_text(docs, [(d.content or "", d.score) for d in ranked]) == want
    finally:
        close_haystack_cohere(ranker)
        await aclose_haystack_cohere(ranker)


def close_haystack_cohere(ranker: CohereRanker) -> None:
    if ranker._cohere_client is not None:
        ranker._cohere_client._client_wrapper.httpx_client.httpx_client.close()


async def aclose_haystack_cohere(ranker: CohereRanker) -> None:
    if ranker._cohere_async_client is not None:
        await ranker._cohere_async_client._client_wrapper.httpx_client.httpx_client.aclose()


# ── tei-client ──────────────────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("n", COUNTS)
async def test_tei_client_reads_info_then_reranks(serve_url: str, n: int) -> None:
    docs = DOCS[:n]
    want = expected(serve_url, docs)
    client = TeiClient(serve_url, timeout=60)
    try:
        info = client.info()
        assert info.server_model_type == ModelType.Reranker and info.server_model_id == "sim:default"
        assert client.health()
        assert [(r.index, r.score) for r in client.rerank(COHERE_QUERY, docs).ranks] == want
        assert [(r.index, r.score) for r in (await client.async_rerank(COHERE_QUERY, docs)).ranks] == want
        assert (await client.async_info()).max_client_batch_size == 10_000  # PCFJ_MAX_ITEMS
    finally:
        client.client.close()
        await client.async_client.aclose()


# ── a failed judgment through llama-index's CohereRerank: what is retried, and by whom ───────────────────────────


@pytest.fixture
def judged_by_the_fake(fake: FakeProvider) -> Iterator[str]:
    """``pcfjudge serve`` judging with the fake OpenAI provider (no retries of its own): its base URL."""
    env = {
        "OPENAI_API_KEY": OPENAI_KEY,
        "OPENAI_BASE_URL": f"{fake.url}/v1",
        "PCFJ_DEFAULT_MODEL": "openai:judge-x",
        "PCFJ_MAX_RETRIES": "0",
    }
    with serve_process(env=env) as url:
        yield url


def rerank_requests(url: str) -> dict[str, int]:
    """``/v2/rerank`` requests the service answered, by status (from its /metrics)."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    pattern = r'pcfjudge_requests_total\{endpoint="/v2/rerank",status="(\d+)"\} ([0-9.]+)'
    return {status: int(float(count)) for status, count in re.findall(pattern, text)}


def test_a_502_is_retried_by_the_cohere_sdk_under_llama_index(
    judged_by_the_fake: str, fake: FakeProvider, http: httpx.Client
) -> None:
    fake.faults(["500", "500", "500", "500"])  # every attempt the SDK makes fails at the provider
    reranker = llama_cohere(judged_by_the_fake, http, top_n=1, max_retries=3)
    with pytest.raises(ApiError) as failed:
        reranker.postprocess_nodes(nodes(COHERE_DOCS[:1]), query_str=COHERE_QUERY)
    body: Any = failed.value.body
    assert failed.value.status_code == 502 and body["error"] == "backend_error"
    assert rerank_requests(judged_by_the_fake) == {"502": 3}  # the SDK's first try and its two retries


def test_a_503_is_retried_by_the_sdk_and_by_llama_index_itself(
    judged_by_the_fake: str, fake: FakeProvider, http: httpx.Client
) -> None:
    fake.faults(["429", "429", "429", "429"])  # the provider is rate limited for four calls, then answers
    reranker = llama_cohere(judged_by_the_fake, http, top_n=1, max_retries=3)
    (node,) = reranker.postprocess_nodes(nodes(COHERE_DOCS[:1]), query_str=COHERE_QUERY)
    assert node.score is not None and 0 <= node.score <= 1
    # three tries by the SDK (503 with Retry-After each), then llama-index's own retry: a 503 and a success
    assert rerank_requests(judged_by_the_fake) == {"503": 4, "200": 1}
