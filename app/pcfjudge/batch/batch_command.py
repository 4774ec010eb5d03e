"""``pcfjudge batch``: judge a file of requests offline through a provider's batch API (about half price) or
``vllm run-batch``, filling the cache the service reads.

    pcfjudge batch submit  --input requests.jsonl --out DIR [--model M] [--via openai|anthropic|vllm] [--yes]
    pcfjudge batch status  --out DIR
    pcfjudge batch collect --out DIR [--wait] [--output vllm-output.jsonl]
    pcfjudge batch cancel  --out DIR [--submission 0001]
    pcfjudge batch run     --input requests.jsonl --out DIR [--model M] [--via …] [--yes]   (all of it, waiting)

Every command reads ``DIR/batch/`` first and can be interrupted and run again: nothing is submitted twice, nothing
collected is lost or recorded twice. Once every call is collected, ``DIR/judgments.jsonl`` holds each request's
response as the service would give it (computed by the ordinary judging path from the collected answers).
A jury as ``--model`` (a PCFJ_JURIES name or comma-separated models) batches each juror in its own directory
(``DIR/batch/<juror>``, each with its provider's batch API) and judges ``judgments.jsonl`` by the jury.
Exit status: 0 done, 1 some calls failed (``submit`` again resubmits just those), 2 usage error, 3 batches still
running, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pcfjudge.batch.job import BatchJob

DIR = "batch"
JUDGMENTS = "judgments.jsonl"
JURY = "jury.json"
"""A jury's batch directory records its jury here; each juror batches in ``DIR/<juror>/`` (``juror_out``)."""


