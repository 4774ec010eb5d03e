"""The three places a batch can run, behind one small interface (``BatchAPI``):

    openai     the OpenAI Batch API through the official SDK: ``client.files.create`` (purpose "batch"),
               ``client.batches.create/retrieve/cancel/list`` and ``client.files`` content of the output and error
               files; the same JSONL as ``vllm run-batch`` takes
    anthropic  Anthropic Message Batches through the official SDK: ``client.messages.batches.create/retrieve/
               cancel/list/results``
    vllm       the OpenAI batch JSONL written for ``vllm run-batch`` on the user's own GPUs; its output file is read back

Each request body is built by the backend's own request builder (``OpenAIBackend.request`` /
``AnthropicBackend.request``), so a batch sends exactly what a live call would, and each result is parsed by the
backend's own response checks (refusal, content filter, truncation → typed errors), as a live call's is. The SDK
clients are the backends' own (same key, base URL and headers), with retries on the calls that are safe to repeat;
a ``create`` is never retried blindly: an uncertain one is looked up by its tag (``find``) before anything is sent
again, so a batch is never paid twice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pcfjudge.backends.anthropic_backend import AnthropicBackend
from pcfjudge.backends.base import Backend, BackendError, Completion, JudgeCall
from pcfjudge.backends.openai_backend import KEY_ENV as OPENAI_KEY_ENV
from pcfjudge.backends.openai_backend import OpenAIBackend
from pcfjudge.backends.sdkerrors import status_error
from pcfjudge.batch.store import Submission, Via
from pcfjudge.types import Usage

OPENAI_ENDPOINT: Literal["/v1/chat/completions"] = "/v1/chat/completions"
_RETRIES = 4  # the SDK's own retries for idempotent batch calls (retrieve, list, cancel, downloads)
_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class Failure:
    """A request the batch did not answer usefully: ``kind`` (expired, cancelled, refusal, truncated, rate_limited,
    provider_error, missing, batch_failed, parse_error …) and what happened."""

    kind: str
    detail: str
    usage: Usage = field(default_factory=Usage)


Result = Completion | Failure


class BatchAPI(Protocol):
    via: Via
    max_requests: int
    max_bytes: int

    def line(self, custom_id: str, call: JudgeCall) -> dict[str, Any]:
        """One line of the input file: the request a live call would send, under ``custom_id``."""
        ...

    async def submit(self, sub: Submission, content: bytes, tag: str) -> None:
        """Send the input file's ``content``; sets ``sub.batch_id`` (and ``file_id``) and ``status`` "submitted"."""
        ...

    async def find(self, sub: Submission, tag: str) -> str | None:
        """The provider's id of an interrupted submission's batch, or None when the provider never received it."""
        ...

    async def refresh(self, sub: Submission) -> None:
        """Update ``provider_status`` and ``counts``; ``status`` becomes "ended" once the provider is done."""
        ...

    async def cancel(self, sub: Submission) -> None: ...

    def results(self, sub: Submission) -> AsyncIterator[tuple[str, Any]]:
        """(custom_id, raw result) of every request the provider reports, as they are downloaded."""
        ...

    def parse(self, raw: Any, call: JudgeCall | None) -> Result:
        """A raw result as a live call's outcome (``call``: the request's call, for its tool name)."""
        ...


