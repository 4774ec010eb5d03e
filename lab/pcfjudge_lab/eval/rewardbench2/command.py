"""``pcfjudge eval rewardbench2``: load items, collect (or resume) the logged runs, write the report."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pcfjudge.surface import PromptStyle, Settings, listwise_version, prompt_style

from pcfjudge_lab.eval.collection import collect
from pcfjudge_lab.eval.data import HubData, resolve
from pcfjudge_lab.eval.harness import check_manifest, fail, run_logged
from pcfjudge_lab.eval.jury_eval import (
    JurySpec,
    juror_args,
    juror_dir,
    jury_of,
    quorum,
    weighings,
    write_jury_report,
)
from pcfjudge_lab.eval.options import check_common, command_line, parse_k_option
from pcfjudge_lab.eval.progress import missing_eval_extra
from pcfjudge_lab.eval.rewardbench2.collect import Rb2Collector, Rb2Plan
from pcfjudge_lab.eval.rewardbench2.jury_report import build_jury_summary, render_jury_markdown
from pcfjudge_lab.eval.rewardbench2.loader import FactualityItem, load_rewardbench2, load_rewardbench2_hub
from pcfjudge_lab.eval.rewardbench2.report import Rb2Meta, build_summary, render_markdown, write_report
from pcfjudge_lab.eval.rewardbench2.synthetic import PREFIX, load_synthetic
from pcfjudge_lab.eval.runlog import LOG_NAME, RunLog

OPTIONS = (
    "data",
    "hub-repo",
    "model",
    "k",
    "k-min",
    "executions",
    "limit",
    "seed",
    "schedule-seed",
    "out",
    "server",
    "concurrency",
    "batch",
)


def _load(args: argparse.Namespace) -> list[FactualityItem]:
    if args.data.startswith(PREFIX):
        return load_synthetic(args.data, seed=args.seed, limit=args.limit)
    source = resolve("rewardbench2", args.data, args.hub_repo)
    if isinstance(source, HubData):
        return load_rewardbench2_hub(source, seed=args.seed, limit=args.limit)
    return load_rewardbench2(source, seed=args.seed, limit=args.limit)


@dataclass(frozen=True)
class _Run:
    """What one benchmark run asked for, shared by a jury's jurors."""

    items: list[FactualityItem]
    ks: tuple[int, ...]
    auto: bool
    style: PromptStyle


def run_rewardbench2(args: argparse.Namespace) -> int:
    if (problem := missing_eval_extra() or check_common(args)) is not None:
        return fail(problem)
    try:
        ks, auto = parse_k_option(args.k)
        if args.executions < 1:
            raise ValueError("--executions must be at least 1")
        if auto and not 1 <= args.k_min <= max(ks):
            raise ValueError(f"--k-min must be between 1 and the largest K ({max(ks)})")
        items = _load(args)
        settings = Settings()
        spec = jury_of(settings, args.model)
    except (OSError, ValueError, RuntimeError) as exc:
        return fail(str(exc))
    if not items:
        return fail(f"no Factuality items in {args.data}")
    run = _Run(items, ks, auto, prompt_style(settings.prompting, None))
    if spec is not None:
        return _run_jury(args, settings, spec, run)
    done = _evaluate(args, settings, run)
    if isinstance(done, int):
        return done
    summary, _, paths = done
    print(render_markdown(summary).split("## Table 2")[0].rstrip())
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 0


def _manifest(args: argparse.Namespace) -> dict[str, Any]:
    return {"benchmark": "rewardbench2", "model": args.model, "seed": args.seed, "schedule_seed": args.schedule_seed}


def _meta(args: argparse.Namespace, run: _Run) -> Rb2Meta:
    return Rb2Meta(
        args.model,
        args.data,
        run.ks,
        args.executions,
        args.seed,
        args.schedule_seed,
        command_line(["eval", "rewardbench2"], args, OPTIONS),
        args.k_min if run.auto else None,
        listwise_version(None, run.style),
    )


def _evaluate(
    args: argparse.Namespace, settings: Settings, run: _Run
) -> tuple[dict[str, Any], list[dict[str, Any]], list[Path]] | int:
    """One model's evaluation in ``args.out``: collect (or resume), write its report; its summary, log lines and
    the paths written, or the exit status when it cannot finish."""
    out = Path(args.out)
    if (clash := check_manifest(out, _manifest(args))) is not None:
        return fail(clash)
    plan = Rb2Plan(args.model, max(run.ks), args.executions, args.schedule_seed, run.style)
    log = RunLog.open(out / LOG_NAME)
    work = partial(collect, settings, args, log, Rb2Collector(plan), run.items, desc="rewardbench2")
    if (code := run_logged(log, work)) is not None:
        return code
    try:
        summary = build_summary(log.lines, _meta(args, run), [item.item_id for item in run.items])
    except ValueError as exc:
        return fail(f"{exc}; rerun the same command to finish the runs", 1)
    return summary, log.lines, write_report(out, summary)


def _run_jury(args: argparse.Namespace, settings: Settings, spec: JurySpec, run: _Run) -> int:
    """Each juror alone in its own directory, then the jury's rows from their logs (``jury_report``)."""
    out = Path(args.out)
    if (clash := check_manifest(out, _manifest(args) | {"jurors": list(spec.jurors)})) is not None:
        return fail(clash)
    logs = []
    for juror in spec.jurors:
        print(f"juror {juror}: {juror_dir(out, juror)}", file=sys.stderr)
        done = _evaluate(juror_args(args, juror), settings, run)
        if isinstance(done, int):
            return done
        logs.append(done[1])
    try:
        found = weighings(settings, spec, listwise_version(None, run.style))
        needed = quorum(settings, len(spec.jurors))
        item_ids = [item.item_id for item in run.items]
        summary = build_jury_summary(spec, logs, _meta(args, run), item_ids, found, needed, out)
    except ValueError as exc:
        return fail(f"{exc}; rerun the same command to finish the runs", 1)
    markdown = render_jury_markdown(summary, spec, found, out)
    paths = write_jury_report(out, summary, markdown)
    print(markdown.split("## Table 2")[0].rstrip())
    jurors = ", ".join(str(juror_dir(out, m)) for m in spec.jurors)
    print("\nwrote " + ", ".join(str(p) for p in paths) + f"; each juror's own report in {jurors}")
    return 0