def add_batch_command(sub: Any) -> None:
    """Register ``pcfjudge batch …`` under the ``pcfjudge`` parser."""
    batch = sub.add_parser(
        "batch",
        help="judge a requests file offline via a provider batch API (half price) or vllm run-batch",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    commands = batch.add_subparsers(dest="batch_command", metavar="STEP", required=True)
    for name, text in (
        ("submit", "plan every call of the requests, submit those not cached or already in a batch"),
        ("run", "submit, wait, collect, resubmit failures once, write judgments.jsonl"),
    ):
        step = commands.add_parser(name, help=text)
        step.add_argument("--input", type=Path, help="JSON lines of /judge/listwise or /judge/pairwise requests")
        step.add_argument("--model", help="provider:model for lines that name none (default: the configured one)")
        step.add_argument("--via", choices=["openai", "anthropic", "vllm"], help="default: the model's provider")
        step.add_argument("--yes", action="store_true", help="skip the cost confirmation")
        step.set_defaults(func=partial(_run, name))
    collect = commands.add_parser("collect", help="record the results of finished batches in the cache")
    collect.add_argument("--wait", action="store_true", help="wait until no batch is running")
    collect.add_argument("--output", type=Path, help="vllm: the output file vllm run-batch wrote (one submission)")
    collect.set_defaults(func=partial(_run, "collect"))
    status = commands.add_parser("status", help="show the submissions and what they cost")
    status.set_defaults(func=partial(_run, "status"))
    cancel = commands.add_parser("cancel", help="cancel running batches (their unprocessed requests are not paid)")
    cancel.add_argument("--submission", help="only this submission (e.g. 0002)")
    cancel.set_defaults(func=partial(_run, "cancel"))
    for step in (collect, status, cancel):
        step.add_argument("--input", type=Path, help=argparse.SUPPRESS)
        step.set_defaults(model=None, via=None, yes=False)
    for step in commands.choices.values():
        step.add_argument("--out", type=Path, required=True, help="output directory (batch state in DIR/batch/)")
        step.add_argument("--json", action="store_true", help="print the summary as JSON")


def _run(step: str, args: argparse.Namespace) -> int:
    from pcfjudge.batch.job import BatchError  # a CLI subcommand
    from pcfjudge.engine.window_runs import limit_blas

    limit_blas()  # the fits of a many-candidate item, as a served process runs them
    try:
        return asyncio.run(_main(step, args))
    except KeyboardInterrupt:
        print(f"\ninterrupted: the batch state in {args.out / DIR} is safe; rerun the command", file=sys.stderr)
        return 130
    except BatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


async def _main(step: str, args: argparse.Namespace) -> int:
    from pcfjudge.batch.inputs import InputError, judge_items, read_requests  # a CLI subcommand
    from pcfjudge.batch.job import BatchError, BatchJob, sdk_errors  # a CLI subcommand
    from pcfjudge.batch.store import STATE, BatchState  # a CLI subcommand
    from pcfjudge.services import Services  # a CLI subcommand
    from pcfjudge.settings import Settings  # a CLI subcommand

    directory = args.out / DIR
    services = Services.build(Settings())
    try:
        jury = _jury(services, args)
        # A jury's directory keeps its input in its jurors' states: the first juror's says which file it was.
        first = juror_out(args.out, jury.jurors[0].string) / DIR if jury is not None else directory
        saved = BatchState.load(first / STATE)
        source = args.input or (Path(saved.input) if saved and saved.input else None)
        if source is None:
            raise BatchError(f"no requests: pass --input (nothing was submitted from {args.out} yet)")
        if jury is not None:
            return await _jury_main(step, args, services, jury, source)
        job = BatchJob(services, directory, args.model, via=args.via, input_path=str(source.resolve()))
        try:
            items = read_requests(source, services, job.model.string)
        except (InputError, OSError) as exc:
            raise BatchError(str(exc)) from None
        if saved is not None and saved.input and Path(saved.input) != source.resolve():
            raise BatchError(f"{args.out} batches {saved.input}; use another --out for {source}")
        job.state.input = str(source.resolve())
        try:
            return await _step(step, job, args, partial(judge_items, items=items), partial(_judgments, job, items))
        except sdk_errors() as exc:
            raise job.provider_failure(exc) from None
        finally:
            job.close()
    finally:
        await services.aclose()


def _jury(services: Any, args: argparse.Namespace) -> Any:
    """The jury this directory batches (``--model`` naming one, or the one its first step recorded), else None."""
    from pcfjudge.backends.registry import ModelError  # a CLI subcommand
    from pcfjudge.batch.job import BatchError  # a CLI subcommand

    recorded = args.out / DIR / JURY
    spec = args.model or (json.loads(recorded.read_text(encoding="utf-8"))["model"] if recorded.is_file() else None)
    try:
        target = services.judge.resolve(spec)
    except ModelError as exc:
        raise BatchError(str(exc)) from None
    return target.jury


async def _jury_main(step: str, args: argparse.Namespace, services: Any, jury: Any, source: Path) -> int:
    """A jury's batch: each juror's own batch directory (``DIR/<juror>``), every step run for each, then every
    request judged by the jury from the jurors' collected answers (``judgments.jsonl``): a jury's runs are exactly
    its jurors' own calls."""
    from pcfjudge.batch.inputs import InputError, read_requests  # a CLI subcommand
    from pcfjudge.batch.job import BatchError  # a CLI subcommand

    top = args.out / DIR
    top.mkdir(parents=True, exist_ok=True)
    recorded = top / JURY
    spec = {"model": jury.name, "jurors": [m.string for m in jury.jurors]}
    if recorded.is_file() and json.loads(recorded.read_text(encoding="utf-8")) != spec:
        raise BatchError(f"{args.out} batches another jury ({recorded.read_text(encoding='utf-8')}); use another --out")
    recorded.write_text(json.dumps(spec), encoding="utf-8")
    codes = []
    for juror in jury.jurors:
        print(f"juror {juror.string}:", file=sys.stderr)
        juror_args = argparse.Namespace(
            **{**vars(args), "out": juror_out(args.out, juror.string), "model": juror.string}
        )
        codes.append(await _main(step, juror_args))
    if 3 in codes:
        return 3  # a juror's batches are still running: no jury judgment yet
    try:
        items = read_requests(source, services, jury.name, jury=jury.name)
    except (InputError, OSError) as exc:
        raise BatchError(str(exc)) from None
    failed = await _jury_judgments(args.out, services, jury, items)
    print(f"jury judgments: {args.out / JUDGMENTS} ({failed} request(s) not fully collected)")
    return 1 if failed or 1 in codes else 0


def juror_out(out: Path, model: str) -> Path:
    """A juror's own batch directory under a jury's."""
    return out / DIR / re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.")


async def _jury_judgments(out: Path, services: Any, jury: Any, items: list[Any]) -> int:
    """Every request judged by the jury, each juror answering from its own collected results (then the cache)."""
    from pcfjudge.batch.inputs import responses  # a CLI subcommand
    from pcfjudge.batch.probe import Probe  # a CLI subcommand
    from pcfjudge.batch.store import RESULTS, Results  # a CLI subcommand

    probes = {
        juror.string: Probe(
            Results.open(juror_out(out, juror.string) / DIR / RESULTS),
            services.cache,
            error="not_collected",
            detail="no batch result for this call",
        )
        for juror in jury.jurors
    }
    judge = services.judge.unguarded().using(runner=ByJuror(probes))
    lines = await responses(judge, items, services)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    await asyncio.to_thread((out / JUDGMENTS).write_text, text, encoding="utf-8")
    return sum(1 for line in lines if "error" in line)


class ByJuror:
    """A runner that sends each juror's calls to that juror's ``Probe``."""

    def __init__(self, probes: dict[str, Any]) -> None:
        self.probes = probes

    async def run(self, specs: Any, model: Any, *, watch: Any, cache_mode: Any = "use") -> Any:
        return await self.probes[model.string].run(specs, model, watch=watch, cache_mode=cache_mode)


async def _step(
    step: str,
    job: BatchJob,
    args: argparse.Namespace,
    drive: Callable[..., Awaitable[None]],
    judgments: Callable[[], Awaitable[int]],
) -> int:
    from pcfjudge.batch.job import BatchError  # a CLI subcommand
    from pcfjudge.batch.providers import VllmFiles  # a CLI subcommand

    if step == "run":
        await job.rounds(drive, job.gate(yes=args.yes))
    elif step == "submit":
        await job.refresh()
        missing = await job.plan(drive)
        made = await job.submit(job.to_submit(missing), job.gate(yes=args.yes))
        if not made:
            job.say("nothing to submit: every call is cached, collected or in a running batch")
    elif step == "cancel":
        for sub in await job.cancel(args.submission):
            job.say(f"cancelling {sub.local_id} ({sub.batch_id}): {sub.provider_status}")
    elif step == "collect":
        if args.output is not None:
            waiting = [s for s in job.state.submissions if s.in_flight]
            if job.via != "vllm" or len(waiting) != 1 or not isinstance(job.api, VllmFiles):
                raise BatchError("--output names the vllm run-batch output of the one submission awaiting it")
            waiting[0].output = str(args.output.resolve())
        await job.refresh()
        await job.collect(await job.plan(drive))
        await job.sync_cache()
        while args.wait and await job.refresh():
            await asyncio.sleep(job.services.settings.prompting.batch_poll_s)
            await job.collect(await job.plan(drive))
    else:
        await job.refresh()
    return await _report(job, args, judgments)


async def _report(job: BatchJob, args: argparse.Namespace, judgments: Callable[[], Awaitable[int]]) -> int:
    summary = job.summary()
    running = [s for s in job.state.submissions if s.in_flight]
    failed = await judgments() if not running else 0
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for s in summary["submissions"]:
            results = ", ".join(f"{n} {k}" for k, n in s["results"].items()) or "no results yet"
            print(f"{s['id']}  {s['status']:<9}  {s['requests']:>6} requests  {s['provider_status'] or ''}  {results}")
        print(job.describe_cost())
        if not running:
            print(f"judgments: {job.dir.parent / JUDGMENTS} ({failed} request(s) not fully collected)")
    if running:
        return 3
    return 1 if failed else 0


async def _judgments(job: BatchJob, items: list[Any]) -> int:
    """Write every request's response, judged by the ordinary path from the collected answers; how many failed."""
    from pcfjudge.batch.inputs import responses  # a CLI subcommand
    from pcfjudge.batch.probe import Probe  # a CLI subcommand

    probe = Probe(job.results, job.services.cache, error="not_collected", detail="no batch result for this call")
    lines = await responses(job.judge.using(runner=probe), items, job.services)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    await asyncio.to_thread((job.dir.parent / JUDGMENTS).write_text, text, encoding="utf-8")
    return sum(1 for line in lines if "error" in line)