class OpenAIBatches:
    """The OpenAI Batch API (``/v1/files`` + ``/v1/batches``) on the OpenAI backend's client."""

    via: Via = "openai"
    max_requests = 50_000  # OpenAI's limits per input file: 50,000 requests, 200 MB
    max_bytes = 190_000_000

    def __init__(self, backend: OpenAIBackend) -> None:
        self.backend = backend
        self.client = backend.client.with_options(max_retries=_RETRIES, timeout=_TIMEOUT_S)
        self.once = backend.client.with_options(max_retries=0, timeout=_TIMEOUT_S)  # for creates

    def line(self, custom_id: str, call: JudgeCall) -> dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": OPENAI_ENDPOINT, "body": self.backend.request(call)}

    async def submit(self, sub: Submission, content: bytes, tag: str) -> None:
        if sub.file_id is None:  # an upload is harmless to repeat: an orphan input file costs nothing
            upload = await self.client.files.create(file=(sub.input, content), purpose="batch")
            sub.file_id = upload.id
        batch = await self.once.batches.create(
            input_file_id=sub.file_id,
            endpoint=OPENAI_ENDPOINT,
            completion_window="24h",
            metadata={"pcfjudge": tag},
        )
        sub.batch_id, sub.status, sub.provider_status = batch.id, "submitted", batch.status

    async def find(self, sub: Submission, tag: str) -> str | None:
        async for batch in self.client.batches.list(limit=100):  # newest first
            if (batch.metadata or {}).get("pcfjudge") == tag:
                return batch.id
            if batch.created_at < sub.created - 3600:
                break
        return None

    async def refresh(self, sub: Submission) -> None:
        assert sub.batch_id is not None
        batch = await self.client.batches.retrieve(sub.batch_id)
        sub.provider_status = batch.status
        counts = batch.request_counts
        sub.counts = counts.model_dump() if counts is not None else {}
        if batch.status in ("completed", "expired", "cancelled", "failed"):
            sub.status = "ended"
            sub.result_files = [f for f in (batch.output_file_id, batch.error_file_id) if f]
            if batch.status == "failed" and batch.errors is not None and batch.errors.data:
                first = batch.errors.data[0]
                sub.provider_status = f"failed: {first.code}: {first.message} (line {first.line})"

    async def cancel(self, sub: Submission) -> None:
        assert sub.batch_id is not None
        batch = await self.client.batches.cancel(sub.batch_id)
        sub.provider_status = batch.status

    async def results(self, sub: Submission) -> AsyncIterator[tuple[str, Any]]:
        for file_id in sub.result_files:
            async with self.client.files.with_streaming_response.content(file_id) as response:
                async for raw in response.iter_lines():
                    if raw.strip():
                        line = json.loads(raw)
                        yield str(line.get("custom_id")), line

    def parse(self, raw: Any, call: JudgeCall | None) -> Result:
        return chat_result(raw, self.backend, "openai")


class VllmFiles:
    """``vllm run-batch``: the same input file as OpenAI's, run by the user; its output file is read back."""

    via: Via = "vllm"
    max_requests = 1_000_000
    max_bytes = 10**12

    def __init__(self, backend: OpenAIBackend, directory: Path) -> None:
        self.openai = OpenAIBatches(backend)
        self.directory = directory

    def line(self, custom_id: str, call: JudgeCall) -> dict[str, Any]:
        return self.openai.line(custom_id, call)

    async def submit(self, sub: Submission, content: bytes, tag: str) -> None:
        sub.output = sub.output or f"output-{sub.local_id}.jsonl"
        sub.status, sub.provider_status = "submitted", "waiting for vllm run-batch"

    async def find(self, sub: Submission, tag: str) -> str | None:
        return None  # nothing was sent anywhere: an interrupted submission is simply written again

    def output_path(self, sub: Submission) -> Path:
        return self.directory / (sub.output or f"output-{sub.local_id}.jsonl")

    async def refresh(self, sub: Submission) -> None:
        lines = await asyncio.to_thread(_read_jsonl, self.output_path(sub))
        if lines is None:
            sub.provider_status = "waiting for vllm run-batch"
            return
        done = {cid for cid, _ in lines if cid in sub.requests}
        sub.counts = {"total": len(sub.requests), "written": len(done)}
        if len(done) == len(sub.requests):
            sub.status, sub.provider_status = "ended", "output complete"
        else:
            sub.provider_status = f"output has {len(done)} of {len(sub.requests)} results"

    async def cancel(self, sub: Submission) -> None:
        sub.status, sub.provider_status = "abandoned", "cancelled (stop vllm run-batch yourself)"

    async def results(self, sub: Submission) -> AsyncIterator[tuple[str, Any]]:
        for custom_id, line in await asyncio.to_thread(_read_jsonl, self.output_path(sub)) or []:
            yield custom_id, line

    def parse(self, raw: Any, call: JudgeCall | None) -> Result:
        return chat_result(raw, self.openai.backend, "vllm")


def _read_jsonl(path: Path) -> list[tuple[str, dict[str, Any]]] | None:
    """(custom_id, line) of every complete line of a ``vllm run-batch`` output file; None when there is none yet."""
    if not path.exists():
        return None
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            continue  # a line vLLM is still writing
        if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
            out.append((line["custom_id"], line))
    return out


