"""``pcfjudge.Client`` / ``pcfjudge.AsyncClient`` against a real ``pcfjudge serve``: typed answers (the server's own
response models), retries on an injected 503, errors carrying the server's JSON, one kept-alive connection, and an
import that loads no server, cache or provider SDK."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pcfjudge
import pydantic
import pytest
from pcfjudge.client import StreamEvent
from pcfjudge.doors.listwise.listwise_protocol import ListwiseResponse
from pcfjudge.doors.pairwise.pairwise_protocol import PairwiseResponse
from pcfjudge.doors.rerank.rerank_protocol import RerankResponse
from pcfjudge.doors.reward.reward_protocol import RewardResponse

from tests.support.basics import CANDIDATES, QUESTION
from tests.support.flaky_proxy import FlakyProxy
from tests.support.processes import serve_process

HEAVY = {"fastapi", "starlette", "uvicorn", "redis", "openai", "anthropic", "prometheus_client"}


def test_importing_the_client_loads_no_server_cache_or_provider_sdk() -> None:
    script = (
        "import sys, pcfjudge\n"
        "before = {m.split('.')[0] for m in sys.modules}\n"
        "from pcfjudge.client import Client, AsyncClient, ServiceError\n"
        "import pcfjudge.client.http\n"
        "assert pcfjudge.Client is Client and pcfjudge.AsyncClient is AsyncClient\n"
        "loaded = {m.split('.')[0] for m in sys.modules}\n"
        "print('httpx' in before, 'httpx' in loaded, sorted(loaded & set(sys.argv[1:])))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, *HEAVY], capture_output=True, text=True, check=True)
    # `import pcfjudge` alone does not even load httpx; the client does, and nothing heavier.
    assert done.stdout.split() == ["False", "True", "[]"], done.stdout + done.stderr


@pytest.mark.slow
def test_sync_client_returns_the_servers_models(serve_url: str) -> None:
    with pcfjudge.Client(serve_url) as judge:
        listwise = judge.listwise(QUESTION, CANDIDATES, k=3, include_runs=False)
        pairwise = judge.pairwise(QUESTION, CANDIDATES[0], CANDIDATES[1])
        reranked = judge.rerank(QUESTION, CANDIDATES, top_n=2, return_documents=True)
        samples = [{"prompt": QUESTION, "response": text} for text in CANDIDATES]
        rewarded = judge.reward(samples, k=3)
    assert isinstance(listwise, ListwiseResponse) and listwise.k == 3 and listwise.runs is None
    assert {c.id for c in listwise.candidates} == {"0", "1", "2"} and listwise.winners
    assert isinstance(pairwise, PairwiseResponse) and pairwise.winner in ("A", "B", "tie")
    assert isinstance(reranked, RerankResponse) and len(reranked.results) == 2 and reranked.pcfjudge is None
    best = reranked.results[0]
    assert best.document == {"text": CANDIDATES[best.index]}
    assert reranked.results[0].relevance_score >= reranked.results[1].relevance_score
    assert isinstance(rewarded, RewardResponse) and len(rewarded.rewards) == 3
    assert all(r is not None and 0 <= r <= 1 for r in rewarded.rewards) and rewarded.samples[0].group_size == 3


def test_the_typed_client_past_one_window(serve_url: str) -> None:
    """Issue 30 through the typed client: 40 candidates, 100 documents with top_n 5 and a reward group of 64 parse
    into the models with the windowed fields filled in."""
    many = [f"Answer {i}: {QUESTION} {i % 13}" for i in range(100)]
    with pcfjudge.Client(serve_url) as judge:
        listwise = judge.listwise(QUESTION, many[:40], include_runs=False)
        reranked = judge.rerank(QUESTION, many, top_n=5, include_runs=False)
        rewarded = judge.reward([{"prompt": QUESTION, "response": text} for text in many[:64]])
    windows = listwise.diagnostics.windows
    assert windows is not None and windows.window == 16 and len(listwise.ranking) == 40
    assert all(c.standard_error is not None and c.appearances for c in listwise.candidates)
    detail = reranked.pcfjudge
    assert len(reranked.results) == 5 and detail is not None and len(detail.candidates) == 100
    assert detail.diagnostics.windows is not None and detail.diagnostics.windows.windows_per_round == 7
    assert len(rewarded.rewards) == 64 and all(r is not None for r in rewarded.rewards)
    assert {(s.group_size, s.candidates, s.k) for s in rewarded.samples} == {(64, 64, 4)}


def test_the_typed_client_with_a_jury(serve_url: str) -> None:
    """Issue 31 through the typed client (sync and async): a list of models is a jury at every door; the jury's
    report parses into the response models."""
    jurors = ["sim:default", "sim:oracle"]
    with pcfjudge.Client(serve_url) as judge:
        listwise = judge.listwise(QUESTION, CANDIDATES, k=3, model=jurors, include_runs=False)
        pairwise = judge.pairwise(QUESTION, CANDIDATES[0], CANDIDATES[1], model=jurors)
        reranked = judge.rerank(QUESTION, CANDIDATES, model=jurors, include_runs=False)
        rewarded = judge.reward([{"prompt": QUESTION, "response": text} for text in CANDIDATES], model=jurors, k=3)

    async def pairwise_async() -> PairwiseResponse:
        async with pcfjudge.AsyncClient(serve_url) as judge:
            return await judge.pairwise(QUESTION, CANDIDATES[0], CANDIDATES[1], model=jurors)

    again = asyncio.run(pairwise_async())
    assert listwise.jury is not None and [j.model for j in listwise.jury.jurors] == jurors
    assert listwise.model == "sim:default,sim:oracle" and listwise.jury.kendalls_w is not None
    assert pairwise.jury is not None and pairwise.decision == "jury" and pairwise.jury.fleiss_kappa is not None
    assert reranked.model == "sim:default,sim:oracle" and reranked.pcfjudge is not None
    assert reranked.pcfjudge.jury is not None and all(j.delivered for j in reranked.pcfjudge.jury.jurors)
    assert len(rewarded.rewards) == 3 and all(r is not None for r in rewarded.rewards)
    assert again.jury is not None and again.usage.backend_calls == 0 and again.winner == pairwise.winner


def test_the_typed_client_streams_sync_and_async(serve_url: str) -> None:
    """Issue 32: run (pass) events as they come, then the result parsed into the response model; an error event or a
    refused request raises ServiceError."""
    question = QUESTION + " (streamed)"
    with pcfjudge.Client(serve_url) as judge:
        got = list(judge.listwise_stream(question, CANDIDATES, k=3, include_runs=False))
        passes = list(judge.pairwise_stream(question, CANDIDATES[0], CANDIDATES[1]))
        with pytest.raises(pcfjudge.ServiceError) as refused:
            list(judge.listwise_stream(question, CANDIDATES, k=3, deadline_ms=1))

    async def rewards() -> list[StreamEvent[RewardResponse]]:
        async with pcfjudge.AsyncClient(serve_url) as judge:
            samples = [{"prompt": question, "response": text} for text in CANDIDATES]
            return [event async for event in judge.reward_stream(samples, k=3)]

    rewarded = asyncio.run(rewards())
    assert [e.kind for e in got] == ["run", "run", "run", "result"] and got[-1].response is not None
    assert isinstance(got[-1].response, ListwiseResponse) and got[-1].response.winners == got[-2].data["winners"]
    assert {e.data["pass"] for e in passes[:-1]} >= {"direct", "swapped"} and passes[-1].kind == "result"
    assert isinstance(passes[-1].response, PairwiseResponse)
    assert refused.value.status == 422 and "deadline_ms" in refused.value.detail
    assert rewarded[-1].response is not None and len(rewarded[-1].response.rewards) == 3


@pytest.mark.slow
def test_rerank_options_return_the_full_consensus(serve_url: str) -> None:
    with pcfjudge.Client(serve_url) as judge:
        reranked = judge.rerank(QUESTION, CANDIDATES, k=2, include_runs=True)
    detail = reranked.pcfjudge
    assert detail is not None and detail.k == 2 and detail.runs is not None and len(detail.runs) == 2
    by_id = {c.id: c.consensus for c in detail.candidates}
    assert [r.relevance_score for r in reranked.results] == [
        round(by_id[str(r.index)] / 100, 6) for r in reranked.results
    ]


@pytest.mark.slow
def test_sync_client_retries_an_injected_503_on_one_connection(serve_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PCFJ_API_KEY", "key-from-env")
    with FlakyProxy(serve_url, ["503"], retry_after="1") as proxy:
        monkeypatch.setenv("PCFJ_URL", proxy.url)
        with pcfjudge.Client() as judge:  # URL and key from the environment
            first = judge.listwise(QUESTION, CANDIDATES, k=3)
            second = judge.listwise(QUESTION, CANDIDATES, k=3)
    assert [action for _, _, action in proxy.seen] == ["503", "forward", "forward"]
    assert first.ranking == second.ranking
    assert {h["authorization"] for h in proxy.headers} == {"Bearer key-from-env"}
    assert len(set(proxy.peers)) == 1  # the retry and the next call reused the kept-alive connection


@pytest.mark.slow
def test_errors_carry_the_servers_json(serve_url: str) -> None:
    with pcfjudge.Client(serve_url, retry=pcfjudge.RetryPolicy(attempts=1)) as judge:
        with pytest.raises(pcfjudge.ServiceError) as caught:
            judge.listwise(QUESTION, ["only one answer"])
        with pytest.raises(pydantic.ValidationError):  # refused locally by the server's own model: no call made
            judge.listwise(QUESTION, CANDIDATES, k=0)
    error = caught.value
    assert error.status == 422 and error.body["error"] == "validation_error" and "candidates" in error.detail
    assert "request_id" in error.body and str(error).startswith("HTTP 422 validation_error: candidates")


@pytest.mark.slow
async def test_async_client_retries_an_injected_503(serve_url: str) -> None:
    with FlakyProxy(serve_url, ["503", "drop"], retry_after="0") as proxy:
        async with pcfjudge.AsyncClient(proxy.url, api_key="k-1", retry=pcfjudge.RetryPolicy(backoff_s=0.01)) as judge:
            listwise = await judge.listwise(QUESTION, [{"id": "a", "text": CANDIDATES[0]}, {"id": "b", "text": "No."}])
            pairwise = await judge.pairwise(QUESTION, CANDIDATES[0], CANDIDATES[1], keyed=False)
            reranked = await judge.rerank(QUESTION, CANDIDATES, model="rerank-v3.5")
            rewarded = await judge.reward([{"prompt": QUESTION, "response": text} for text in CANDIDATES[:2]])
    assert [action for _, _, action in proxy.seen] == ["503", "drop", *["forward"] * 4]
    assert [s.rank for s in rewarded.samples] in ([1, 2], [2, 1], [1, 1])
    assert {c.id for c in listwise.candidates} == {"a", "b"} and pairwise.keyed.skipped in (None, "disabled")
    assert sorted(r.index for r in reranked.results) == [0, 1, 2] and reranked.model == "sim:default"
    assert {h["authorization"] for h in proxy.headers} == {"Bearer k-1"}


@pytest.mark.slow
def test_api_key_and_quota_errors_from_a_protected_service() -> None:
    """With PCFJ_API_KEYS the client's key is what gets in; a spent quota is a ServiceError carrying Retry-After."""
    env = {"PCFJ_API_KEYS": "ci:sk-pcfj-client-test", "PCFJ_QUOTA_REQUESTS_PER_MIN": "2"}
    with serve_process(env=env) as url:
        no_retry = pcfjudge.RetryPolicy(attempts=1)
        with pcfjudge.Client(url, retry=no_retry) as anonymous, pytest.raises(pcfjudge.ServiceError) as refused:
            anonymous.listwise(QUESTION, CANDIDATES, k=1)
        with pcfjudge.Client(url, api_key="sk-pcfj-client-test", retry=no_retry) as judge:
            assert judge.rerank(QUESTION, CANDIDATES, k=1).model == "sim:default"
            judge.listwise(QUESTION, CANDIDATES, k=1)
            with pytest.raises(pcfjudge.ServiceError) as limited:
                judge.listwise(QUESTION, CANDIDATES, k=1)
    assert refused.value.status == 401 and "detail" in refused.value.body
    assert limited.value.status == 429 and limited.value.retry_after is not None and limited.value.retry_after >= 1
    assert "quota" in limited.value.detail
