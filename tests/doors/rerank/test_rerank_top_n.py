"""Rankings with a top (issue 48): Cohere's 10,000 documents with the defaults, a stated budget
(``pcfjudge.max_calls``), ``meta.warnings`` when that budget runs out before the top ``top_n`` is certain, and a
smaller ``top_n``'s picks leading a larger one's at the same budget."""

from __future__ import annotations

import time
from typing import Any

import cohere
import httpx

from tests.doors.rerank.test_rerank import COHERE_DOCS, COHERE_QUERY

HUNDRED = [f"Document {i}: {COHERE_DOCS[i % len(COHERE_DOCS)]} (retrieved rank {i})" for i in range(100)]


def rerank(serve_url: str, **body: Any) -> dict[str, Any]:
    response = httpx.post(f"{serve_url}/v2/rerank", json={"query": COHERE_QUERY, **body}, timeout=600)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_the_cohere_sdk_reranks_ten_thousand_documents_with_the_defaults(serve_url: str) -> None:
    documents = [f"Passage {i}: {COHERE_DOCS[i % len(COHERE_DOCS)]} ({i * 7919 % 10_007})" for i in range(10_000)]
    started = time.monotonic()
    with httpx.Client(timeout=900) as http:
        co = cohere.ClientV2(base_url=serve_url, api_key="unused", httpx_client=http)
        reranked = co.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=documents, top_n=10)
    took = time.monotonic() - started
    assert [r.index for r in reranked.results] != [] and len(reranked.results) == 10
    assert len({r.index for r in reranked.results}) == 10 and all(0 <= r.index < 10_000 for r in reranked.results)
    scores = [r.relevance_score for r in reranked.results]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert reranked.meta is not None and reranked.meta.billed_units is not None
    assert reranked.meta.billed_units.search_units == 100
    print(f"10,000 documents: {took:.1f} s")  # shown with -s; the figure that matters is in docs/performance.md


def test_a_stated_budget_is_kept_and_a_budget_too_small_is_a_422_saying_how_many(serve_url: str) -> None:
    body = {"documents": HUNDRED, "top_n": 10, "pcfjudge": {"max_calls": 12, "include_runs": False}}
    answer = rerank(serve_url, **body)
    windows = answer["pcfjudge"]["diagnostics"]["windows"]
    assert windows["calls_budgeted"] == 12 and windows["windows_judged"] <= 12
    too_few = httpx.post(
        f"{serve_url}/v2/rerank", json={**body, "query": COHERE_QUERY, "pcfjudge": {"max_calls": 9}}, timeout=60
    )
    assert too_few.status_code == 422, too_few.text
    assert "pcfjudge.max_calls" in too_few.text and "at least 10 calls" in too_few.text


def test_meta_warnings_say_when_the_budget_ran_out_before_the_top_n_was_certain(serve_url: str) -> None:
    """At its least budget (10 calls) the simulated judge's top 10 of 100 is not certain: Cohere's own
    ``meta.warnings`` says so, matching the detail's ``settled``; a top that is settled carries no warning."""
    lean = rerank(serve_url, documents=HUNDRED, top_n=10, pcfjudge={"max_calls": 10})
    assert lean["pcfjudge"]["diagnostics"]["windows"]["settled"] is False
    assert len(lean["meta"]["warnings"]) == 1 and "the top 10 is not certain" in lean["meta"]["warnings"][0]
    assert "pcfjudge.max_calls" in lean["meta"]["warnings"][0]
    with httpx.Client(timeout=60) as http:  # the SDK parses it into its own field
        co = cohere.ClientV2(base_url=serve_url, api_key="unused", httpx_client=http)
        parsed = co.rerank(model="rerank-v3.5", query=COHERE_QUERY, documents=HUNDRED, top_n=10)
    settled = rerank(serve_url, documents=HUNDRED, top_n=10, pcfjudge={})["pcfjudge"]["diagnostics"]["windows"]
    assert parsed.meta is not None
    assert (parsed.meta.warnings is None) == bool(settled["settled"])
    few = rerank(serve_url, documents=COHERE_DOCS, top_n=2)  # one window: nothing to warn of
    assert "warnings" not in few["meta"]


def test_a_smaller_top_n_picks_lead_a_larger_ones_at_the_same_budget(serve_url: str) -> None:
    """Issue 48's report: 1,000 documents with top_n 3, then 10, the first of the three was not among the ten. Now a
    top_n up to 10 runs the same plan: top_n 3's results are the first three of top_n 10's."""
    documents = [f"Passage {i}: {COHERE_DOCS[i % len(COHERE_DOCS)]} ({i * 31 % 997})" for i in range(1000)]
    three = rerank(serve_url, documents=documents, top_n=3, pcfjudge={"max_calls": 150})["results"]
    ten = rerank(serve_url, documents=documents, top_n=10, pcfjudge={"max_calls": 150})["results"]
    assert [r["index"] for r in three] == [r["index"] for r in ten[:3]]
    assert three == ten[:3]


