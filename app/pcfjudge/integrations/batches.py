"""A trainer's batch as ``/v1/reward`` requests: whole groups per request, bounded in size, posted concurrently.

A request carries at most ``MAX_SAMPLES`` samples and about ``MAX_BYTES`` of JSON (the service refuses more than 512
samples and, by default, bodies over 2 MB), and never splits a group (a group larger than that goes alone).
``post_chunks`` / ``apost_chunks`` send them with at most ``max_concurrency`` in flight, each with the service's
retry policy. A chunk the service refuses as a client error raises ``RewardRequestRefused`` (with the service's
detail); one that fails transiently (after the retries) gives ``None``: its samples get no reward, logged as a WARNING
and counted (``service.Failures``), as are samples ``outcomes`` finds answered without a reward. httpx + standard
library only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from pcfjudge.client.http import ServiceError
from pcfjudge.integrations.service import Failures, RewardService, note_failed_request, note_missing_rewards, refusal

Sample = dict[str, Any]
Chunk = list[tuple[int, Sample]]  # (row index in the batch, sample) of one request
Result = Mapping[str, Any] | None

MAX_SAMPLES = 256
MAX_BYTES = 1_000_000


def _size(sample: Sample) -> int:
    return 64 + sum(len(v.encode("utf-8", "surrogatepass")) for v in sample.values() if isinstance(v, str))


def chunk_groups(groups: Sequence[Chunk], max_groups: int | None = None) -> list[Chunk]:
    """Whole groups into requests of at most ``max_groups`` groups, ``MAX_SAMPLES`` samples and ~``MAX_BYTES``."""
    chunks: list[Chunk] = []
    count = size = 0
    for group in groups:
        group_size = sum(_size(s) for _, s in group)
        full = max_groups is not None and count >= max_groups
        if not chunks or full or len(chunks[-1]) + len(group) > MAX_SAMPLES or size + group_size > MAX_BYTES:
            chunks.append([])
            count = size = 0
        chunks[-1].extend(group)
        count, size = count + 1, size + group_size
    return [c for c in chunks if c]


def post_chunks(
    service: RewardService, chunks: Sequence[Chunk], max_concurrency: int, *counts: Failures
) -> list[Result]:
    """Every chunk's ``/v1/reward`` answer, None where it failed transiently after the retries (logged, counted in
    ``counts`` and ``service.FAILURES``), from worker threads; a client error raises ``RewardRequestRefused``."""
    if not chunks:
        return []

    def post(client: httpx.Client, chunk: Chunk) -> Result:
        try:
            return service.post(client, [sample for _, sample in chunk])
        except (ServiceError, httpx.HTTPError) as exc:
            if (refused := refusal(exc)) is not None:
                raise refused from exc
            note_failed_request(exc, len(chunk), *counts)
            return None

    with service.client() as client, ThreadPoolExecutor(min(max(1, max_concurrency), len(chunks))) as pool:
        return list(pool.map(lambda chunk: post(client, chunk), chunks))


async def apost_chunks(
    service: RewardService, chunks: Sequence[Chunk], max_concurrency: int, *counts: Failures
) -> list[Result]:
    """``post_chunks`` as a coroutine, on the running loop's shared client (a refusal cancels the other chunks)."""
    gate = asyncio.Semaphore(max(1, max_concurrency))

    async def post(chunk: Chunk) -> Result:
        async with gate:
            try:
                return await service.apost([sample for _, sample in chunk])
            except (ServiceError, httpx.HTTPError) as exc:
                if (refused := refusal(exc)) is not None:
                    raise refused from exc
                note_failed_request(exc, len(chunk), *counts)
                return None

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(post(c)) for c in chunks]
    except BaseExceptionGroup as failed:  # the first refusal, as itself (not wrapped in a group)
        raise failed.exceptions[0] from failed
    return [task.result() for task in tasks]


def outcomes(
    n: int, chunks: Sequence[Chunk], results: Sequence[Result], *counts: Failures
) -> list[Mapping[str, Any] | None]:
    """Each row's ``/v1/reward`` sample result (None where its request failed), in batch order; samples answered
    without a reward are logged and counted (the failed requests were, when they failed)."""
    out: list[Mapping[str, Any] | None] = [None] * n
    missing: list[str] = []
    for chunk, result in zip(chunks, results, strict=True):
        if result is not None:
            for (i, _), sample in zip(chunk, result["samples"], strict=True):
                out[i] = sample
                if sample.get("reward") is None:
                    missing.append(str((sample.get("error") or {}).get("error", "error")))
    note_missing_rewards(missing, *counts)
    return out
