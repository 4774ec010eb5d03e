"""``pcfjudge eval rewardbench2``: load items, collect (or resume) the logged runs, write the report."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from pcfjudge.engine.judge import prompt_style
from pcfjudge.judging.prompts import listwise_version
from pcfjudge.settings import Settings
from pcfjudge.tooling.eval.collection import collect
from pcfjudge.tooling.eval.data import HubData, resolve
from pcfjudge.tooling.eval.harness import check_manifest, fail, run_logged
from pcfjudge.tooling.eval.options import check_common, command_line, parse_k_option
from pcfjudge.tooling.eval.progress import missing_eval_extra
from pcfjudge.tooling.eval.rewardbench2.collect import Rb2Collector, Rb2Plan
from pcfjudge.tooling.eval.rewardbench2.loader import FactualityItem, load_rewardbench2, load_rewardbench2_hub
from pcfjudge.tooling.eval.rewardbench2.report import Rb2Meta, build_summary, render_markdown, write_report
from pcfjudge.tooling.eval.rewardbench2.synthetic import PREFIX, load_synthetic
from pcfjudge.tooling.eval.runlog import LOG_NAME, RunLog

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
    except (OSError, ValueError, RuntimeError) as exc:
        return fail(str(exc))
    if not items:
        return fail(f"no Factuality items in {args.data}")
    out = Path(args.out)
    manifest = {
        "benchmark": "rewardbench2",
        "model": args.model,
        "seed": args.seed,
        "schedule_seed": args.schedule_seed,
    }
    if (clash := check_manifest(out, manifest)) is not None:
        return fail(clash)
    settings = Settings()
    style = prompt_style(settings, None, "listwise")
    collector = Rb2Collector(Rb2Plan(args.model, max(ks), args.executions, args.schedule_seed, style))
    log = RunLog.open(out / LOG_NAME)
    work = partial(collect, settings, args, log, collector, items, desc="rewardbench2")
    if (code := run_logged(log, work)) is not None:
        return code
    command = command_line(["eval", "rewardbench2"], args, OPTIONS)
    auto_k_min = args.k_min if auto else None
    meta = Rb2Meta(
        args.model,
        args.data,
        ks,
        args.executions,
        args.seed,
        args.schedule_seed,
        command,
        auto_k_min,
        listwise_version(None, style),
    )
    try:
        summary = build_summary(log.lines, meta, [item.item_id for item in items])
    except ValueError as exc:
        return fail(f"{exc}; rerun the same command to finish the runs", 1)
    paths = write_report(out, summary)
    print(render_markdown(summary).split("## Table 2")[0].rstrip())
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 0