def test_a_long_document_is_truncated_as_cohere_does_with_a_warning(serve_url: str) -> None:
    """Issue 48: a 1,080,000-character document was a 422 naming neither the setting nor max_tokens_per_doc. Now it
    is cut to max_tokens_per_doc (Cohere's default 4,096 tokens, 16,384 characters) and judged by its start, and
    meta.warnings says so; a cut longer than PCFJ_MAX_CANDIDATE_CHARS is still a 422, naming both."""
    long = "Westphalia, 1648. " * 60_000  # 1,080,000 characters
    answer = rerank(serve_url, documents=[long, COHERE_DOCS[0], COHERE_DOCS[1]])
    assert sorted(r["index"] for r in answer["results"]) == [0, 1, 2]
    assert answer["meta"]["warnings"] == [
        "1 document(s) longer than max_tokens_per_doc (4096 tokens, about 16384 characters) were truncated to it "
        "and judged by their start (the first: index 0)"
    ]
    cut = rerank(serve_url, documents=[long[:16_384], COHERE_DOCS[0], COHERE_DOCS[1]])
    assert cut["results"] == answer["results"] and "warnings" not in cut["meta"]  # the same text judged, from cache
    too_long = httpx.post(
        f"{serve_url}/v2/rerank",
        json={"query": COHERE_QUERY, "documents": [long, COHERE_DOCS[0]], "max_tokens_per_doc": 10_000},
        timeout=60,
    )
    assert too_long.status_code == 422, too_long.text
    assert "PCFJ_MAX_CANDIDATE_CHARS" in too_long.text and "max_tokens_per_doc" in too_long.text


def test_best_chunk_scores_a_long_document_by_its_best_chunk(serve_url: str) -> None:
    """``"pcfjudge": {"long_documents": "best_chunk"}`` (Cohere's v4 behaviour): a document longer than
    max_tokens_per_doc is split into chunks (at most max_chunks_per_doc), each judged as a candidate, and the
    document's relevance is its best chunk's; meta.warnings says it was split. TEI's door refuses the option."""
    long = "".join(f"Part {p}: " + COHERE_DOCS[p % len(COHERE_DOCS)].ljust(400, ".") for p in range(5))  # 5 × ~409
    body = {
        "documents": [long, COHERE_DOCS[0], COHERE_DOCS[1]],
        "max_tokens_per_doc": 110,  # 440 characters: the long document is 5 chunks, the others one each
        "max_chunks_per_doc": 4,
        "pcfjudge": {"long_documents": "best_chunk", "include_runs": False},
    }
    answer = rerank(serve_url, **body)
    chunks = {int(c["id"]): c["consensus"] for c in answer["pcfjudge"]["candidates"]}
    assert len(chunks) == 4 + 1 + 1  # the long document's first 4 chunks, then one chunk per short document
    relevance = {r["index"]: r["relevance_score"] for r in answer["results"]}
    assert relevance[0] == round(max(chunks[c] for c in range(4)) / 100, 6)
    assert relevance[1] == round(chunks[4] / 100, 6) and relevance[2] == round(chunks[5] / 100, 6)
    assert "split into chunks of it, each scored by its best" in answer["meta"]["warnings"][0]
    tei = httpx.post(
        f"{serve_url}/rerank", json={"query": COHERE_QUERY, "texts": ["a", "b"], "pcfjudge": body["pcfjudge"]}
    )
    assert tei.status_code == 422 and "best_chunk is for /v1 and /v2/rerank" in tei.text


def test_tei_says_in_a_header_when_the_budget_cut_its_rounds(serve_url: str) -> None:
    """TEI's answer is a bare array: a budget that cuts the whole order's rounds (here 2 of the default 4 over 100
    texts) is said in X-PCFJudge-Warning; a full budget says nothing."""
    cut = httpx.post(
        f"{serve_url}/rerank", json={"query": COHERE_QUERY, "texts": HUNDRED, "pcfjudge": {"max_calls": 14}}
    )
    assert cut.status_code == 200 and len(cut.json()) == 100
    assert cut.headers["x-pcfjudge-warning"].startswith("2 of 4 rounds fit the call budget (14 calls)")
    full = httpx.post(f"{serve_url}/rerank", json={"query": COHERE_QUERY, "texts": HUNDRED})
    assert full.status_code == 200 and "x-pcfjudge-warning" not in full.headers
