"""Judging through a real llama.cpp engine: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct.

This is the set-up on which, before prompt v2 and the structured-output dialects, not one judgment succeeded: the
engine refused ``json_schema`` (reproduced first, below), JSON mode without a schema gave free-form answers, and the
v1 schema under the engine's grammar gave incomplete ones. Every front door must now answer 200 from the engine,
with every run a usable judgment, no answer over its output bound, and cache hits on a repeat.

Slow by nature (a CPU engine; about a minute on a quiet 2-core machine for the module): marked ``slow`` and
``engine``; ``pytest -m "not engine"`` leaves it out of a quick loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.engine import MODEL_NAME, llama_cpp_python_server
from tests.support.processes import serve_process

pytestmark = [pytest.mark.slow, pytest.mark.engine, pytest.mark.timeout(1500)]

QUESTION = "What is the capital of France?"
ANSWERS = ["Paris is the capital of France.", "Lyon is the capital of France."]
MAX_OUTPUT_TOKENS = 400
MODEL = f"openai:{MODEL_NAME}"


def service_env(engine: str, **extra: str) -> dict[str, str]:
    return {
        "PCFJ_OPENAI_BASE_URL": engine,
        "PCFJ_OPENAI_DEFAULT_MODEL": MODEL_NAME,
        "PCFJ_DEFAULT_K": "2",
        "PCFJ_REQUEST_TIMEOUT_S": "1200",
        "PCFJ_MAX_OUTPUT_TOKENS": str(MAX_OUTPUT_TOKENS),
        "PCFJ_BACKEND_CONCURRENCY": "2",
        **extra,
    }


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    with llama_cpp_python_server() as url:
        yield url


@pytest.fixture(scope="module")
def service(engine: str) -> Iterator[httpx.Client]:
    with serve_process(env=service_env(engine)) as url, httpx.Client(base_url=url, timeout=1300) as client:
        yield client


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_the_openai_dialect_pinned_is_refused_by_this_engine(engine: str) -> None:
    """The failure as first measured: llama-cpp-python's server refuses response_format json_schema (a 500 naming
    response_format), so a service pinned to it judges nothing."""
    env = service_env(engine, PCFJ_OPENAI_OUTPUT_MODE="json_schema")
    with serve_process(env=env) as url:
        got = httpx.post(f"{url}/judge/listwise", json={"question": QUESTION, "candidates": ANSWERS}, timeout=300)
        assert got.status_code == 502, got.text
        assert "2× provider_error" in got.json()["detail"]


def test_listwise_learns_the_dialect_and_every_run_is_a_judgment(service: httpx.Client) -> None:
    body = ok(service.post("/judge/listwise", json={"question": QUESTION, "candidates": ANSWERS, "rationales": False}))
    assert body["prompt_version"] == "listwise-v2-terse" and body["model"] == MODEL
    assert len(body["runs"]) == 2 and all(run["error"] is None for run in body["runs"])
    for run in body["runs"]:
        assert 0 < run["output_tokens"] < MAX_OUTPUT_TOKENS
        assert all(0 <= c["score"] <= 100 and c["score"] == int(c["score"]) for c in run["judgments"].values())
    ready = ok(service.get("/readyz"))
    assert ready["structured_output"]["openai"] == {"mode": "auto", "dialect": "json_object_schema", "learned": True}
    again = ok(service.post("/judge/listwise", json={"question": QUESTION, "candidates": ANSWERS, "rationales": False}))
    assert again["usage"]["cache_hits"] == 2 and again["usage"]["backend_calls"] == 0
    assert again["candidates"] == body["candidates"] and again["ranking"] == body["ranking"]


def test_rationales_are_bounded_when_asked_for(service: httpx.Client) -> None:
    body = ok(service.post("/judge/listwise", json={"question": QUESTION, "candidates": ANSWERS[::-1], "k": 1}))
    assert body["prompt_version"] == "listwise-v2"
    (run,) = body["runs"]
    assert run["error"] is None and run["output_tokens"] < MAX_OUTPUT_TOKENS
    assert all(len(c["rationale"]) <= 240 for c in run["judgments"].values())


def test_pairwise_answers_from_the_engine(service: httpx.Client) -> None:
    body = ok(
        service.post(
            "/judge/pairwise",
            json={"question": QUESTION, "response_a": ANSWERS[0], "response_b": ANSWERS[1], "rationales": False},
        )
    )
    assert body["prompt_version"] == "pairwise-v2-terse"
    assert body["winner"] in ("A", "B", "tie")
    assert [run["pass"] for run in body["runs"]][:2] == ["direct", "swapped"]
    assert all(run["error"] is None for run in body["runs"])


def test_rewards_answer_from_the_engine(service: httpx.Client) -> None:
    samples = [{"prompt": QUESTION, "response": text} for text in ("Paris.", "Marseille.")]
    body = ok(service.post("/v1/reward", json={"samples": samples, "k": 1}))
    assert body["usage"]["backend_calls"] == 1  # judged by the engine, not answered from another test's cache
    assert all(s["reward"] is not None and 0 <= s["reward"] <= 1 for s in body["samples"])
    assert {s["prompt_version"] for s in body["samples"]} == {"listwise-v2-terse"}


def test_cohere_and_tei_rerank_answer_from_the_engine(service: httpx.Client) -> None:
    cohere = ok(
        service.post("/v1/rerank", json={"model": MODEL, "query": QUESTION, "documents": ANSWERS, "pcfjudge": {"k": 2}})
    )
    assert sorted(r["index"] for r in cohere["results"]) == [0, 1]
    tei = ok(service.post("/rerank", json={"query": QUESTION, "texts": ANSWERS, "pcfjudge": {"k": 2}}))
    assert sorted(r["index"] for r in tei) == [0, 1]
