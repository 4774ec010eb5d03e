"""OpenAI Files + Batches on the wire (what ``client.files`` and ``client.batches`` call), answered from the
fake's ``BatchBook`` (see ``batch_state`` for how a batch progresses).

    POST /v1/files                    multipart upload (purpose "batch")    GET /v1/files/{id}          file object
    GET  /v1/files/{id}/content       the file's bytes (output/error JSONL, streamed)
    POST /v1/batches                  create from an uploaded input file    GET /v1/batches             list
    GET  /v1/batches/{id}             retrieve (advances processing)        POST /v1/batches/{id}/cancel

The input file is checked as OpenAI checks it (JSON lines with a unique ``custom_id``, ``method`` POST and the
batch's ``url``); a file that fails the check makes a batch with status "failed" and its ``errors``. Output lines
are ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``: answered requests with
status 200 go to the output file, the rest (HTTP errors, expired and cancelled requests, the latter two with
``error.code`` batch_expired / batch_cancelled) to the error file.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import time
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pcfjudge_lab.fakeprovider.batch_state import (
    BatchBook,
    FakeBatch,
    FakeRequest,
    authorized,
    jsonl_stream,
    respond,
)
from pcfjudge_lab.fakeprovider.openai_wire import OpenAIWire
from pcfjudge_lab.fakeprovider.state import FakeState

ENDPOINTS = ("/v1/chat/completions",)
_WINDOW_S = 86_400
_LEFT = {
    "expired": ("batch_expired", "This request could not be executed before the completion window expired."),
    "cancelled": ("batch_cancelled", "This request was not executed because the batch was cancelled."),
}


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    code = "not_found" if status == 404 else None
    return JSONResponse(
        {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}, status
    )


def _state(request: Request) -> tuple[FakeState, BatchBook, Response | None]:
    state: FakeState = request.app.state.fake
    return state, state.batches, authorized(request, OpenAIWire(), state.live.expect_key)


def _multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The parts of a multipart/form-data body by field name: (filename, bytes)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    )
    parts: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        return parts
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            parts[name] = (part.get_filename(), payload)
    return parts


async def _upload(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    parts = _multipart(request.headers.get("content-type", ""), await request.body())
    if "file" not in parts:
        return _error(400, "Missing required parameter: 'file'.", "file")
    purpose = parts.get("purpose", (None, b""))[1].decode()
    if purpose != "batch":
        return _error(400, f"Invalid value for purpose: {purpose!r} (this fake takes 'batch').", "purpose")
    filename, content = parts["file"]
    return JSONResponse(book.add_file(filename or "upload.jsonl", purpose, content).as_json())


async def _file(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    file = book.files.get(request.path_params["file_id"])
    return JSONResponse(file.as_json()) if file is not None else _error(404, "No such File object.", "id")


async def _content(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    file = book.files.get(request.path_params["file_id"])
    if file is None:
        return _error(404, "No such File object.", "id")
    return jsonl_stream(book, file.content.decode().splitlines(), "application/octet-stream")


def _read_input(content: bytes, endpoint: str) -> tuple[list[FakeRequest], list[dict[str, Any]]]:
    """The requests of an input file, or the validation errors OpenAI would report (with 1-based line numbers)."""
    requests: list[FakeRequest] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, raw in enumerate(content.decode(errors="replace").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            errors.append(
                {"code": "invalid_json_line", "message": "This line is not parseable as valid JSON.", "line": number}
            )
            continue
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        problem = None
        if not isinstance(custom_id, str) or not custom_id:
            problem = ("missing_required_parameter", "Missing required parameter: 'custom_id'.", "custom_id")
        elif custom_id in seen:
            problem = (
                "duplicate_custom_id",
                "The custom_id for this request is a duplicate of another request.",
                "custom_id",
            )
        elif line.get("method") != "POST":
            problem = ("invalid_value", "Invalid value for 'method': only POST is supported.", "method")
        elif line.get("url") != endpoint:
            problem = ("mismatched_url", f"The url must match the batch's endpoint {endpoint}.", "url")
        elif not isinstance(line.get("body"), dict):
            problem = ("missing_required_parameter", "Missing required parameter: 'body'.", "body")
        if problem is not None:
            code, message, param = problem
            errors.append({"code": code, "message": message, "param": param, "line": number})
            continue
        assert isinstance(custom_id, str)  # checked above
        seen.add(custom_id)
        requests.append(FakeRequest(custom_id, line["body"]))
    if not requests and not errors:
        errors.append({"code": "empty_file", "message": "The input file has no requests.", "line": None})
    return requests, errors


async def _create(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "The request body is not valid JSON.")
    if not isinstance(body, dict):
        return _error(400, "The request body must be a JSON object.")
    endpoint, window = body.get("endpoint"), body.get("completion_window")
    if endpoint not in ENDPOINTS:
        return _error(400, f"Invalid endpoint {endpoint!r}; this fake serves {', '.join(ENDPOINTS)}.", "endpoint")
    if window != "24h":
        return _error(400, "Invalid completion_window: only '24h' is supported.", "completion_window")
    file = book.files.get(str(body.get("input_file_id")))
    if file is None:
        return _error(400, f"Invalid input_file_id {body.get('input_file_id')!r}: no such file.", "input_file_id")
    metadata = body.get("metadata")
    requests, errors = _read_input(file.content, endpoint)
    batch = FakeBatch(
        id=book.new_id("batch_"),
        provider="openai",
        wire=OpenAIWire(),
        requests=[] if errors else requests,
        knobs=book.knobs,
        created_at=time.time(),
        metadata=metadata if isinstance(metadata, dict) else None,
        input_file_id=file.id,
        endpoint=endpoint,
    )
    if errors:
        batch.end, batch.ended_at, batch.errors = "failed", time.time(), errors
    return JSONResponse(_batch_json(book.add_batch(batch)))


async def _retrieve(request: Request) -> Response:
    state, book, refused = _state(request)
    if refused is not None:
        return refused
    batch = book.batches.get(request.path_params["batch_id"])
    if batch is None or batch.provider != "openai":
        return _error(404, "No batch found with that id.", "batch_id")
    book.advance(batch, partial(respond, state.config.seed, state.seen_prefix), partial(_finish, book))
    return JSONResponse(_batch_json(batch))


async def _cancel(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    batch = book.batches.get(request.path_params["batch_id"])
    if batch is None or batch.provider != "openai":
        return _error(404, "No batch found with that id.", "batch_id")
    if batch.end is not None:
        return _error(400, f"Cannot cancel a batch with status {_status(batch)!r}.")
    batch.cancel_at = time.time()
    return JSONResponse(_batch_json(batch))


async def _list(request: Request) -> Response:
    _, book, refused = _state(request)
    if refused is not None:
        return refused
    try:
        limit = min(100, max(1, int(request.query_params.get("limit", "20"))))
    except ValueError:
        return _error(400, "limit must be an integer.", "limit")
    ours = [b for b in reversed(book.batches.values()) if b.provider == "openai"]  # newest first
    after = request.query_params.get("after")
    if after is not None:
        ids = [b.id for b in ours]
        ours = ours[ids.index(after) + 1 :] if after in ids else []
    page = ours[:limit]
    return JSONResponse(
        {
            "object": "list",
            "data": [_batch_json(b) for b in page],
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
            "has_more": len(ours) > limit,
        }
    )


def _finish(book: BatchBook, batch: FakeBatch) -> None:
    """Write the output and error files of an ended batch."""
    output: list[str] = []
    errors: list[str] = []
    for r in batch.requests:
        if r.outcome == "answered":
            line = {
                "id": book.new_id("batch_req_"),
                "custom_id": r.custom_id,
                "response": {"status_code": r.status, "request_id": r.request_id, "body": r.response},
                "error": None,
            }
            (output if r.status == 200 else errors).append(json.dumps(line))
        else:
            code, message = _LEFT[r.outcome]
            line = {
                "id": book.new_id("batch_req_"),
                "custom_id": r.custom_id,
                "response": None,
                "error": {"code": code, "message": message},
            }
            errors.append(json.dumps(line))
    if output:
        batch.output_file_id = book.add_file(f"{batch.id}_output.jsonl", "batch_output", _lines(output)).id
    if errors:
        batch.error_file_id = book.add_file(f"{batch.id}_error.jsonl", "batch_output", _lines(errors)).id


def _lines(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _status(batch: FakeBatch) -> str:
    if batch.end is not None:
        return batch.end
    if batch.cancel_at is not None:
        return "cancelling"
    return "in_progress" if batch.polls > 0 else "validating"


def _batch_json(batch: FakeBatch) -> dict[str, Any]:
    created = int(batch.created_at)
    ended = int(batch.ended_at) if batch.ended_at is not None else None
    answered = [r for r in batch.requests if r.outcome == "answered"]
    completed = sum(1 for r in answered if r.status == 200)
    usage = [r.response.get("usage") or {} for r in answered if r.status == 200]
    input_tokens = sum(int(u.get("prompt_tokens") or 0) for u in usage)
    output_tokens = sum(int(u.get("completion_tokens") or 0) for u in usage)
    cached = sum(int((u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0) for u in usage)
    return {
        "id": batch.id,
        "object": "batch",
        "endpoint": batch.endpoint,
        "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
        "input_file_id": batch.input_file_id,
        "completion_window": "24h",
        "status": _status(batch),
        "output_file_id": batch.output_file_id,
        "error_file_id": batch.error_file_id,
        "created_at": created,
        "in_progress_at": created if batch.polls > 0 and batch.end != "failed" else None,
        "expires_at": created + _WINDOW_S,
        "finalizing_at": ended if batch.end == "completed" else None,
        "completed_at": ended if batch.end == "completed" else None,
        "failed_at": ended if batch.end == "failed" else None,
        "expired_at": ended if batch.end == "expired" else None,
        "cancelling_at": int(batch.cancel_at) if batch.cancel_at is not None else None,
        "cancelled_at": ended if batch.end == "cancelled" else None,
        "request_counts": {
            "total": len(batch.requests),
            "completed": completed,
            "failed": len(batch.requests) - completed if batch.end is not None else len(answered) - completed,
        },
        "metadata": batch.metadata,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    }


def openai_batch_routes() -> list[Route]:
    return [
        Route("/v1/files", _upload, methods=["POST"]),
        Route("/v1/files/{file_id}", _file, methods=["GET"]),
        Route("/v1/files/{file_id}/content", _content, methods=["GET"]),
        Route("/v1/batches", _create, methods=["POST"]),
        Route("/v1/batches", _list, methods=["GET"]),
        Route("/v1/batches/{batch_id}", _retrieve, methods=["GET"]),
        Route("/v1/batches/{batch_id}/cancel", _cancel, methods=["POST"]),
    ]
