"""``pcfjudge batch``'s requests file: one ``POST /judge/listwise`` or ``POST /judge/pairwise`` body per line
(a line with ``response_a`` is pairwise), validated and turned into tasks by the API's own code, so a batch judges
exactly what the service would; after collection, the same requests judged from the cache give the responses the
service would return (``judgments.jsonl``).

A batch judges one model, or one jury given as ``--model`` (``batch_command`` batches each juror in its own
directory); a line naming another jury is refused, naming the alternatives (``jury_refusal``).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from pcfjudge.backends.registry import Jury
from pcfjudge.doors.listwise.listwise_plan import build_task as listwise_task
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest
from pcfjudge.doors.listwise.listwise_response import to_response as listwise_response
from pcfjudge.doors.pairwise.pairwise_plan import build_task as pairwise_task
from pcfjudge.doors.pairwise.pairwise_protocol import PairwiseRequest
from pcfjudge.doors.pairwise.pairwise_response import to_response as pairwise_response
from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.listwise_runs import ListwiseTask
from pcfjudge.engine.pairwise_passes import PairwiseTask
from pcfjudge.errors import ApiError
from pcfjudge.services import Services


class InputError(ValueError):
    """A line of the requests file is not a request the service would take; the message names line and field."""


@dataclass(frozen=True, slots=True)
class Item:
    line: int
    kind: Literal["listwise", "pairwise"]
    body: ListwiseRequest | PairwiseRequest
    task: ListwiseTask | PairwiseTask


def jury_refusal(jury: Jury) -> str:
    """Why this batch does not take that jury, and what to do instead."""
    jurors = [m.string for m in jury.jurors]
    return (
        f"{jury.name} is a jury ({', '.join(jurors)}) and a batch directory judges one model or the one jury given "
        f"as --model: batch this jury's lines in a directory of their own with --model {jury.name} (each juror is "
        "batched in its own subdirectory), or judge the jury live"
    )


def read_requests(path: Path, services: Services, model: str | None, jury: str | None = None) -> list[Item]:
    """Every request of ``path`` (``model`` fills in a line's missing ``model``); InputError at the first bad line."""
    items: list[Item] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise InputError(f"{where}: each line must be a /judge/listwise or /judge/pairwise request object")
        if model is not None:
            data.setdefault("model", model)
        try:
            if "response_a" in data:
                pair = PairwiseRequest.model_validate(data)
                item = Item(number, "pairwise", pair, pairwise_task(pair, services.settings, services.judge))
            else:
                body = ListwiseRequest.model_validate(data)
                item = Item(number, "listwise", body, listwise_task(body, services.settings, services.judge))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "request"
            raise InputError(f"{where}: {field}: {first['msg']}") from None
        except ApiError as exc:
            raise InputError(f"{where}: {exc.detail}") from None
        if isinstance(item.task.model, Jury) and item.task.model.name != jury:
            raise InputError(f"{where}: model: {jury_refusal(item.task.model)}")
        items.append(item)
    return items


async def judge_items(judge: Judge, items: list[Item]) -> None:
    """Judge every item once (a probing judge records their calls); a judgment below quorum is expected."""
    for item in items:
        try:
            if isinstance(item.task, ListwiseTask):
                await judge.listwise(item.task)
            else:
                await judge.pairwise(item.task)
        except JudgingFailed:
            pass


async def responses(judge: Judge, items: list[Item], services: Services) -> list[dict[str, Any]]:
    """Each item judged by ``judge`` (one answering from the batch results) as the service would answer it: the
    response JSON, or ``{"line", "error", "detail"}`` when too few of its calls were collected."""
    out: list[dict[str, Any]] = []
    for item in items:
        request_id = uuid.uuid4().hex
        try:
            if isinstance(item.task, ListwiseTask) and isinstance(item.body, ListwiseRequest):
                result = await judge.listwise(item.task)
                response = listwise_response(result, request_id, item.body.include_runs).model_dump(mode="json")
            elif isinstance(item.task, PairwiseTask) and isinstance(item.body, PairwiseRequest):
                pair = await judge.pairwise(item.task)
                response = pairwise_response(pair, request_id, item.body.include_runs).model_dump(mode="json")
            else:  # read_requests pairs each body with its own kind of task
                raise AssertionError("request and task kinds differ")
        except JudgingFailed as exc:
            out.append({"line": item.line, "error": exc.kind, "detail": exc.detail})
            continue
        out.append({"line": item.line, **response})
    return out
