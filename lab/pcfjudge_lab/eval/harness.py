"""What every ``pcfjudge eval`` benchmark command shares: the collection (``collect``: one concurrency loop, the
progress bar, the run log, in process or through ``--server``), the output-directory manifest and the error exits.

A benchmark says only what to do for one item (a ``Collector``); in process it judges through the service's
``Judge``, given a ``ReplayRunner`` by ``Session.judge_logged``, and never assembles runner, decoding parameters,
deadline or quorum itself.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx
from pcfjudge.surface import (
    CallOutcome,
    DecodingParams,
    JudgingFailed,
    Jury,
    ListwiseTask,
    PairwiseTask,
    PassName,
    PlannedPass,
    ResolvedModel,
    RunPlan,
    Settings,
    Watch,
    plan_passes,
    plan_runs,
)

from pcfjudge_lab.engine_faults import engine_gone, unreachable
from pcfjudge_lab.eval.progress import Estimate, Progress
from pcfjudge_lab.eval.replay import ReplayRunner
from pcfjudge_lab.eval.report_fmt import is_simulation
from pcfjudge_lab.eval.runlog import LOG_NAME, PlannedCall, RunLog

if TYPE_CHECKING:
    from pcfjudge.surface import Judge

MANIFEST = "manifest.json"
BATCH = Watch(priority="background")
"""How an eval's judgments run: their calls take the backend slots direct requests leave (``backends.slots``)."""
ORACLE_MODEL = "sim:oracle"  # the simulated judge that is told the right answer (both benchmarks pass it)

T = TypeVar("T")
ItemT_contra = TypeVar("ItemT_contra", contravariant=True)
LineOf = Callable[[PlannedCall, CallOutcome], dict[str, Any]]  # the log line of a call's in-process outcome


class EvalError(Exception):
    """The evaluation cannot go on (bad settings, a refused request); the message says how to fix it."""


class Planner(Protocol):
    """The judge's plan of a task: the ``Judge`` itself in process, ``ServicePlanner`` through ``--server``."""

    def plan_listwise(self, task: ListwiseTask) -> RunPlan: ...

    def plan_pairwise(self, task: PairwiseTask) -> dict[PassName, PlannedPass]: ...


def _named(model: ResolvedModel | Jury | str | None) -> str:
    return model.string if isinstance(model, ResolvedModel | Jury) else model or ""


class ServicePlanner:
    """The plan of a task a deployed service judges (``--server``): its runs' executions, indices, orders, samples.

    Those depend on the task alone, so they are the service's; the cache keys also depend on the service's
    decoding parameters, which the client does not know, so these keys are placeholders and never used (nothing
    is replayed locally through ``--server``).
    """

    def plan_listwise(self, task: ListwiseTask) -> RunPlan:
        return plan_runs(task, _named(task.model), DecodingParams())

    def plan_pairwise(self, task: PairwiseTask) -> dict[PassName, PlannedPass]:
        return plan_passes(task, _named(task.model), DecodingParams())


@dataclass
class Session:
    """One collection run: the run log, the progress bar, the plans, and the judge (in process) or the client of
    the deployed service (``--server``)."""

    log: RunLog
    progress: Progress
    planner: Planner
    judge: Judge | None = None
    client: httpx.AsyncClient | None = None
    timeout_s: float | None = None  # per judging request (``--timeout``); None: the judge's own

    def record(self, call: PlannedCall, line: dict[str, Any]) -> None:
        """Log ``line`` (flushed now) and advance the bar, unless ``call`` already has a successful line."""
        if call.key not in self.log.done:
            self.log.append(line)
            self.progress.advance(line, unplanned=call.optional)

    async def judge_logged(
        self, task: ListwiseTask | PairwiseTask, calls: Sequence[PlannedCall], line: LineOf, what: str
    ) -> int:
        """Judge ``task`` in process: its planned ``calls`` are answered from the log when logged, and each new
        outcome is logged as ``line(call, outcome)`` the moment it ends. Returns 1 when the judgment failed (below
        quorum; said on the bar as ``what``), else 0."""
        if self.judge is None:
            raise RuntimeError("judge_logged needs the in-process judge (this session judges through --server)")
        runner = ReplayRunner(self.judge.runner, calls, self.log.replay, lambda c, o: self.record(c, line(c, o)))
        judge = self.judge.using(runner=runner, timeout_s=self.timeout_s).unguarded()  # the operator's own run
        try:
            # background: an eval takes the capacity direct requests leave (docs/operations/fleets.md)
            await (judge.listwise(task, BATCH) if isinstance(task, ListwiseTask) else judge.pairwise(task, BATCH))
        except JudgingFailed as exc:
            errors = [r.error or "" for r in exc.runs] or [exc.detail]
            if all(unreachable(error) for error in errors):  # the engine went away: every further item would fail
                raise EvalError(engine_gone(None, exc.detail) + "; rerun the same command to resume") from None
            self.progress.write(f"{what}: {exc.detail} (rerun the same command to retry)")
            return 1
        return 0

    async def post(self, path: str, body: Mapping[str, Any], what: str) -> dict[str, Any] | None:
        """POST one judging request to the deployed service (``post_json``); None when it failed."""
        if self.client is None:
            raise RuntimeError("post needs the service client (this session judges in process)")
        return await post_json(self.client, path, body, what, self.progress)