class AnthropicBatches:
    """Anthropic Message Batches (``/v1/messages/batches``) on the Anthropic backend's client."""

    via: Via = "anthropic"
    max_requests = 100_000  # Anthropic's limits per batch: 100,000 requests, 256 MB
    max_bytes = 240_000_000

    def __init__(self, backend: AnthropicBackend) -> None:
        self.backend = backend
        self.client = backend.client.with_options(max_retries=_RETRIES, timeout=_TIMEOUT_S)
        self.once = backend.client.with_options(max_retries=0, timeout=_TIMEOUT_S)

    def line(self, custom_id: str, call: JudgeCall) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": self.backend.request(call)}

    async def submit(self, sub: Submission, content: bytes, tag: str) -> None:
        requests = [json.loads(raw) for raw in content.splitlines() if raw.strip()]
        batch = await self.once.messages.batches.create(requests=requests)
        sub.batch_id, sub.status, sub.provider_status = batch.id, "submitted", batch.processing_status

    async def find(self, sub: Submission, tag: str) -> str | None:
        """Message batches carry no metadata: the one created since the submission began with as many requests."""
        found = []
        async for batch in self.client.messages.batches.list(limit=100):  # newest first
            if batch.created_at.timestamp() < sub.created - 60:
                break
            if sum(batch.request_counts.model_dump().values()) == len(sub.requests):
                found.append(batch.id)
        if len(found) > 1:
            raise LookupError(
                f"{len(found)} message batches of {len(sub.requests)} requests were created since submission "
                f"{sub.local_id} began ({', '.join(found)}); cancel the extra ones at the provider"
            )
        return found[0] if found else None

    async def refresh(self, sub: Submission) -> None:
        assert sub.batch_id is not None
        batch = await self.client.messages.batches.retrieve(sub.batch_id)
        sub.provider_status = batch.processing_status
        sub.counts = batch.request_counts.model_dump()
        if batch.processing_status == "ended":
            sub.status = "ended"

    async def cancel(self, sub: Submission) -> None:
        assert sub.batch_id is not None
        batch = await self.client.messages.batches.cancel(sub.batch_id)
        sub.provider_status = batch.processing_status

    async def results(self, sub: Submission) -> AsyncIterator[tuple[str, Any]]:
        assert sub.batch_id is not None
        async for response in await self.client.messages.batches.results(sub.batch_id):
            yield response.custom_id, response.result

    def parse(self, raw: Any, call: JudgeCall | None) -> Result:
        kind = getattr(raw, "type", None)
        if kind == "succeeded":
            try:
                # the live path's own checks (refusal, truncation, tool answer); see the module docstring
                return self.backend.completion(raw.message, call.schema_name if call is not None else "")
            except BackendError as exc:
                return Failure(exc.kind, exc.detail, getattr(exc, "usage", None) or Usage())
        if kind == "errored":
            error = raw.error.error
            return Failure(_ANTHROPIC_KINDS.get(error.type, "provider_error"), f"{error.type}: {error.message}")
        if kind == "canceled":
            return Failure("cancelled", "the batch was cancelled before this request ran")
        if kind == "expired":
            return Failure("expired", "the batch expired before this request ran")
        return Failure("provider_error", f"unknown result type {kind!r}")


_ANTHROPIC_KINDS = {
    "rate_limit_error": "rate_limited",
    "overloaded_error": "rate_limited",
    "timeout_error": "timeout",
    "invalid_request_error": "invalid_request",
}


def chat_result(line: Any, backend: OpenAIBackend, provider: str) -> Result:
    """One line of an OpenAI batch output/error file or a ``vllm run-batch`` output file as a live call's outcome."""
    response = line.get("response") if isinstance(line, dict) else None
    error = line.get("error") if isinstance(line, dict) else None
    body = response.get("body") if isinstance(response, dict) else None
    status = response.get("status_code") if isinstance(response, dict) else None
    if status == 200 and isinstance(body, dict):
        try:
            # the live wire path's own checks (refusal, content filter, truncation); see the module docstring
            completion: Completion = backend.completion_of(body)
        except BackendError as exc:
            return Failure(exc.kind, exc.detail, getattr(exc, "usage", None) or Usage())
        return completion
    if isinstance(error, dict) and error.get("code") == "batch_expired":
        return Failure("expired", str(error.get("message") or "the batch expired before this request ran"))
    if isinstance(error, dict) and error.get("code") == "batch_cancelled":
        return Failure("cancelled", str(error.get("message") or "the batch was cancelled before this request ran"))
    message = _message(body) or _message(error) or "no answer"
    if isinstance(status, int) and status != 200:
        typed = status_error(provider, status, message, {}, key_env=OPENAI_KEY_ENV)
        return Failure(typed.kind, typed.detail)
    return Failure("provider_error", f"{provider}: {message}")


def _message(data: Any) -> str | None:
    """The error message of an error body (``{"error": {"message"}}``), an error object or a string."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        inner = data.get("error", data)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return None


def build_api(via: Via, backend: Backend, directory: Path) -> BatchAPI:
    """The batch API for ``via`` on ``backend`` (the model's own); TypeError when the backend cannot batch."""
    if via == "anthropic" and isinstance(backend, AnthropicBackend):
        return AnthropicBatches(backend)
    if via != "anthropic" and isinstance(backend, OpenAIBackend):
        return OpenAIBatches(backend) if via == "openai" else VllmFiles(backend, directory)
    raise TypeError(f"{via} batches need the {'anthropic' if via == 'anthropic' else 'openai'} backend")
