"""A trainer's batch as ``/v1/reward`` requests: whole groups per request, bounded in size, posted concurrently.

A request carries at most ``MAX_SAMPLES`` samples and about ``MAX_BYTES`` of JSON (the service refuses more than 512
samples and, by default, bodies over 2 MB), and never splits a group (a group larger than that goes alone).
``post_chunks`` / ``apost_chunks`` send them with at most ``max_concurrency`` in flight, each with the service's
retry policy; a chunk that still fails gives ``None`` (its samples get no reward). httpx + standard library only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from pcfjudge.client.http import ServiceError
from pcfjudge.integrations.service import RewardService

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


def post_chunks(service: RewardService, chunks: Sequence[Chunk], max_concurrency: int) -> list[Result]:
    """Every chunk's ``/v1/reward`` answer (None where it failed after the retries), from worker threads."""
    if not chunks:
        return []

    def post(client: httpx.Client, chunk: Chunk) -> Result:
        try:
            return service.post(client, [sample for _, sample in chunk])
        except (ServiceError, httpx.HTTPError):
            return None

    with service.client() as client, ThreadPoolExecutor(min(max(1, max_concurrency), len(chunks))) as pool:
        return list(pool.map(lambda chunk: post(client, chunk), chunks))


async def apost_chunks(service: RewardService, chunks: Sequence[Chunk], max_concurrency: int) -> list[Result]:
    """``post_chunks`` as a coroutine, on the running loop's shared client."""
    gate = asyncio.Semaphore(max(1, max_concurrency))

    async def post(chunk: Chunk) -> Result:
        async with gate:
            try:
                return await service.apost([sample for _, sample in chunk])
            except (ServiceError, httpx.HTTPError):
                return None

    return list(await asyncio.gather(*(post(c) for c in chunks)))


def outcomes(n: int, chunks: Sequence[Chunk], results: Sequence[Result]) -> list[Mapping[str, Any] | None]:
    """Each row's ``/v1/reward`` sample result (None where its request failed), in batch order."""
    out: list[Mapping[str, Any] | None] = [None] * n
    for chunk, result in zip(chunks, results, strict=True):
        if result is not None:
            for (i, _), sample in zip(chunk, result["samples"], strict=True):
                out[i] = sample
    return out
