"""The fake provider's batch jobs: the uploaded files and batches of the OpenAI Files + Batches endpoints
(``batch_openai``) and the Anthropic Message Batches endpoints (``batch_anthropic``), and the knobs that shape them.

A batch answers each of its requests exactly as the live endpoint would (the same wire parsing, simulated judge,
token counts and prompt-cache accounting), but only when it is *processed*, which happens on ``retrieve``:

* a new batch stays in progress for ``delay_polls`` retrieves and ``delay_seconds`` seconds, processing
  ``per_poll`` requests at each of those retrieves (None: none until it ends), then processes the rest and ends;
* ``expire_after``: it expires once that many requests are processed; the rest are reported expired;
* ``cancel`` stops processing; the requests not processed yet are reported cancelled;
* ``faults`` (names as for ``/_control/faults``: "500", "429", "refusal", "truncated", "bad_json", "ok", …) are
  consumed one per processed request, in processing order; ``fail_rate`` adds seeded random 500s;
* ``stall_after``: a results download sends that many lines, then waits until the knob is cleared (or the client
  goes), so a test can kill a collector mid-download.

``POST /_control/batches`` sets knobs (a given ``faults`` list replaces the queue); ``GET /_control/batches`` shows
the batches and what was served; ``/_control/reset`` clears everything (``FakeState.reset``).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from pcfjudge_lab.fakeprovider import fake_task as task
from pcfjudge_lab.fakeprovider.wire import Reply, Wire

Provider = Literal["openai", "anthropic"]
Outcome = Literal["pending", "answered", "expired", "cancelled"]
HTTP_STATUS = {"429": 429, "500": 500, "503": 503, "529": 529}
_HTTP_KIND = {429: "rate_limit", 500: "server", 503: "overloaded", 529: "overloaded"}
_HTTP_MESSAGE = {
    429: "Rate limit reached for requests (simulated).",
    500: "The server had an error while processing your request (simulated).",
    503: "The service is temporarily overloaded (simulated).",
    529: "Overloaded",
}


@dataclass(frozen=True, slots=True)
class BatchKnobs:
    delay_polls: int = 0
    delay_seconds: float = 0.0
    per_poll: int | None = None
    expire_after: int | None = None
    fail_rate: float = 0.0
    stall_after: int | None = None


class KnobPlan(BaseModel):
    """The body of ``POST /_control/batches``."""

    model_config = ConfigDict(extra="forbid")
    delay_polls: int | None = Field(None, ge=0, le=10_000)
    delay_seconds: float | None = Field(None, ge=0, le=86_400)
    per_poll: int | None = Field(None, ge=1)
    expire_after: int | None = Field(None, ge=0)
    fail_rate: float | None = Field(None, ge=0, le=1)
    stall_after: int | None = Field(None, ge=0)
    faults: list[str] | None = None


@dataclass(slots=True)
class FakeFile:
    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


@dataclass(slots=True)
class FakeRequest:
    """One request of a batch: its id and body, and (once processed) the live endpoint's status and answer."""

    custom_id: str
    body: dict[str, Any]
    outcome: Outcome = "pending"
    status: int = 0
    response: dict[str, Any] = field(default_factory=dict)
    request_id: str = ""


@dataclass(slots=True)
class FakeBatch:
    id: str
    provider: Provider
    wire: Wire
    requests: list[FakeRequest]
    knobs: BatchKnobs
    created_at: float
    metadata: dict[str, str] | None = None
    input_file_id: str = ""
    endpoint: str = "/v1/chat/completions"
    polls: int = 0
    processed: int = 0
    cancel_at: float | None = None
    ended_at: float | None = None
    end: Literal["completed", "expired", "cancelled", "failed"] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)  # OpenAI validation errors (status "failed")
    output_file_id: str | None = None
    error_file_id: str | None = None

    @property
    def pending(self) -> list[FakeRequest]:
        return [r for r in self.requests if r.outcome == "pending"]


Answer = Callable[[Wire, dict[str, Any], str | None, str], tuple[int, dict[str, Any]]]
"""(wire, request body, fault, ident) -> (HTTP status, response body) as the live endpoint would answer."""


