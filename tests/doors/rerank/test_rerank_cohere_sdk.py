"""The official ``cohere`` Python SDK (v1 ``Client``, ``ClientV2``, ``AsyncClientV2``) against a real ``pcfjudge serve``:
its typed responses parse our answers, the scores are /judge/listwise's consensus/100, errors arrive as the SDK's
own exception classes carrying our JSON body."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import cohere
import httpx
import pytest
from cohere.core.api_error import ApiError

from tests.doors.rerank.test_rerank import COHERE_DOCS, COHERE_QUERY
from tests.support.basics import ROOT
from tests.support.processes import serve_process

pytestmark = pytest.mark.slow


def consensus(serve_url: str, texts: list[str], **extra: object) -> dict[int, float]:
    body = {"question": COHERE_QUERY, "candidates": texts, "include_runs": False, **extra}
    response = httpx.post(f"{serve_url}/judge/listwise", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return {int(c["id"]): c["consensus"] for c in response.json()["candidates"]}


def test_client_v2_rerank_round_trip(serve_url: str) -> None:
    with httpx.Client(timeout=60) as http:
        co = cohere.ClientV2(base_url=serve_url, api_key="not-checked-when-auth-is-off", httpx_client=http)
        reranked = co.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=COHERE_DOCS, top_n=3)
    expected = consensus(serve_url, COHERE_DOCS)
    best = sorted(expected, key=lambda i: (-expected[i], i))[:3]
    assert isinstance(reranked, cohere.V2RerankResponse) and reranked.id
    assert [r.index for r in reranked.results] == best
    assert [r.relevance_score for r in reranked.results] == [round(expected[i] / 100, 6) for i in best]
    assert reranked.meta is not None and reranked.meta.billed_units is not None
    assert reranked.meta.billed_units.search_units == 1


def test_client_v1_rerank_returns_documents(serve_url: str) -> None:
    documents = [{"text": d} for d in COHERE_DOCS[:4]]
    with cohere.Client(base_url=serve_url, api_key="unused", timeout=60) as co:
        reranked = co.rerank(model="sim:default", query=COHERE_QUERY, documents=documents, return_documents=True)
    assert sorted(r.index for r in reranked.results) == [0, 1, 2, 3]
    for result in reranked.results:
        assert result.document is not None and result.document.text == COHERE_DOCS[result.index]
    scores = [r.relevance_score for r in reranked.results]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)


async def test_async_client_v2_and_errors(serve_url: str) -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        co = cohere.AsyncClientV2(base_url=serve_url, api_key="unused", httpx_client=http)
        reranked = await co.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=COHERE_DOCS[:2])
        with pytest.raises(ApiError) as too_many:
            await co.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=[f"doc {i}" for i in range(10_001)])
        with pytest.raises(cohere.UnprocessableEntityError) as bad_model:
            await co.rerank(model="anthropic:claude-sonnet-4-6", query=COHERE_QUERY, documents=COHERE_DOCS[:2])
        with pytest.raises(cohere.UnprocessableEntityError) as no_fleet:  # a pcfjudge name is honoured, or refused
            await co.rerank(model="fleet:nosuch", query=COHERE_QUERY, documents=COHERE_DOCS[:2])
    assert sorted(r.index for r in reranked.results) == [0, 1]
    assert "unknown fleet 'nosuch'" in no_fleet.value.body["message"]  # Cohere's own field for the error text
    assert too_many.value.status_code == 413
    assert isinstance(too_many.value.body, dict) and too_many.value.body["error"] == "too_many_documents"
    assert "not configured" in bad_model.value.body["detail"]


HUNDRED = [f"Document {i}: {COHERE_DOCS[i % len(COHERE_DOCS)]} (retrieved rank {i})" for i in range(100)]


def test_v1_and_v2_rerank_a_hundred_documents_top_5(serve_url: str) -> None:
    """A retriever's top 100, past one window: the SDKs parse the five best with scores on one scale, the same the
    service gives over plain HTTP (with its per-document detail: every document judged, the five best again and again)."""
    body = {"query": COHERE_QUERY, "documents": HUNDRED, "top_n": 5, "pcfjudge": {"include_runs": False}}
    raw = httpx.post(f"{serve_url}/v2/rerank", json=body, timeout=120)
    assert raw.status_code == 200, raw.text
    want = [(r["index"], r["relevance_score"]) for r in raw.json()["results"]]
    detail = raw.json()["pcfjudge"]
    assert len(detail["candidates"]) == 100 and all(c["appearances"] >= 1 for c in detail["candidates"])
    best = {int(c["id"]): c["appearances"] for c in detail["candidates"]}
    assert all(best[r["index"]] >= 3 for r in raw.json()["results"])  # the tournament's survivors
    assert detail["usage"]["backend_calls"] <= 28  # 4 rounds of 7 windows at most
    assert detail["diagnostics"]["windows"]["windows_per_round"] == 7
    with httpx.Client(timeout=120) as http:
        v2 = cohere.ClientV2(base_url=serve_url, api_key="unused", httpx_client=http)
        v1 = cohere.Client(base_url=serve_url, api_key="unused", httpx_client=http)
        for co in (v2, v1):
            reranked = co.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=HUNDRED, top_n=5)
            assert [(r.index, r.relevance_score) for r in reranked.results] == want
            assert reranked.meta is not None and reranked.meta.billed_units is not None
            assert reranked.meta.billed_units.search_units == 1


def test_the_sdks_api_key_is_our_api_key() -> None:
    """The SDK sends its api_key as a bearer token, which is how a protected pcfjudge takes keys."""
    with serve_process(env={"PCFJ_API_KEYS": "cohere-user:sk-pcfj-cohere"}) as url, httpx.Client(timeout=60) as http:
        allowed = cohere.ClientV2(base_url=url, api_key="sk-pcfj-cohere", httpx_client=http)
        assert len(allowed.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=COHERE_DOCS[:2]).results) == 2
        refused = cohere.ClientV2(base_url=url, api_key="wrong-key", httpx_client=http)
        with pytest.raises(cohere.UnauthorizedError):
            refused.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=COHERE_DOCS[:2])


COHERE_7 = ROOT / ".venv" / "cohere7"  # scripts/test.sh: pip install --target
COHERE_7_SCRIPT = """
import json, sys
import cohere
url, query, docs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
out = {"version": cohere.__version__}
for n in (1, 2, len(docs)):
    v2 = cohere.ClientV2(base_url=url, api_key="unused").rerank(model="rerank-v3.5", query=query, documents=docs[:n])
    v1 = cohere.Client(base_url=url, api_key="unused").rerank(model="rerank-v3.5", query=query, documents=docs[:n])
    out[n] = [[r.index, r.relevance_score] for r in v2.results], [[r.index, r.relevance_score] for r in v1.results]
