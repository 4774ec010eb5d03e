"""``pcfjudge.Client`` and ``pcfjudge.AsyncClient``: typed calls to a running service.

    with pcfjudge.Client("http://127.0.0.1:8000", api_key=...) as judge:   # or PCFJ_URL / PCFJ_API_KEY
        verdict = judge.listwise("Capital of France?", ["Paris.", "Lyon."], k=3)
        verdict.winners, verdict.candidates[0].consensus

Requests are validated locally with the server's own request models (a pydantic ``ValidationError`` before any call)
and answers parsed into its response models. One connection pool per client (keep-alive); 429/503 and dropped
connections are retried honouring ``Retry-After`` (``pcfjudge.client.http``); a final error raises ``ServiceError``
with the server's JSON. Imports httpx and pydantic only: no FastAPI, Redis or provider SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from pcfjudge.client import jobs
from pcfjudge.client.events import StreamEvent, aevents, events
from pcfjudge.client.http import (
    DEFAULT_RETRY,
    RetryPolicy,
    apost_json,
    auth_headers,
    default_key,
    default_timeout,
    default_url,
    post_json,
)
from pcfjudge.doors.listwise.listwise_protocol import CandidateIn, ListwiseRequest, ListwiseResponse
from pcfjudge.doors.pairwise.pairwise_protocol import PairwiseRequest, PairwiseResponse
from pcfjudge.doors.rerank.rerank_protocol import CohereRerankRequest, RerankResponse
from pcfjudge.doors.reward.reward_protocol import RewardRequest, RewardResponse, RewardSample
from pcfjudge.schemas.jobs_schema import Job, JobAccepted

M = TypeVar("M", bound=BaseModel)
Candidate = str | CandidateIn | Mapping[str, str]
Document = str | Mapping[str, str]
Sample = RewardSample | Mapping[str, Any]


def payload(request: type[BaseModel], fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` validated with the server's request model, as JSON (None and unset fields left to the server)."""
    given = {name: list(v) if isinstance(v, tuple) else v for name, v in fields.items() if v is not None}
    return request.model_validate(given).model_dump(mode="json", exclude_unset=True, by_alias=True)


def listwise_payload(question: str, candidates: Sequence[Candidate], options: Mapping[str, Any]) -> dict[str, Any]:
    items = [dict(c) if isinstance(c, Mapping) else c for c in candidates]
    return payload(ListwiseRequest, {"question": question, "candidates": items, **options})