class Collector(Protocol[ItemT_contra]):
    """What a benchmark says about its items; ``collect`` does the rest (concurrency, progress, run log).

    ``judge`` and ``post`` handle one item (in process, or through the service) and return its failed requests.
    """

    def estimate(self, items: Sequence[ItemT_contra], planner: Planner, log: RunLog, max_output: int) -> Estimate: ...

    def missing(self, items: Sequence[ItemT_contra], planner: Planner, log: RunLog) -> int: ...

    async def judge(self, session: Session, item: ItemT_contra) -> int: ...

    async def post(self, session: Session, item: ItemT_contra) -> int: ...


def check_manifest(out_dir: Path, fields: Mapping[str, Any]) -> str | None:
    """Refuse to mix runs of different settings in one log; write the manifest on first use.

    Returns an error message (and changes nothing) when ``out_dir`` has runs made with other settings; a directory
    without runs (e.g. a refused paid run) takes the new settings.
    """
    path = out_dir / MANIFEST
    log = out_dir / LOG_NAME
    if path.exists() and log.exists() and log.stat().st_size > 0:
        saved = json.loads(path.read_text(encoding="utf-8"))
        clashes = [
            f"{key}={saved.get(key)!r} (now {value!r})" for key, value in fields.items() if saved.get(key) != value
        ]
        if clashes:
            return (
                f"{out_dir} holds runs made with other settings: {', '.join(clashes)}. "
                "Use a new --out directory, or the same settings to resume."
            )
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(fields), indent=2) + "\n", encoding="utf-8")
    return None


def price_for(settings: Settings, model: str) -> tuple[float, float] | None:
    """USD per million (input, output) tokens: the configured price, zero for the simulated judge, else None."""
    return (0.0, 0.0) if is_simulation(model) else settings.prompting.prices.get(model)


async def judge_all(items: Iterable[T], concurrency: int, one: Callable[[T], Awaitable[int]]) -> int:
    """Run ``one`` on every item, at most ``concurrency`` at a time; returns the sum of the failures they count."""
    limit = asyncio.Semaphore(concurrency)

    async def bounded(item: T) -> int:
        async with limit:
            return await one(item)

    return sum(await asyncio.gather(*(bounded(item) for item in items)))


def fail(message: str, code: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def run_logged(log: RunLog, work: Callable[[], Coroutine[Any, Any, int]]) -> int | None:
    """Run the collection; on Ctrl-C say the log is safe and return 130, on EvalError print it and return 2.

    Returns None when the collection finished (the caller then reports), after warning about failed requests.
    """
    if log.skipped:
        print(f"note: skipped {log.skipped} torn/invalid line(s) in {log.path}", file=sys.stderr)
    try:
        failed = asyncio.run(work())
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: {len(log.lines)} runs are safe in {log.path}; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
    except EvalError as exc:
        return fail(str(exc))
    finally:
        log.close()
    if failed:
        print(f"warning: {failed} request(s) failed; rerun the same command to retry them", file=sys.stderr)
    return None


async def post_json(
    client: httpx.AsyncClient, path: str, body: Mapping[str, Any], what: str, progress: Progress
) -> dict[str, Any] | None:
    """POST to a deployed service: the JSON answer, None after 3 failed tries (5xx, network), EvalError on a 4xx."""
    for attempt in range(3):
        try:
            response = await client.post(path, json=body)
        except httpx.HTTPError as exc:
            progress.write(f"{what}: {type(exc).__name__}: {exc}")
            await asyncio.sleep(2.0 * (attempt + 1))
            continue
        if response.status_code == 200:
            data = response.json()
            return data if isinstance(data, dict) else {}
        detail = _detail(response)
        if response.status_code < 500:
            raise EvalError(f"the service refused the request ({response.status_code}): {detail}")
        progress.write(f"{what}: the service answered {response.status_code}: {detail}")
        retry_after = response.headers.get("retry-after")
        await asyncio.sleep(min(30.0, float(retry_after)) if retry_after and retry_after.isdigit() else 2.0)
    return None


def _detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    return str(data.get("detail", data)) if isinstance(data, dict) else str(data)[:300]
