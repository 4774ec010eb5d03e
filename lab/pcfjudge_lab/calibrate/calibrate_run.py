"""``pcfjudge calibrate MODEL…`` at work: measure each model on the pinned slice, compare with its baseline, store, print.

Exit codes: 0 done (drift or not), 3 drift with ``--fail-on-drift``, 2 a bad argument, model or setting, 1 when a
model failed on every item or the store could not be read or written (nothing of that model is stored then).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from pcfjudge.surface import (
    Judge,
    ModelError,
    Reliability,
    ReliabilityStore,
    Services,
    Settings,
    StoreError,
    compared,
    new_nonce,
    open_store,
    render_listwise,
)

from pcfjudge_lab.calibrate import measure
from pcfjudge_lab.calibrate.pinned import PinnedSlice, pinned_slice
from pcfjudge_lab.calibrate.table import render
from pcfjudge_lab.eval.harness import fail, price_for
from pcfjudge_lab.eval.progress import Estimate, paid_run_gate

DRIFT_EXIT = 3  # --fail-on-drift and a model drifted


class CalibrationError(Exception):
    """The calibration cannot go on; ``code`` is the exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def run_calibrate(args: argparse.Namespace) -> int:
    try:
        if args.concurrency < 1 or args.timeout <= 0:
            raise ValueError("--concurrency must be at least 1 and --timeout positive")
        pinned = pinned_slice(args.items, args.k)
        settings = Settings()
    except ValueError as exc:  # pydantic's ValidationError is a ValueError: a bad PCFJ_* setting
        return fail(str(exc))
    try:
        records = asyncio.run(_calibrate(settings, args, pinned))
    except CalibrationError as exc:
        return fail(str(exc), exc.code)
    version = records[0].prompt_version
    print(render(pinned, version, records, settings.calibration.drift_alpha, settings.calibration.drift_min_points))
    drifted = [r.model for r in records if r.drift_state == "drift"]
    return DRIFT_EXIT if drifted and args.fail_on_drift else 0


async def _calibrate(settings: Settings, args: argparse.Namespace, pinned: PinnedSlice) -> list[Reliability]:
    models = list(dict.fromkeys(args.models or [settings.resolved_default_model()]))
    services = Services.build(settings)
    store = open_store(settings)
    try:
        judge = services.judge.unguarded().using(timeout_s=args.timeout)
        for model in models:
            try:
                judge.model(model)
            except ModelError as exc:
                said = str(exc) if repr(model) in str(exc) else f"model {model!r}: {exc}"
                raise CalibrationError(said, 2) from None
            _gate(settings, judge, model, pinned, args.yes)
        style = judge.style(None)
        records = []
        for model in models:
            print(f"calibrating {model} on {len(pinned.items)} items, K={pinned.k}…", file=sys.stderr)
            outcomes = await measure.judge_items(judge, model, pinned, style, args.concurrency)
            failed = [o for o in outcomes if o.error is not None]
            if len(failed) == len(outcomes):
                raise CalibrationError(f"{model} failed on every item ({failed[0].error}); nothing stored", 1)
            if failed:
                print(f"warning: {model}: {len(failed)} item(s) failed and count as wrong", file=sys.stderr)
            records.append(await _store(store, measure.record(model, pinned, style, outcomes), settings, args))
        print(f"stored in {store.where}", file=sys.stderr)
        return records
    finally:
        await store.aclose()
        await services.aclose()


def _gate(settings: Settings, judge: Judge, model: str, pinned: PinnedSlice, yes: bool) -> None:
    """Before calling a paid model: the estimate, and a confirmation unless ``--yes``."""
    style, nonce = judge.style(None), new_nonce()
    calls = tokens = 0
    for item in pinned.items:
        runs = len(judge.plan_listwise(measure.task_for(item, model, pinned.k, style)).runs)
        prompt = render_listwise(item.question, list(item.texts), nonce, style=style)
        calls += runs
        tokens += runs * (len(prompt.system) + len(prompt.user)) // 4
    estimate = Estimate(calls, tokens, calls * settings.providers.max_output_tokens)
    if (stop := paid_run_gate(model, estimate, price_for(settings, model), yes=yes)) is not None:
        raise CalibrationError(stop, 2)


async def _store(
    store: ReliabilityStore, record: Reliability, settings: Settings, args: argparse.Namespace
) -> Reliability:
    """Compare with the slice's baseline (none yet, or ``--rebaseline``: this record becomes it) and store."""
    try:
        found = await store.baseline(record.model, record.prompt_version, record.slice)
        if found is None or args.rebaseline:
            await store.save(record.as_dict(), baseline=True)
            return record
        baseline = Reliability.from_dict(found)
        now = compared(
            baseline, record, alpha=settings.calibration.drift_alpha, min_points=settings.calibration.drift_min_points
        )
        await store.save(now.as_dict(), baseline=False)
        return now
    except StoreError as exc:
        raise CalibrationError(str(exc), 1) from None
    except (TypeError, ValueError, KeyError) as exc:
        raise CalibrationError(
            f"the stored baseline of {record.model} is malformed ({exc}); use --rebaseline", 1
        ) from None