def pairwise_payload(question: str, a: str, b: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return payload(PairwiseRequest, {"question": question, "response_a": a, "response_b": b, **options})


def rerank_payload(
    query: str,
    documents: Sequence[Document],
    top_n: int | None,
    return_documents: bool | None,
    model: str | Sequence[str] | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """Cohere-shape body; ``options`` (k, seed, include_runs, …) go into the ``pcfjudge`` extension. A jury as a
    list of models is sent as Cohere's one model string, the models joined by commas."""
    model = model if model is None or isinstance(model, str) else ",".join(model)
    docs = [dict(d) if isinstance(d, Mapping) else d for d in documents]
    fields = {"query": query, "documents": docs, "top_n": top_n, "return_documents": return_documents, "model": model}
    return payload(CohereRerankRequest, fields | ({"pcfjudge": dict(options)} if options else {}))


def reward_payload(samples: Sequence[Sample], options: Mapping[str, Any]) -> dict[str, Any]:
    items = [dict(x) if isinstance(x, Mapping) else x for x in samples]
    return payload(RewardRequest, {"samples": items, **options})


def _headers(api_key: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    return {**auth_headers(api_key or default_key()), **(headers or {})}


class Client:
    """Blocking client; use as a context manager (or call ``close()``). Thread-safe (one httpx pool)."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.retry = retry
        self.http = httpx.Client(
            base_url=base_url or default_url(),
            headers=_headers(api_key, headers),
            timeout=timeout or default_timeout(),
            transport=transport,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def post(self, path: str, body: Mapping[str, Any], response: type[M]) -> M:
        """POST a JSON body (with retries) and parse the answer as ``response``."""
        return response.model_validate(post_json(self.http, path, dict(body), retry=self.retry))

    def listwise(self, question: str, candidates: Sequence[Candidate], **options: Any) -> ListwiseResponse:
        """``POST /judge/listwise``; ``options`` are ListwiseRequest's other fields (k, model, include_runs, …)."""
        return self.post("/judge/listwise", listwise_payload(question, candidates, options), ListwiseResponse)

    def pairwise(self, question: str, response_a: str, response_b: str, **options: Any) -> PairwiseResponse:
        """``POST /judge/pairwise``; ``options`` are PairwiseRequest's other fields (model, keyed, …)."""
        return self.post(
            "/judge/pairwise", pairwise_payload(question, response_a, response_b, options), PairwiseResponse
        )

    def listwise_stream(
        self, question: str, candidates: Sequence[Candidate], **options: Any
    ) -> Iterator[StreamEvent[ListwiseResponse]]:
        """``listwise`` with ``stream: true``: a run event per finished run (the consensus so far), then the result."""
        return events(self.http, "/judge/listwise", listwise_payload(question, candidates, options), ListwiseResponse)

    def pairwise_stream(
        self, question: str, response_a: str, response_b: str, **options: Any
    ) -> Iterator[StreamEvent[PairwiseResponse]]:
        """``pairwise`` with ``stream: true``: a pass event per finished pass, then the result."""
        body = pairwise_payload(question, response_a, response_b, options)
        return events(self.http, "/judge/pairwise", body, PairwiseResponse)

    def reward_stream(self, samples: Sequence[Sample], **options: Any) -> Iterator[StreamEvent[RewardResponse]]:
        """``reward`` with ``stream: true``: a run event per finished run of any group, then the result."""
        return events(self.http, "/v1/reward", reward_payload(samples, options), RewardResponse)

    def rerank(
        self,
        query: str,
        documents: Sequence[Document],
        *,
        top_n: int | None = None,
        return_documents: bool | None = None,
        model: str | Sequence[str] | None = None,
        **options: Any,
    ) -> RerankResponse:
        """``POST /v2/rerank``; ``options`` (k, seed, include_runs, …) also return the full consensus as ``.pcfjudge``."""
        body = rerank_payload(query, documents, top_n, return_documents, model, options)
        return self.post("/v2/rerank", body, RerankResponse)

    def reward(self, samples: Sequence[Sample], **options: Any) -> RewardResponse:
        """``POST /v1/reward``: samples ``{"prompt", "response", "reference"?, "group"?}``; ``options`` are
        RewardRequest's other fields (model, k, reward, group_size, group_wait_ms). A failed group's rewards are None."""
        return self.post("/v1/reward", reward_payload(samples, options), RewardResponse)

    def submit(
        self, endpoint: str, request: BaseModel | Mapping[str, Any], *, webhook_url: str | None = None
    ) -> JobAccepted:
        """``POST /v1/jobs``: judge ``request`` with ``endpoint`` (e.g. "/judge/listwise") as a job (docs/api/jobs.md)."""
        return jobs.submit(self.http, endpoint, request, webhook_url, self.retry)

    def job(self, job_id: str) -> Job:
        """``GET /v1/jobs/{id}``: its status, progress, and once ended the route's ``response``."""
        return jobs.job(self.http, job_id, self.retry)

    def cancel(self, job_id: str) -> Job:
        """``DELETE /v1/jobs/{id}``: cancel a queued or running job."""
        return jobs.job(self.http, job_id, self.retry, "DELETE")

    def wait(self, job_id: str, poll_s: float = 1.0, timeout_s: float | None = None) -> Job:
        """Poll the job every ``poll_s`` until it has ended; ``TimeoutError`` after ``timeout_s``."""
        return jobs.wait(self.http, job_id, poll_s, timeout_s, self.retry)


class AsyncClient:
    """The asyncio twin of ``Client``: ``async with pcfjudge.AsyncClient() as judge: await judge.listwise(...)``."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.retry = retry
        self.http = httpx.AsyncClient(
            base_url=base_url or default_url(),
            headers=_headers(api_key, headers),
            timeout=timeout or default_timeout(),
            transport=transport,
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def post(self, path: str, body: Mapping[str, Any], response: type[M]) -> M:
        return response.model_validate(await apost_json(self.http, path, dict(body), retry=self.retry))

    async def listwise(self, question: str, candidates: Sequence[Candidate], **options: Any) -> ListwiseResponse:
        return await self.post("/judge/listwise", listwise_payload(question, candidates, options), ListwiseResponse)

    async def pairwise(self, question: str, response_a: str, response_b: str, **options: Any) -> PairwiseResponse:
        body = pairwise_payload(question, response_a, response_b, options)
        return await self.post("/judge/pairwise", body, PairwiseResponse)

    async def rerank(
        self,
        query: str,
        documents: Sequence[Document],
        *,
        top_n: int | None = None,
        return_documents: bool | None = None,
        model: str | Sequence[str] | None = None,
        **options: Any,
    ) -> RerankResponse:
        body = rerank_payload(query, documents, top_n, return_documents, model, options)
        return await self.post("/v2/rerank", body, RerankResponse)

    async def reward(self, samples: Sequence[Sample], **options: Any) -> RewardResponse:
        return await self.post("/v1/reward", reward_payload(samples, options), RewardResponse)

    async def submit(
        self, endpoint: str, request: BaseModel | Mapping[str, Any], *, webhook_url: str | None = None
    ) -> JobAccepted:
        return await jobs.asubmit(self.http, endpoint, request, webhook_url, self.retry)

    async def job(self, job_id: str) -> Job:
        return await jobs.ajob(self.http, job_id, self.retry)

    async def cancel(self, job_id: str) -> Job:
        return await jobs.ajob(self.http, job_id, self.retry, "DELETE")

    async def wait(self, job_id: str, poll_s: float = 1.0, timeout_s: float | None = None) -> Job:
        return await jobs.await_job(self.http, job_id, poll_s, timeout_s, self.retry)

    def listwise_stream(
        self, question: str, candidates: Sequence[Candidate], **options: Any
    ) -> AsyncIterator[StreamEvent[ListwiseResponse]]:
        """``listwise`` with ``stream: true`` (``async for event in ...``)."""
        return aevents(self.http, "/judge/listwise", listwise_payload(question, candidates, options), ListwiseResponse)

    def pairwise_stream(
        self, question: str, response_a: str, response_b: str, **options: Any
    ) -> AsyncIterator[StreamEvent[PairwiseResponse]]:
        body = pairwise_payload(question, response_a, response_b, options)
        return aevents(self.http, "/judge/pairwise", body, PairwiseResponse)

    def reward_stream(self, samples: Sequence[Sample], **options: Any) -> AsyncIterator[StreamEvent[RewardResponse]]:
        return aevents(self.http, "/v1/reward", reward_payload(samples, options), RewardResponse)