class BatchBook:
    """Every file and batch the fake holds, the knobs, the per-request fault queue and what was served."""

    def __init__(self, seed: int = 0) -> None:
        self.files: dict[str, FakeFile] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.faults: deque[str] = deque()
        self.served: Counter[str] = Counter()  # processed requests by provider
        self.outcomes: Counter[str] = Counter()  # processed requests by outcome ("200", "500", "expired", …)
        self._release: asyncio.Event | None = None
        self.reset(seed)

    def reset(self, seed: int) -> None:
        """Forget every file and batch, restore the default knobs and release any stalled download."""
        self.files.clear()
        self.batches.clear()
        self.faults.clear()
        self.served.clear()
        self.outcomes.clear()
        self.knobs = BatchKnobs()
        self.rng = random.Random(seed)
        self.ids = 0
        if self._release is not None:
            self._release.set()

    def new_id(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}{self.ids:024x}"

    def configure(self, plan: KnobPlan) -> None:
        if plan.faults is not None:
            self.faults = deque(plan.faults)
        changes = {k: v for k, v in plan.model_dump(exclude={"faults"}).items() if k in plan.model_fields_set}
        self.knobs = replace(self.knobs, **changes)
        if self.knobs.stall_after is None and self._release is not None:
            self._release.set()

    def add_file(self, filename: str, purpose: str, content: bytes) -> FakeFile:
        file = FakeFile(self.new_id("file-"), filename, purpose, content, int(time.time()))
        self.files[file.id] = file
        return file

    def add_batch(self, batch: FakeBatch) -> FakeBatch:
        self.batches[batch.id] = batch
        return batch

    def advance(self, batch: FakeBatch, answer: Answer, finish: Callable[[FakeBatch], None]) -> None:
        """One retrieve of ``batch``: process what its knobs allow now; ``finish`` writes its results once it ends."""
        if batch.end is not None:
            return
        batch.polls += 1
        if batch.cancel_at is not None:
            self._close(batch, "cancelled", finish)
            return
        knobs = batch.knobs
        due = batch.polls > knobs.delay_polls and time.time() - batch.created_at >= knobs.delay_seconds
        budget = len(batch.requests) if due else (knobs.per_poll or 0)
        for request in batch.pending[:budget]:
            if knobs.expire_after is not None and batch.processed >= knobs.expire_after:
                self._close(batch, "expired", finish)
                return
            self._process(batch, request, answer)
        if due:
            self._close(batch, "completed", finish)

    def _process(self, batch: FakeBatch, request: FakeRequest, answer: Answer) -> None:
        fault = self.faults.popleft() if self.faults else None
        if fault is None and batch.knobs.fail_rate > 0 and self.rng.random() < batch.knobs.fail_rate:
            fault = "500"
        ident = self.new_id("")
        request.status, request.response = answer(batch.wire, request.body, None if fault == "ok" else fault, ident)
        request.outcome, request.request_id = "answered", f"req_{ident}"
        batch.processed += 1
        self.served[batch.provider] += 1
        self.outcomes[str(request.status)] += 1

    def _close(
        self, batch: FakeBatch, end: Literal["completed", "expired", "cancelled"], finish: Callable[[FakeBatch], None]
    ) -> None:
        left: Outcome = "expired" if end == "expired" else "cancelled"
        for request in batch.pending:
            request.outcome = left
            self.outcomes[left] += 1
        batch.end, batch.ended_at = end, time.time()
        finish(batch)

    def release_event(self) -> asyncio.Event:
        if self._release is None:
            self._release = asyncio.Event()
        return self._release

    def summary(self) -> dict[str, Any]:
        return {
            "knobs": {
                "delay_polls": self.knobs.delay_polls,
                "delay_seconds": self.knobs.delay_seconds,
                "per_poll": self.knobs.per_poll,
                "expire_after": self.knobs.expire_after,
                "fail_rate": self.knobs.fail_rate,
                "stall_after": self.knobs.stall_after,
            },
            "pending_faults": list(self.faults),
            "served": dict(self.served),
            "outcomes": dict(self.outcomes),
            "batches": [
                {
                    "id": b.id,
                    "provider": b.provider,
                    "requests": len(b.requests),
                    "processed": b.processed,
                    "end": b.end,
                    "polls": b.polls,
                }
                for b in self.batches.values()
            ],
        }


def respond(
    seed: int, seen_prefix: Callable[[str], bool], wire: Wire, body: dict[str, Any], fault: str | None, ident: str
) -> tuple[int, dict[str, Any]]:
    """What the live endpoint answers to ``body`` with ``fault`` (``seen_prefix``: the fake's prompt cache)."""
    parsed = wire.parse(body)
    if isinstance(parsed, str):
        return 400, _json(wire.error(400, "invalid", parsed, ident=ident))
    status = HTTP_STATUS.get(fault or "")
    if status is not None:
        if status == 529 and wire.name != "anthropic":
            status = 503
        return status, _json(wire.error(status, _HTTP_KIND[status], _HTTP_MESSAGE[status], ident=ident))
    call = task.recover(parsed.system, parsed.user, parsed.schema_name, parsed.schema)
    if call is None:
        message = "No judging task (QUESTION plus candidate blocks) in the prompt."
        return 400, _json(wire.error(400, "invalid", message, ident=ident))
    prompt_tokens = task.tokens(parsed.prompt)
    prefix = parsed.cache_prefix
    reply = Reply(
        parsed=parsed,
        answer=task.answer(call, seed, fault),
        fault=fault,
        prompt_tokens=prompt_tokens,
        prefix_tokens=min(task.tokens(prefix), prompt_tokens) if prefix else 0,
        prefix_seen=bool(prefix) and seen_prefix(task.digest(wire.name, prefix)),
        ident=ident,
    )
    return 200, _json(wire.reply(reply))


def _json(response: JSONResponse) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(bytes(response.body))
    return data


def authorized(request: Request, wire: Wire, expected: str | None) -> Response | None:
    """The live endpoints' key check: None when the request may go on, else the provider's 401."""
    key = wire.key(request)
    if key is None:
        return wire.error(401, "auth", "No API key provided.")
    if expected is not None and key != expected:
        return wire.error(401, "auth", f"Incorrect API key provided: {key}.")
    return None


def jsonl_stream(book: BatchBook, lines: list[str], media_type: str) -> StreamingResponse:
    """A results download, line by line, stalling after ``stall_after`` lines while that knob is set."""
    stall_after = book.knobs.stall_after
    release = book.release_event()
    if stall_after is not None:
        release.clear()

    async def body() -> AsyncIterator[bytes]:
        for i, line in enumerate(lines):
            if stall_after is not None and i == stall_after:
                await release.wait()
            yield (line + "\n").encode()

    return StreamingResponse(body(), media_type=media_type)


def validation_error(exc: ValidationError) -> JSONResponse:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return JSONResponse({"error": "validation_error", "detail": f"{where}: {first['msg']}"}, 422)


async def set_knobs(request: Request) -> Response:
    book: BatchBook = request.app.state.fake.batches
    try:
        plan = KnobPlan.model_validate_json(await request.body())
    except ValidationError as exc:
        return validation_error(exc)
    book.configure(plan)
    return JSONResponse(book.summary())


async def show_batches(request: Request) -> Response:
    book: BatchBook = request.app.state.fake.batches
    return JSONResponse(book.summary())
