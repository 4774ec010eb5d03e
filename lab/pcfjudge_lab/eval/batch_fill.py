"""``pcfjudge eval … --batch``: make the benchmark's calls through a batch first, then run the ordinary evaluation.

The benchmark's own collector drives the probe (``Collector.judge`` through a ``Session``, as the live run does,
so the calls are exactly those the live run would make, minus those already in the run log), the calls go out
in batches (``BatchJob.rounds``: cost estimate at the batch price and confirmation, submit, wait, collect,
resubmit failures once), and the evaluation then runs unchanged with a judge whose runner answers from the batch
results and the cache (``Probe``): its judgments are the collected answers, and a call no batch answered is
logged as failed (``not_collected``), never made live at full price. The batch's spend is printed and written to
``OUT/batch/summary.json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pcfjudge.surface import BatchError, BatchJob, Judge, Probe, Services, sdk_errors

from pcfjudge_lab.eval.harness import Collector, EvalError, Session, judge_all
from pcfjudge_lab.eval.progress import Progress
from pcfjudge_lab.eval.runlog import RunLog

T = TypeVar("T")
SUMMARY = "summary.json"


class _Unlogged(RunLog):
    """The run log as the probe sees it: what is logged is replayed, nothing new is written."""

    def append(self, line: dict[str, Any]) -> None:
        return None


class _Silent(Progress):
    def write(self, message: str) -> None:
        return None


async def _drive(collector: Collector[T], items: Sequence[T], log: RunLog, concurrency: int, judge: Judge) -> None:
    """Run the benchmark's collector once with ``judge`` (a probing one) over every item."""
    unlogged = _Unlogged(log.path, done=set(log.done), replay=log.replay)
    session = Session(unlogged, _Silent(0, "batch plan", None, enabled=False), judge, judge=judge)
    await judge_all(items, concurrency, partial(collector.judge, session))


async def fill_from_batches(
    services: Services, args: argparse.Namespace, collector: Collector[T], items: Sequence[T], log: RunLog
) -> Judge:
    """Batch every call the evaluation still needs; the judge for the evaluation itself (see the module docstring)."""
    directory = log.path.parent / "batch"
    try:
        job = BatchJob(services, directory, args.model, via="vllm" if args.batch == "vllm" else None)
    except BatchError as exc:
        raise EvalError(str(exc)) from None
    try:
        missing = await job.rounds(partial(_drive, collector, items, log, args.concurrency), job.gate(yes=args.yes))
        summary = job.summary()
        _write(directory / SUMMARY, summary)
        job.say(job.describe_cost())
        if missing:
            failed = sorted({err for key, err in job.results.errors.items() if key in missing})[:3]
            job.say(
                f"{len(missing)} call(s) have no batch answer (e.g. {'; '.join(failed) or 'not collected'}); "
                "they are logged as failed: rerun the same command to resubmit them"
            )
    except BatchError as exc:
        raise EvalError(str(exc)) from None
    except sdk_errors() as exc:
        raise EvalError(str(job.provider_failure(exc))) from None
    finally:
        job.close()
    detail = "no batch answered this call; rerun with --batch to resubmit it"
    return services.judge.using(runner=Probe(job.results, services.cache, error="not_collected", detail=detail))


def _write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
