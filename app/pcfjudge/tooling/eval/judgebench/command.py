"""``pcfjudge eval judgebench``: load pairs, collect (or resume) the logged APOCJudge passes, write the report."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from pcfjudge.engine.judge import prompt_style
from pcfjudge.judging.pairwise_prompts import pairwise_version
from pcfjudge.settings import Settings
from pcfjudge.tooling.eval.collection import collect
from pcfjudge.tooling.eval.data import HubData, resolve
from pcfjudge.tooling.eval.harness import check_manifest, fail, run_logged
from pcfjudge.tooling.eval.judgebench.collect import JbCollector
from pcfjudge.tooling.eval.judgebench.loader import JudgeBenchPair, load_judgebench, load_judgebench_hub
from pcfjudge.tooling.eval.judgebench.report import JbMeta, build_summary, render_markdown, write_report
from pcfjudge.tooling.eval.options import check_common, command_line
from pcfjudge.tooling.eval.progress import missing_eval_extra
from pcfjudge.tooling.eval.runlog import LOG_NAME, RunLog

OPTIONS = ("data", "hub-repo", "model", "limit", "out", "server", "concurrency", "batch")


def _load(args: argparse.Namespace) -> list[JudgeBenchPair]:
    source = resolve("judgebench", args.data, args.hub_repo)
    if isinstance(source, HubData):
        return load_judgebench_hub(source, limit=args.limit)
    return load_judgebench(source, limit=args.limit)


def run_judgebench(args: argparse.Namespace) -> int:
    if (problem := missing_eval_extra() or check_common(args)) is not None:
        return fail(problem)
    try:
        pairs = _load(args)
    except (OSError, ValueError, RuntimeError) as exc:
        return fail(str(exc))
    if not pairs:
        return fail(f"no pairs in {args.data}")
    out = Path(args.out)
    if (clash := check_manifest(out, {"benchmark": "judgebench", "model": args.model})) is not None:
        return fail(clash)
    settings = Settings()
    style = prompt_style(settings, None, "pairwise")
    log = RunLog.open(out / LOG_NAME)
    work = partial(collect, settings, args, log, JbCollector(args.model, style), pairs, desc="judgebench")
    if (code := run_logged(log, work)) is not None:
        return code
    versions = f"{pairwise_version(style)}, {pairwise_version(style, keyed=True)}"
    meta = JbMeta(args.model, args.data, command_line(["eval", "judgebench"], args, OPTIONS), versions)
    try:
        summary = build_summary(out, log.lines, meta, [pair.pair_id for pair in pairs])
    except ValueError as exc:
        return fail(f"{exc}; rerun the same command to finish the runs", 1)
    paths = write_report(out, summary)
    print(render_markdown(summary).split("## Per source")[0].rstrip())
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 0