print(json.dumps(out))
"""


def test_cohere_7_sdk_with_one_two_and_many_documents(serve_url: str) -> None:
    """cohere 7.3.1 (the version users hit the one-document 422 with; langchain-cohere pins this venv's cohere below 6,
    so scripts/test.sh installs 7.3.1 beside it, without its dependencies, which this venv already has)."""
    if not (COHERE_7 / "cohere").is_dir():
        message = "cohere 7.3.1 is not installed in .venv/cohere7: run `bash scripts/test.sh`, which installs it"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs it: a missing one is a broken set-up, not a skip
        pytest.skip(message)
    docs = COHERE_DOCS[:5]
    env = {**os.environ, "PYTHONPATH": str(COHERE_7)}
    done = subprocess.run(
        [sys.executable, "-c", COHERE_7_SCRIPT, serve_url, COHERE_QUERY, json.dumps(docs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["version"] == "7.3.1"
    for n in ("1", "2", str(len(docs))):
        v2, v1 = out[n]
        assert v2 == v1 and sorted(i for i, _ in v2) == list(range(int(n)))
        expected = consensus(serve_url, docs[: int(n)]) if int(n) > 1 else None
        if expected is not None:
            assert [s for _, s in v2] == sorted((round(c / 100, 6) for c in expected.values()), reverse=True)
        assert all(0 <= s <= 1 for _, s in v2)
