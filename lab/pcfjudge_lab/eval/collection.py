"""``collect``: one benchmark's collection run, in process or through ``--server`` (or through provider batches with
``--batch``), on the harness's sessions. Apart from ``harness`` so that ``batch_fill``, which drives the harness's
collectors itself, is imported by this module alone (no cycle between the two)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import partial
from typing import TypeVar

import httpx
from pcfjudge.surface import Settings

from pcfjudge_lab.eval.harness import (
    Collector,
    EvalError,
    Planner,
    ServicePlanner,
    Session,
    judge_all,
    price_for,
)
from pcfjudge_lab.eval.progress import Progress, paid_run_gate
from pcfjudge_lab.eval.runlog import RunLog

T = TypeVar("T")


async def collect(
    settings: Settings,
    args: argparse.Namespace,
    log: RunLog,
    collector: Collector[T],
    items: Sequence[T],
    *,
    desc: str,
) -> int:
    """Resolve the model, gate a paid run, then judge every item in process or through ``--server`` with a
    progress bar, ``--concurrency`` items at a time.

    Returns the number of requests that failed; raises EvalError when the run cannot start.
    """
    from pcfjudge.surface import ModelError, Services

    services = None if args.server else Services.build(settings)
    try:
        planner: Planner = ServicePlanner() if services is None else services.judge
        if services is not None:
            try:
                services.judge.model(args.model)
            except ModelError as exc:
                raise EvalError(str(exc)) from None
        price = price_for(settings, args.model)
        judge = services.judge if services is not None else None
        if getattr(args, "batch", None) is not None:
            if services is None:
                raise EvalError("--batch judges in process (it fills this machine's cache): drop --server")
            from pcfjudge_lab.eval.batch_fill import (
                fill_from_batches,  # estimate at the batch price, submit, wait, collect
            )

            judge = await fill_from_batches(services, args, collector, items, log)  # answers from the batches only
        else:
            estimate = collector.estimate(items, planner, log, settings.providers.max_output_tokens)
            if (gate := paid_run_gate(args.model, estimate, price, yes=args.yes)) is not None:
                raise EvalError(gate)
        progress = Progress(collector.missing(items, planner, log), desc, price)
        try:
            if services is not None:
                session = Session(log, progress, planner, judge=judge, timeout_s=args.timeout)
                return await judge_all(items, args.concurrency, partial(collector.judge, session))
            async with httpx.AsyncClient(base_url=args.server, timeout=args.timeout + 30) as client:
                session = Session(log, progress, planner, client=client)
                return await judge_all(items, args.concurrency, partial(collector.post, session))
        finally:
            progress.close()
    finally:
        if services is not None:
            await services.aclose()
