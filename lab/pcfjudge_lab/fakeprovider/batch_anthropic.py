"""Anthropic Message Batches on the wire (what ``client.messages.batches`` calls), answered from the fake's
``BatchBook`` (see ``batch_state`` for how a batch progresses).

    POST /v1/messages/batches              create ({"requests": [{"custom_id", "params"}, …]})
    GET  /v1/messages/batches              list (newest first)
    GET  /v1/messages/batches/{id}         retrieve (advances processing)
    POST /v1/messages/batches/{id}/cancel  cancel
    GET  /v1/messages/batches/{id}/results the results JSONL once the batch has ended (streamed)

Custom ids are checked as Anthropic checks them (``^[a-zA-Z0-9_-]{1,64}$``, unique within the batch). Request counts
stay zero but for ``processing`` until the batch ends, as Anthropic's do. Each result line is
``{"custom_id", "result": {"type": "succeeded", "message"} | {"type": "errored", "error"} | {"type": "canceled"}
| {"type": "expired"}}``.
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pcfjudge_lab.fakeprovider.anthropic_wire import AnthropicWire
from pcfjudge_lab.fakeprovider.batch_state import (
    BatchBook,
    FakeBatch,
    FakeRequest,
    authorized,
    jsonl_stream,
    respond,
)
from pcfjudge_lab.fakeprovider.state import FakeState

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_REQUESTS = 100_000
_WINDOW_S = 86_400


def _error(status: int, message: str) -> JSONResponse:
    kind = "not_found" if status == 404 else "invalid"
    response = AnthropicWire().error(status, kind, message)
    if status == 404:  # AnthropicWire maps unknown kinds to api_error; Anthropic says not_found_error
        response = JSONResponse(
            {"type": "error", "error": {"type": "not_found_error", "message": message}, "request_id": None}, 404
        )
    return response


def _state(request: Request) -> tuple[FakeState, BatchBook, Response | None]:
    state: FakeState = request.app.state.fake
    return state, state.batches, authorized(request, AnthropicWire(), state.live.expect_key)


def _check(body: object) -> list[FakeRequest] | str:
    """The batch's requests, or what is wrong with the create body (sent back as a 400)."""
    if not isinstance(body, dict) or not isinstance(body.get("requests"), list):
        return "requests: Field required"
    items = body["requests"]
    if not 1 <= len(items) <= MAX_REQUESTS:
        return f"requests: must hold between 1 and {MAX_REQUESTS} requests"
    requests: list[FakeRequest] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        custom_id = item.get("custom_id") if isinstance(item, dict) else None
        if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
            return f"requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if custom_id in seen:
            return f"requests.{i}.custom_id: duplicate custom_id {custom_id!r} in this batch"
        params = item.get("params")
        if not isinstance(params, dict):
            return f"requests.{i}.params: Field required"
        if params.get("stream"):
            return f"requests.{i}.params.stream: streaming is not supported in a batch"
        seen.add(custom_id)
        requests.append(FakeRequest(custom_id, params))
    return requests


async def _create(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "The request body is not valid JSON.")
    checked = _check(body)
    if isinstance(checked, str):
        return _error(400, checked)
    batch = FakeBatch(
        id=book.new_id("msgbatch_"),
        provider="anthropic",
        wire=AnthropicWire(),
        requests=checked,
        knobs=book.knobs,
        created_at=time.time(),
    )
    return JSONResponse(_batch_json(book.add_batch(batch), request))


def _find(request: Request, book: BatchBook) -> FakeBatch | None:
    batch = book.batches.get(request.path_params["batch_id"])
    return batch if batch is not None and batch.provider == "anthropic" else None


async def _retrieve(request: Request) -> Response:
    state, book, refused = _state(request)
    if refused is not None:
        return refused
    batch = _find(request, book)
    if batch is None:
        return _error(404, "No message batch found with that id.")
    book.advance(batch, partial(respond, state.config.seed, state.seen_prefix), lambda _b: None)
    return JSONResponse(_batch_json(batch, request))


async def _cancel(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    batch = _find(request, book)
    if batch is None:
        return _error(404, "No message batch found with that id.")
    if batch.end is None and batch.cancel_at is None:
        batch.cancel_at = time.time()
    return JSONResponse(_batch_json(batch, request))


async def _results(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    batch = _find(request, book)
    if batch is None:
        return _error(404, "No message batch found with that id.")
    if batch.end is None:
        return _error(400, "Results are not available until the message batch has ended.")
    lines = [json.dumps({"custom_id": r.custom_id, "result": _result(r)}) for r in batch.requests]
    return jsonl_stream(book, lines, "application/binary")


async def _list(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    try:
        limit = min(1000, max(1, int(request.query_params.get("limit", "20"))))
    except ValueError:
        return _error(400, "limit: Input should be a valid integer")
    ours = [b for b in reversed(book.batches.values()) if b.provider == "anthropic"]  # newest first
    after = request.query_params.get("after_id")
    if after is not None:
        ids = [b.id for b in ours]
        ours = ours[ids.index(after) + 1 :] if after in ids else []
    page = ours[:limit]
    return JSONResponse(
        {
            "data": [_batch_json(b, request) for b in page],
            "has_more": len(ours) > limit,
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
        }
    )


def _result(r: FakeRequest) -> dict[str, Any]:
    if r.outcome == "expired":
        return {"type": "expired"}
    if r.outcome == "cancelled":
        return {"type": "canceled"}
    if r.status == 200:
        return {"type": "succeeded", "message": r.response}
    return {"type": "errored", "error": r.response}


def _time(seconds: float | None) -> str | None:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z") if seconds is not None else None


def _batch_json(batch: FakeBatch, request: Request) -> dict[str, Any]:
    counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    if batch.end is None:
        counts["processing"] = len(batch.requests)
    else:
        for r in batch.requests:
            counts[_result(r)["type"]] += 1
    ended = batch.end is not None
    base = str(request.base_url).rstrip("/")
    return {
        "id": batch.id,
        "type": "message_batch",
        "processing_status": "ended" if ended else ("canceling" if batch.cancel_at is not None else "in_progress"),
        "request_counts": counts,
        "ended_at": _time(batch.ended_at),
        "created_at": _time(batch.created_at),
        "expires_at": _time(batch.created_at + _WINDOW_S),
        "archived_at": None,
        "cancel_initiated_at": _time(batch.cancel_at),
        "results_url": f"{base}/v1/messages/batches/{batch.id}/results" if ended else None,
    }


def anthropic_batch_routes() -> list[Route]:
    return [
        Route("/v1/messages/batches", _create, methods=["POST"]),
        Route("/v1/messages/batches", _list, methods=["GET"]),
        Route("/v1/messages/batches/{batch_id}", _retrieve, methods=["GET"]),
        Route("/v1/messages/batches/{batch_id}/cancel", _cancel, methods=["POST"]),
        Route("/v1/messages/batches/{batch_id}/results", _results, methods=["GET"]),
    ]
