"""``pcfjudge judge``: judge answers from a terminal, in process (default) or against a running service (``--url``).

    pcfjudge judge "In which year did the Berlin Wall fall?" "1989." "1991." "Not sure."
    pcfjudge judge --file items.jsonl --json        # one {"question", "candidates"} per line; JSON lines out
    pcfjudge judge --url http://127.0.0.1:8000 ...  # through pcfjudge.AsyncClient (key: --api-key or PCFJ_API_KEY)

In process, the service's settings come from ``PCFJ_*`` as for ``pcfjudge serve`` (default: the simulated judge) and
every item is judged through ``services.judge``, exactly as ``POST /judge/listwise`` would. Verdicts of the simulated
judge are said to be so, once, under the first table (on stderr with ``--json``). Exit status: 0 when every item was
judged, 1 when any failed (each failure is reported with its line), 2 for a usage error, 141 when the reader closed
the pipe (``| head``), quietly: no traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from pcfjudge.cli.judge_table import render
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest, ListwiseResponse
from pcfjudge.errors import ApiError
from pcfjudge.types import MAX_K

JudgeFn = Callable[[ListwiseRequest], Awaitable[ListwiseResponse]]


def simulated_note(model: str) -> str:
    """What a reader of a simulated verdict must know: it is a seeded draw, and how to get a real judge."""
    told = " (the oracle is told which answer is truly best)" if model == "sim:oracle" else ""
    return (
        f"Note: {model} is the simulated judge: its verdicts are seeded draws{told}, not a reading of the answers. "
        "For a real judge set OPENAI_API_KEY or ANTHROPIC_API_KEY (or PCFJ_DEFAULT_MODEL), or pass --model "
        "provider:model."
    )


class ItemError(Exception):
    """One item could not be judged; the message says why (and how to fix it, when it is the input)."""


def add_judge_command(sub: Any) -> None:
    judge = sub.add_parser(
        "judge",
        help="judge answers to a question and print a table (in process, or --url a running service)",
        description="Judge candidate answers with PCFJudge (permutation consensus) and print a table.",
    )
    judge.add_argument("question", nargs="?", help="the question (omit with --file)")
    judge.add_argument("answers", nargs="*", help="two or more candidate answers")
    judge.add_argument("--file", type=Path, help='JSON lines, one {"question", "candidates"} per line')
    judge.add_argument("--url", help="a running service to call (default: judge in this process)")
    judge.add_argument("--api-key", help="API key for --url (default: PCFJ_API_KEY)")
    judge.add_argument(
        "--model",
        help="provider:model, e.g. sim:default or openai:gpt-5.4 (default: the server's); a jury: a PCFJ_JURIES name "
        "or models separated by commas",
    )
    judge.add_argument(
        "--k", type=_k, help=f"permutations per item, 1..{MAX_K}, or as /judge/listwise accepts (default: the server's)"
    )
    judge.add_argument("--seed", type=int, default=0, help="permutation schedule seed (default 0)")
    judge.add_argument(
        "--oracle-best",
        metavar="ID",
        help="with --model sim:oracle: the id of the truly best answer (0, 1, ...), which the simulated oracle is told",
    )
    judge.add_argument("--concurrency", type=int, default=4, help="items judged at once with --file (default 4)")
    judge.add_argument("--json", action="store_true", help="print the /judge/listwise JSON (one line per item)")
    judge.set_defaults(func=run_judge)


def _k(text: str) -> int | str:
    """An integer K, or a word such as ``auto`` (the request model says which are accepted)."""
    return int(text) if text.strip().lstrip("-").isdigit() else text


def _request(question: Any, candidates: Any, args: argparse.Namespace) -> ListwiseRequest:
    fields: dict[str, Any] = {"question": question, "candidates": candidates, "seed": args.seed, "include_runs": False}
    fields |= {name: getattr(args, name) for name in ("k", "model", "oracle_best") if getattr(args, name) is not None}
    try:
        return ListwiseRequest.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'item'}: {e['msg']}" for e in exc.errors()[:3])
        raise ItemError(problems) from None


Item = tuple[int | None, ListwiseRequest | ItemError]  # (line number in --file, the request or why there is none)


def read_items(args: argparse.Namespace) -> list[Item]:
    """The items to judge: the command line's, or each line of --file (a bad line is an error, not a stop)."""
    if args.file is None:
        return [(None, _request(args.question, list(args.answers), args))]
    items: list[Item] = []
    for number, line in enumerate(args.file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict) or set(data) - {"question", "candidates"}:
                raise ItemError('each line must be {"question": str, "candidates": [str | {"id", "text"}]}')
            items.append((number, _request(data.get("question"), data.get("candidates"), args)))
        except json.JSONDecodeError as exc:
            items.append((number, ItemError(f"not JSON ({exc.msg})")))
        except ItemError as exc:
            items.append((number, exc))
    return items


@asynccontextmanager
async def in_process() -> AsyncIterator[JudgeFn]:
    """Judge through ``services.judge`` on settings from the environment, as the service would."""
    from pcfjudge.doors.listwise.listwise_plan import build_task  # a CLI subcommand
    from pcfjudge.doors.listwise.listwise_response import to_response  # a CLI subcommand
    from pcfjudge.engine.failures import JudgingFailed  # a CLI subcommand
    from pcfjudge.services import Services  # a CLI subcommand
    from pcfjudge.settings import Settings  # a CLI subcommand

    services = Services.build(Settings())

    async def judge(body: ListwiseRequest) -> ListwiseResponse:
        try:
            result = await services.judge.listwise(build_task(body, services.settings, services.judge))
        except ApiError as exc:
            raise ItemError(exc.detail) from None
        except JudgingFailed as exc:
            raise ItemError(f"{exc.kind}: {exc.detail}") from None
        return to_response(result, uuid.uuid4().hex, body.include_runs)

    try:
        yield judge
    finally:
        await services.aclose()


@asynccontextmanager
async def remote(url: str, api_key: str | None) -> AsyncIterator[JudgeFn]:
    """Judge through ``POST /judge/listwise`` of a running service."""
    from pcfjudge.client import AsyncClient, ServiceError  # a CLI subcommand

    async with AsyncClient(url, api_key=api_key) as client:

        async def judge(body: ListwiseRequest) -> ListwiseResponse:
            try:
                payload = body.model_dump(mode="json", exclude_unset=True)
                return await client.post("/judge/listwise", payload, ListwiseResponse)
            except ServiceError as exc:
                raise ItemError(str(exc)) from None

        yield judge


class Progress:
    """``judged 3/40`` on stderr: redrawn in place on a terminal, one line per item otherwise."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total, self.done, self.stream, self.enabled = total, 0, stream, enabled

    def step(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.stream.isatty():
            width = 30
            filled = width * self.done // self.total
            end = "\n" if self.done == self.total else ""
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(f"\r[{bar}] judged {self.done}/{self.total}{end}")
        else:
            self.stream.write(f"judged {self.done}/{self.total}\n")
        self.stream.flush()


def show(
    line: int | None, item: ListwiseRequest | ItemError, outcome: ListwiseResponse | ItemError, json_out: bool
) -> None:
    """One item's outcome: a table (errors on stderr), or a JSON line (errors as {"line", "error"} lines)."""
    if isinstance(outcome, ItemError):
        if json_out:
            print(json.dumps({"line": line, "error": str(outcome)}), flush=True)
        else:
            print(f"error: {f'line {line}: ' if line else ''}{outcome}", file=sys.stderr, flush=True)
        return
    if json_out:
        print(outcome.model_dump_json(), flush=True)
        return
    assert isinstance(item, ListwiseRequest)  # a judged item was a valid request
    texts = {str(i): c if isinstance(c, str) else c.text for i, c in enumerate(item.candidates)}
    texts |= {c.id: c.text for c in item.candidates if not isinstance(c, str)}
    heading = f"── line {line} ──\n" if line else ""
    print(f"{heading}{render(outcome, item.question, texts)}\n", flush=True)


async def judge_all(items: list[Item], judge: JudgeFn, args: argparse.Namespace) -> int:
    progress = Progress(len(items), sys.stderr, enabled=args.file is not None)
    limit = asyncio.Semaphore(max(args.concurrency, 1))

    async def one(item: ListwiseRequest | ItemError) -> ListwiseResponse | ItemError:
        try:
            if isinstance(item, ItemError):
                return item
            async with limit:
                try:
                    return await judge(item)
                except ItemError as exc:
                    return exc
        finally:
            progress.step()

    tasks = [asyncio.ensure_future(one(item)) for _, item in items]
    failed = 0
    noted = False
    for (line, item), task in zip(items, tasks, strict=True):
        outcome = await task  # printed in input order, as soon as every earlier item is done
        failed += isinstance(outcome, ItemError)
        show(line, item, outcome, args.json)
        if not noted and isinstance(outcome, ListwiseResponse) and outcome.model.startswith("sim:"):
            print(simulated_note(outcome.model), file=sys.stderr if args.json else sys.stdout, flush=True)
            noted = True
    return 1 if failed else 0


def run_judge(args: argparse.Namespace) -> int:
    if (args.file is None) == (args.question is None) or (args.file is not None and args.answers):
        print(
            'usage: pcfjudge judge "question" "answer" "answer" ... | pcfjudge judge --file items.jsonl',
            file=sys.stderr,
        )
        return 2
    try:
        items = read_items(args)
    except (ItemError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    async def main() -> int:
        opened = remote(args.url, args.api_key) if args.url else in_process()
        async with opened as judge:
            return await judge_all(items, judge, args)

    try:
        return asyncio.run(main())
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as tools stopped by SIGPIPE do
        silence_stdout()
        return SIGPIPE_STATUS


SIGPIPE_STATUS = 128 + 13  # what a shell reports for a command ended by SIGPIPE


def silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush at exit cannot raise BrokenPipeError again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
